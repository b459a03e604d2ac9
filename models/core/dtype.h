// Element types and their arithmetic: the one Dtype of fabricvp and the one
// set of IEEE adders, used by the TSP vector ALU (VXM), the ACE datapath model
// and the host references that check every run.
//
// Encoding: the numbers are the TSP instruction encoding's dtype byte
// (docs/isa.md); the ACE RTL numbers its in_dtype differently and converts at
// its boundary (models/ace/datapath.h).
//
// Arithmetic: IEEE 754 round to nearest even with subnormals (no flush to
// zero), overflow to infinity, x + (-x) = +0, (-0) + (-0) = -0, inf + (-inf) =
// NaN. bf16/fp16 are added exactly in binary32 and rounded once to the 16-bit
// format; binary32 has more than 2p+2 bits for both, so the double rounding is
// innocuous and the result is the correctly rounded 16-bit sum. NaN rule: any
// NaN result is the canonical quiet NaN with the sign bit clear (fp32
// 0x7fc00000, fp16 0x7e00, bf16 0x7fc0). int32 wraps (two's complement).
// tests/vxm_test.cpp holds these adders to an independent binary64 oracle.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace fabricvp::core {

/// int8 is an input type of the TSP matrix unit (MXM) only: nothing adds
/// int8 vectors (core::add refuses it; collectives reduce the other four).
enum class Dtype : uint8_t { none = 0, fp32 = 1, bf16 = 2, fp16 = 3, int32 = 4, int8 = 5 };

/// The four element types that are added (vector ALU, ACE, collectives), in encoding order.
constexpr std::array<Dtype, 4> kDtypes{Dtype::fp32, Dtype::bf16, Dtype::fp16, Dtype::int32};

/// "fp32", "bf16", "fp16", "int32", "int8" ("none" for Dtype::none).
const char* dtype_name(Dtype d);
/// Bytes per element; 0 for Dtype::none.
uint32_t dtype_bytes(Dtype d);
/// Parse "fp32", "bf16", "fp16", "int32", "int8"; false (and `out` unchanged) otherwise.
bool parse_dtype(const std::string& s, Dtype& out);
/// One of kDtypes (a type that vector ALUs and collectives add).
bool is_reduction_dtype(Dtype d);

namespace ieee {
constexpr uint32_t kNaN32 = 0x7fc00000u;
/// A binary32's bit pattern and back.
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
constexpr uint16_t kNaN16 = 0x7e00u;
constexpr uint16_t kNaNbf16 = 0x7fc0u;

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  ///< round to nearest even
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);  ///< round to nearest even

uint32_t add_fp32(uint32_t a, uint32_t b);  ///< bit patterns in, bit pattern out
uint16_t add_fp16(uint16_t a, uint16_t b);
uint16_t add_bf16(uint16_t a, uint16_t b);
inline uint32_t add_int32(uint32_t a, uint32_t b) { return a + b; }

/// Products, correctly rounded like the sums: binary32 directly; bf16 and
/// fp16 products are exact in binary32 (8 x 8, 11 x 11 significand bits) and
/// rounded once. int32 wraps. NaN results canonical.
uint32_t mul_fp32(uint32_t a, uint32_t b);
uint16_t mul_fp16(uint16_t a, uint16_t b);
uint16_t mul_bf16(uint16_t a, uint16_t b);
inline uint32_t mul_int32(uint32_t a, uint32_t b) { return a * b; }
}  // namespace ieee

/// One 32-bit lane: 16-bit types take the low halves of a and b and give a
/// zero high half (the ACE datapath's lanes).
inline uint32_t add_lane(Dtype dt, uint32_t a, uint32_t b) {
  switch (dt) {
    case Dtype::fp32: return ieee::add_fp32(a, b);
    case Dtype::bf16: return ieee::add_bf16(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
    case Dtype::fp16: return ieee::add_fp16(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
    case Dtype::int32: return ieee::add_int32(a, b);
    case Dtype::int8:
    case Dtype::none: break;
  }
  return 0;
}

/// dst = a + b element-wise over `bytes` bytes of little-endian elements; dst
/// may alias a or b. No allocation. std::invalid_argument if `bytes` is not a
/// whole number of elements or dt is not one of kDtypes.
void add(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes);

/// dst = a * b, dst = a - b element-wise (same contract as add; a - b is a + (-b)).
void mul(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes);
void sub(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes);

/// An element's value as a double (for mismatch reports; exact).
double element_value(Dtype dt, const uint8_t* p);

/// Bytes [offset, offset + bytes) of the seeded input stream of type dt
/// (splitmix64, counter based, so any slice can be generated on its own;
/// offset must be a whole number of elements): floats with random sign and
/// significand over several binades, small enough that the sum over `ranks`
/// inputs cannot overflow; int32 and int8 uniformly random (sums wrap).
void random_elements(Dtype dt, uint64_t seed, uint8_t* out, uint64_t bytes, uint64_t offset = 0, uint32_t ranks = 8);

}  // namespace fabricvp::core
