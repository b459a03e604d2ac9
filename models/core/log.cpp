#include "models/core/log.h"

#include <fmt/format.h>

#include <cstdio>
#include <systemc>

#include "models/core/config.h"

namespace fabricvp::core {

Level parse_level(std::string_view s) {
  if (s == "error") return Level::error;
  if (s == "warn") return Level::warn;
  if (s == "info") return Level::info;
  if (s == "debug") return Level::debug;
  throw ConfigError(fmt::format("unknown log level '{}' (error, warn, info, debug)", s));
}

namespace {

void handler(const sc_core::sc_report& rep, const sc_core::sc_actions& actions) {
  char letter = 'I';
  switch (rep.get_severity()) {
    case sc_core::SC_INFO: letter = rep.get_verbosity() > sc_core::SC_MEDIUM ? 'D' : 'I'; break;
    case sc_core::SC_WARNING: letter = 'W'; break;
    case sc_core::SC_ERROR: letter = 'E'; break;
    case sc_core::SC_FATAL: letter = 'F'; break;
    default: break;
  }
  if (actions & sc_core::SC_DISPLAY) {
    double ns = sc_core::sc_time_stamp().to_seconds() * 1e9;
    std::string line = fmt::format("[{} {:.3f} ns {}] {}\n", letter, ns, rep.get_msg_type(), rep.get_msg());
    std::fputs(line.c_str(), letter == 'I' || letter == 'D' ? stdout : stderr);
  }
  // Everything except display (stop, throw, abort, ...) is SystemC's business.
  sc_core::sc_report_handler::default_handler(rep, actions & ~sc_core::SC_DISPLAY);
}

}  // namespace

void install_report_handler() {
  static bool done = false;
  if (done) return;
  done = true;
  sc_core::sc_report_handler::set_handler(handler);
  sc_core::sc_report_handler::set_verbosity_level(sc_core::SC_DEBUG);
  // fabricvp stops the kernel itself on hardware errors and says why.
  // ("Simulation stopped by user." is the kernel's only info message.)
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

void report(Level level, std::string_view where, const std::string& message) {
  install_report_handler();
  std::string type(where.empty() ? "fabricvp" : where);
  switch (level) {
    case Level::error:
      // Displayed and logged, not thrown: fabricvp fails runs explicitly.
      sc_core::sc_report_handler::set_actions(type.c_str(), sc_core::SC_ERROR, sc_core::SC_DISPLAY);
      SC_REPORT_ERROR(type.c_str(), message.c_str());
      break;
    case Level::warn: SC_REPORT_WARNING(type.c_str(), message.c_str()); break;
    case Level::info: SC_REPORT_INFO_VERB(type.c_str(), message.c_str(), sc_core::SC_MEDIUM); break;
    case Level::debug: SC_REPORT_INFO_VERB(type.c_str(), message.c_str(), sc_core::SC_DEBUG); break;
  }
}

}  // namespace fabricvp::core
