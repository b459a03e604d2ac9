// Logging through SystemC's report handler.
//
// Every message is an sc_report whose message type is the hierarchical name of
// the reporting object; fabricvp's handler prints it as
//   [I 722.222 ns sys.node0.tsp3] message
// (E = error, W = warning, I = info, D = debug). Levels are per module
// (parameter `log_level`, default: the global `log.level`).
#pragma once

#include <string>
#include <string_view>

namespace fabricvp::core {

enum class Level : int { error = 0, warn = 1, info = 2, debug = 3 };

Level parse_level(std::string_view s);  ///< "error"|"warn"|"info"|"debug"; throws ConfigError otherwise

/// Install the fabricvp report handler (idempotent). Safe to call before elaboration.
void install_report_handler();

/// Emit one message. Errors are displayed but never thrown: the caller decides
/// how the run fails (see Context::hw_error).
void report(Level level, std::string_view where, const std::string& message);

}  // namespace fabricvp::core
