// Binary32 arithmetic of the F extension that is also called outside the
// hart (tests compare its fast path with the host's flags path).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace fabricvp::riscv::fpu {

/// Round-to-nearest-even sum or product of two finite binary32 values without
/// the host's flags: the exact result is computed in binary64 (a product of two
/// 24-bit significands always fits, a sum does when the exponents differ by at
/// most 28) and rounded once. Only results that are exact zeros or at least
/// the smallest normal in magnitude before rounding and finite after it take
/// this path, so tininess (after rounding, as RISC-V detects it) and overflow
/// never arise and inexact is the only flag. False: use the host's flags.
/// Inline: the hart's loop runs it for FADD.S, FSUB.S and FMUL.S (the host
/// rounds to nearest even there, as everywhere outside fpu.cpp's scoped modes).
inline bool rne_fast(uint32_t a, uint32_t b, bool mul, uint32_t& out, uint32_t& flags) {
  const unsigned ea = (a >> 23) & 0xff, eb = (b >> 23) & 0xff;
  if (ea == 0xff || eb == 0xff) return false;
  float fa, fb;
  std::memcpy(&fa, &a, 4);
  std::memcpy(&fb, &b, 4);
  double d;
  if (mul) {
    d = static_cast<double>(fa) * static_cast<double>(fb);
  } else {
    const bool zero = (a << 1) == 0 || (b << 1) == 0;
    if (!zero && (ea > eb ? ea - eb : eb - ea) > 28) return false;
    d = static_cast<double>(fa) + static_cast<double>(fb);
  }
  if (d != 0.0 && std::fabs(d) < static_cast<double>(std::numeric_limits<float>::min())) return false;
  volatile double vd = d;
  const float r = static_cast<float>(vd);
  if (std::isinf(r)) return false;
  std::memcpy(&out, &r, 4);
  flags = static_cast<double>(r) != d ? 1u : 0u;  // NX
  return true;
}

/// a + b under RISC-V rounding mode rm (0..4), result bits (NaNs canonical)
/// and the fflags it raises in `flags`. Round-to-nearest-even results that
/// cannot be tiny or overflow are computed exactly in binary64 and rounded
/// once, without touching the host's floating-point environment;
/// allow_fast = false always uses the host's rounding modes and flags.
uint32_t add_s(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, bool allow_fast = true);

/// a x b, likewise.
uint32_t mul_s(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, bool allow_fast = true);

}  // namespace fabricvp::riscv::fpu
