#include "models/core/module.h"

namespace fabricvp::core {

Level default_log_level() {
  static Param<std::string> level("log", "level", "info", "", "default log level of every module",
                                  {"error", "warn", "info", "debug"});
  return parse_level(level.get());
}

Module::Module(const sc_core::sc_module_name& nm, const char* kind)
    : sc_core::sc_module(nm),
      m_kind(kind),
      m_log_level(this, "log_level", "", "", "log level of this module (empty: log.level)",
                  {"", "error", "warn", "info", "debug"}),
      m_level(m_log_level.get().empty() ? default_log_level() : parse_level(m_log_level.get())) {
  install_report_handler();
}

uint64_t Module::seed_for(std::string_view purpose) const {
  std::string stream = std::string(name()) + "/" + std::string(purpose);
  return Context::get().stream_seed(stream);
}

void Module::hw_error(const std::string& where_suffix, uint64_t time_ps, int64_t cycle,
                      const std::string& message) const {
  std::string where = name();
  if (!where_suffix.empty()) where += "." + where_suffix;
  Context::get().hw_error(HardwareError{where, message, time_ps, cycle, false, {}});
}

}  // namespace fabricvp::core
