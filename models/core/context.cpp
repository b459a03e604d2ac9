#include "models/core/context.h"

#include <fmt/format.h>

#include <cstdlib>
#include <systemc>

#include "models/core/log.h"

namespace fabricvp::core {

namespace {
// SystemC prints its copyright banner when the kernel starts, before sc_main
// runs; fabricvp's output is a summary table and machine-readable files, so the
// banner is switched off at static initialization (SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=0
// in the environment brings it back).
const int kNoBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
}  // namespace

Context& Context::get() {
  static Context ctx;
  return ctx;
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

uint64_t Context::stream_seed(std::string_view stream) const { return splitmix64(m_seed ^ fnv1a64(stream)); }

void Context::hw_error(HardwareError e) {
  std::string msg = e.cycle >= 0 ? fmt::format("hardware error at cycle {} ({} ps): {}", e.cycle, e.time_ps, e.message)
                                 : fmt::format("hardware error at {} ps: {}", e.time_ps, e.message);
  report(Level::error, e.where, msg);
  m_errors.push_back(std::move(e));
  m_halted = true;
  if (sc_core::sc_is_running()) sc_core::sc_stop();
}

void Context::config_failure(const ConfigError& e) {
  if (!m_config_failure) m_config_failure = e;
  if (sc_core::sc_is_running()) sc_core::sc_stop();
}

}  // namespace fabricvp::core
