// Binary32 arithmetic of the F extension that is also called outside the
// hart (tests compare its fast path with the host's flags path).
#pragma once

#include <cstdint>

namespace fabricvp::riscv::fpu {

/// a + b under RISC-V rounding mode rm (0..4), result bits (NaNs canonical)
/// and the fflags it raises in `flags`. Round-to-nearest-even results that
/// cannot be tiny or overflow are computed exactly in binary64 and rounded
/// once, without touching the host's floating-point environment;
/// allow_fast = false always uses the host's rounding modes and flags.
uint32_t add_s(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, bool allow_fast = true);

/// a x b, likewise.
uint32_t mul_s(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, bool allow_fast = true);

}  // namespace fabricvp::riscv::fpu
