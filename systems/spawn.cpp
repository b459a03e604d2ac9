#include "systems/spawn.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace fabricvp::systems {

namespace {
std::vector<char*> c_args(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return args;
}
}  // namespace

pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log, int& err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args = c_args(argv);
  pid_t pid = -1;
  err = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return err == 0 ? pid : -1;
}

int wait_exit_code(pid_t pid) {
  int st = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
  }
  return waited == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string run_capture(const std::vector<std::string>& argv, int& status) {
  status = -1;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fmt::format("cannot start {}: {}", argv.at(0), std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);  // dup2 clears close-on-exec on the copies
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  std::vector<char*> args = c_args(argv);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    status = kCannotStart;
    return fmt::format("cannot start {}: {}", argv[0], std::strerror(rc));
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0)
      out.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(fds[0]);
  status = wait_exit_code(pid);
  return out;
}

}  // namespace fabricvp::systems
