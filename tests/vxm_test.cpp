// Vector ALU arithmetic: IEEE round-to-nearest-even, subnormals, overflow,
// canonical NaN, int32 wrap — and agreement with an independent binary64 oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "harness.h"
#include "ieee_oracle.h"
#include "models/core/dtype.h"
#include "models/tsp/isa.h"

using namespace fabricvp::core::ieee;
using fabricvp::core::Dtype;
using fabricvp::test::oracle::round_to;
using fabricvp::tsp::kVectorBytes;

namespace {
using fabricvp::test::bits;
using fabricvp::test::flt;
bool is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool is_nanbf(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }
}  // namespace

TEST(Vxm, Fp16ConversionRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (is_nan16(static_cast<uint16_t>(h))) {
      EXPECT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), kNaN16);
      continue;
    }
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Vxm, Fp16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9: rounds up to even.
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above the halfway point rounds up.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // Subnormal results: 2^-24 is the smallest; 2^-25 ties to 0, 3*2^-25 ties to 2*2^-24.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -26)), 0x8000);
  // Largest finite 65504; 65520 is halfway to 65536 and overflows to infinity.
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e9f), 0xfc00);
}

TEST(Vxm, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(flt(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(flt(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(flt(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(flt(0x7f7fffff)), 0x7f80);  // overflow to +inf
  EXPECT_EQ(f32_to_bf16(flt(0x00010000)), 0x0001);  // subnormal kept
  EXPECT_EQ(f32_to_bf16(flt(0x7fa00000)), kNaNbf16);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (!is_nanbf(static_cast<uint16_t>(h))) {
      ASSERT_EQ(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(h))), h);
    }
  }
}

TEST(Vxm, AdditionSpecialCases) {
  // fp32
  EXPECT_EQ(add_fp32(bits(INFINITY), bits(-INFINITY)), kNaN32);
  EXPECT_EQ(add_fp32(0xffc00001u, bits(1.0f)), kNaN32);  // any NaN becomes the canonical one
  EXPECT_EQ(add_fp32(bits(3.4e38f), bits(3.4e38f)), bits(INFINITY));
  EXPECT_EQ(add_fp32(bits(0.0f), bits(-0.0f)), bits(0.0f));
  EXPECT_EQ(add_fp32(bits(-0.0f), bits(-0.0f)), bits(-0.0f));
  EXPECT_EQ(add_fp32(0x00000001u, 0x00000001u), 0x00000002u);  // subnormals kept (no FTZ)
  EXPECT_EQ(add_fp32(bits(1.0f), bits(-1.0f)), 0u);            // exact cancellation is +0
  // fp16
  EXPECT_EQ(add_fp16(0x7bff, 0x7bff), 0x7c00);  // 65504 + 65504 overflows
  EXPECT_EQ(add_fp16(0x7c00, 0xfc00), kNaN16);
  EXPECT_EQ(add_fp16(0x0001, 0x0001), 0x0002);
  EXPECT_EQ(add_fp16(0x3c00, 0x1000), 0x3c00);  // 1 + 2^-11 ties to 1
  // bf16
  EXPECT_EQ(add_bf16(0x7f80, 0xff80), kNaNbf16);
  EXPECT_EQ(add_bf16(0x3f80, 0x3b80), 0x3f80);  // 1 + 2^-8 ties to even
  // int32 wraps
  EXPECT_EQ(add_int32(0x7fffffffu, 1u), 0x80000000u);
  EXPECT_EQ(add_int32(0xffffffffu, 1u), 0u);
}

TEST(Vxm, AgreesWithIndependentReferenceOnRandomOperands) {
  // Random bit patterns cover normals, subnormals, infinities and NaNs.
  uint64_t seed = 20261122;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int i = 0; i < 300000; ++i) {
    uint32_t a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    if (i % 3 == 0) b = (b & 0x807fffffu) | (a & 0x7f800000u);  // same exponent: cancellation
    double sa = fabricvp::test::oracle::value(Dtype::fp32, reinterpret_cast<uint8_t*>(&a));
    double sb = fabricvp::test::oracle::value(Dtype::fp32, reinterpret_cast<uint8_t*>(&b));
    ASSERT_EQ(add_fp32(a, b), round_to(Dtype::fp32, sa + sb)) << std::hex << a << " " << b;
    uint16_t x = static_cast<uint16_t>(a), y = static_cast<uint16_t>(b);
    double hx = fabricvp::test::oracle::value(Dtype::fp16, reinterpret_cast<uint8_t*>(&x));
    double hy = fabricvp::test::oracle::value(Dtype::fp16, reinterpret_cast<uint8_t*>(&y));
    ASSERT_EQ(add_fp16(x, y), round_to(Dtype::fp16, hx + hy)) << std::hex << x << " " << y;
    double bx = fabricvp::test::oracle::value(Dtype::bf16, reinterpret_cast<uint8_t*>(&x));
    double by = fabricvp::test::oracle::value(Dtype::bf16, reinterpret_cast<uint8_t*>(&y));
    ASSERT_EQ(add_bf16(x, y), round_to(Dtype::bf16, bx + by)) << std::hex << x << " " << y;
  }
}

TEST(Vxm, VectorAddUsesLittleEndianLanes) {
  uint8_t a[kVectorBytes], b[kVectorBytes], d[kVectorBytes];
  for (unsigned i = 0; i < 80; ++i) {
    float x = static_cast<float>(i) + 0.5f, y = 2.0f * static_cast<float>(i);
    std::memcpy(a + 4 * i, &x, 4);
    std::memcpy(b + 4 * i, &y, 4);
  }
  fabricvp::core::add(Dtype::fp32, d, a, b, kVectorBytes);
  for (unsigned i = 0; i < 80; ++i) {
    float z;
    std::memcpy(&z, d + 4 * i, 4);
    EXPECT_EQ(z, 3.0f * static_cast<float>(i) + 0.5f);
  }
  fabricvp::core::add(Dtype::fp32, a, a, a, kVectorBytes);  // in place
  float z;
  std::memcpy(&z, a + 4, 4);
  EXPECT_EQ(z, 3.0f);
}

// The seeded input streams (core::random_elements) are counter based: any
// slice, at any element offset and length, equals that part of the whole
// stream (the NPU check makes its inputs again a chunk at a time).
TEST(Dtype, RandomElementSlicesEqualTheWholeStream) {
  namespace core = fabricvp::core;
  for (core::Dtype dt : {core::Dtype::fp32, core::Dtype::bf16, core::Dtype::fp16, core::Dtype::int32}) {
    const uint32_t es = core::dtype_bytes(dt);
    std::vector<uint8_t> whole(1000 * es), part;
    core::random_elements(dt, 42, whole.data(), whole.size(), 0, 64);
    for (uint64_t from : {0u, 1u, 2u, 3u, 5u, 8u, 333u})
      for (uint64_t n : {0u, 1u, 2u, 3u, 4u, 7u, 100u, 667u}) {
        if (from + n > 1000) continue;
        part.assign(n * es, 0xAA);
        core::random_elements(dt, 42, part.data(), n * es, from * es, 64);
        EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + static_cast<long>(from * es)))
            << core::dtype_name(dt) << " elements [" << from << ", " << from + n << ")";
      }
  }
}
