// Vector ALU arithmetic (the TSP's VXM): element-wise ADD of two 320-byte
// vectors as 80 x fp32, 160 x bf16, 160 x fp16 or 80 x int32 lanes.
//
// Floating point follows IEEE 754 round-to-nearest-even with subnormals (no
// flush to zero). bf16/fp16 are added exactly in binary32 and rounded once to
// the 16-bit format; binary32 has more than 2p+2 bits for both, so the double
// rounding is innocuous and the result is the correctly rounded 16-bit sum.
// NaN rule: any NaN result is the canonical quiet NaN with the sign bit clear
// (fp32 0x7fc00000, fp16 0x7e00, bf16 0x7fc0). int32 wraps (two's complement).
#pragma once

#include <cstdint>

#include "models/tsp/isa.h"

namespace fabricvp::tsp::vxm {

constexpr uint32_t kNaN32 = 0x7fc00000u;
constexpr uint16_t kNaN16 = 0x7e00u;
constexpr uint16_t kNaNbf16 = 0x7fc0u;

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  ///< round to nearest even
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);  ///< round to nearest even

uint32_t add_fp32(uint32_t a, uint32_t b);  ///< bit patterns in, bit pattern out
uint16_t add_fp16(uint16_t a, uint16_t b);
uint16_t add_bf16(uint16_t a, uint16_t b);
uint32_t add_int32(uint32_t a, uint32_t b);

/// dst = a + b for one 320-byte vector (dst may alias a or b).
void add(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b);

}  // namespace fabricvp::tsp::vxm
