// Software replay (seed 000 §4.5): a machine check (data the hardware flagged
// as lost) restarts the run from the start. SystemC elaborates once per
// process and cannot rewind, so every attempt runs in a fresh child process;
// the parent keeps the history of machine checks, which the next attempt reports.
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <sstream>
#include <string>

#include "runtime/driver.h"

namespace fabricvp::runtime {

int run(const systems::RunOptions& opt) {
  if (opt.max_replays == 0) return run_attempt(opt);
  // Software replay (seed 000 §4.5). SystemC elaborates once per process and
  // cannot rewind, so every attempt runs in a fresh child process; the parent
  // only keeps the history of machine checks, which the next attempt reports.
  systems::RunOptions cur = opt;
  for (uint32_t attempt = 0;; ++attempt) {
    cur.attempt = attempt;
    int fds[2];
    if (::pipe(fds) != 0) return run_attempt(opt);  // no replay possible: one attempt in this process
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return run_attempt(opt);
    }
    if (pid == 0) {
      // The attempt dies with the fabricvp that started it: killing the
      // parent alone must not leave a simulation running on (Linux).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
      ::close(fds[0]);
      cur.report_fd = fds[1];
      const int rc = run_attempt(cur);
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(rc);
    }
    ::close(fds[1]);
    std::string report;
    char buf[512];
    for (ssize_t got; (got = ::read(fds[0], buf, sizeof buf)) != 0;) {
      if (got < 0) {
        if (errno == EINTR) continue;
        break;
      }
      report.append(buf, static_cast<size_t>(got));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status)) {
      fmt::print(stderr, "fabricvp: internal error: the simulation process ended by signal {}\n",
                 WIFSIGNALED(status) ? WTERMSIG(status) : -1);
      return kInternalError;
    }
    const int rc = WEXITSTATUS(status);
    if (rc != kMachineCheck) return rc;
    systems::RunOptions::MachineCheck m{};
    std::istringstream in(report);
    if (!(in >> m.time_ps >> m.link >> m.chip)) {
      fmt::print(stderr, "fabricvp: internal error: attempt {} ended in a machine check without a report\n", attempt);
      return kInternalError;
    }
    cur.history.push_back(m);
  }
}

}  // namespace fabricvp::runtime
