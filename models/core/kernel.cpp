#include "models/core/kernel.h"

#include <systemc>

#include "models/core/log.h"

namespace fabricvp::core {

void init_kernel() {
  static bool done = false;
  if (done) return;
  done = true;
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  install_report_handler();
}

}  // namespace fabricvp::core
