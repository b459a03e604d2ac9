// The TSP vector unit's (VXM) operations beyond ADD (docs/isa.md "MUL, SUB,
// RSQRT, SPLAT, CVT"): what a Cholesky factorization needs (seed 000 §5.5).
#pragma once

#include <cstdint>

#include "models/core/dtype.h"
#include "models/tsp/isa.h"

namespace fabricvp::tsp {

/// The VXM's reciprocal square root of a binary32 (seed 000 §5.5 names "a
/// custom approximation" without describing it; this one is documented in
/// docs/isa.md): an initial estimate from the exponent and significand bits
/// (0x5f3759df - x / 2), then two Newton-Raphson steps y = y (1.5 - 0.5 x y y)
/// in binary32, subnormal inputs scaled by 2^24 first. Relative error below
/// 5e-6 for every positive normal and subnormal input; +0 -> +inf, -0 -> -inf,
/// +inf -> +0, negative or NaN -> the canonical NaN.
uint32_t rsqrt_fp32(uint32_t x);

/// The VXM's exponential of a binary32 (for softmax and GELU; docs/isa.md
/// "EXP"): k = floor(x log2(e) + 1/2), r = (x - k ln2_hi) - k ln2_lo
/// (Cody-Waite, ln2_hi with 16 significant bits so k ln2_hi is exact), e^r by
/// its degree-7 Taylor polynomial in Horner form, then times 2^k (two steps
/// for a subnormal result: one rounding). All in binary32, unfused.
/// x > 88.7228394 -> +inf, x < -103.972084 -> +0, NaN -> the canonical NaN,
/// -inf -> +0; measured relative error at most 9.91e-8 for normal results.
uint32_t exp_fp32(uint32_t x);

/// The VXM's maximum of two binary32 (softmax: the largest score of a query):
/// b if b > a, else a (so of +0 and -0 the first operand); the canonical NaN
/// if either is NaN.
uint32_t max_fp32(uint32_t a, uint32_t b);

/// CVT to a 16-bit type: 160 binary32 values (two vectors) -> one vector,
/// rounded to nearest even (core::ieee::f32_to_f16 / f32_to_bf16).
void narrow(core::Dtype to, const uint8_t* lo, const uint8_t* hi, uint8_t* out);
/// CVT to binary32: one fp16 or bf16 vector -> 160 binary32 values (two vectors), exact.
void widen(core::Dtype from, const uint8_t* in, uint8_t* lo, uint8_t* hi);

}  // namespace fabricvp::tsp
