// Other programs started by fabricvp (handler and operator compilers,
// experiments' and sweeps' jobs, matplotlib for charts): by argument vector,
// with no shell in between, so no file name is ever read as shell syntax.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace fabricvp::systems {

/// Starts argv[0] (a path, or a name found on PATH) with these arguments, its
/// standard output and error written to `log` (created or truncated).
/// Returns its pid, or -1 with `err` set to why it could not start.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log, int& err);
/// Waits for the child `pid` (again when a signal interrupts the wait): its
/// exit code, or -1 if it did not exit normally or could not be waited for.
int wait_exit_code(pid_t pid);

/// Runs argv[0] (found on PATH) with these arguments: its standard output
/// and error, and in `status` its exit code (-1 if it did not exit normally,
/// kCannotStart with the reason as the text if it could not start).
std::string run_capture(const std::vector<std::string>& argv, int& status);
constexpr int kCannotStart = -2;

}  // namespace fabricvp::systems
