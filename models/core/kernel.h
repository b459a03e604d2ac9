// Process start-up of the SystemC kernel, called first thing in every sc_main.
#pragma once

namespace fabricvp::core {

/// Fix the kernel's time resolution at 1 ps (every model computes times in
/// integer picoseconds and converts them with sc_time::from_value), and install
/// fabricvp's report handler. Must run before any non-zero sc_time exists;
/// idempotent.
void init_kernel();

}  // namespace fabricvp::core
