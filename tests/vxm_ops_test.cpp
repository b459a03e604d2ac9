// The VXM operations beyond ADD (docs/isa.md "MUL, SUB, RSQRT, SPLAT,
// NARROW, WIDEN"): arithmetic against the independent binary64 oracle, the
// reciprocal square root's error bound, lane moves, conversions, latencies.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "harness.h"
#include "ieee_oracle.h"
#include "models/core/dtype.h"
#include "models/tsp/vxm.h"

using namespace fabricvp;
using test::Bench;

namespace {

std::vector<uint8_t> randoms(core::Dtype dt, uint64_t seed, uint32_t vectors = 1) {
  std::vector<uint8_t> v(uint64_t(vectors) * tsp::kVectorBytes);
  core::random_elements(dt, seed, v.data(), v.size(), 0, 8);
  return v;
}

uint32_t word(const uint8_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  return x;
}

/// The oracle's a op b, element by element: binary64 (exact for these
/// products and sums) rounded once to the type; int32 wraps.
std::vector<uint8_t> oracle(core::Dtype dt, bool mul, const std::vector<uint8_t>& a, const uint8_t* b) {
  std::vector<uint8_t> out(a.size());
  const uint32_t es = core::dtype_bytes(dt);
  for (size_t i = 0; i < a.size(); i += es) {
    if (dt == core::Dtype::int32) {
      const uint32_t x = word(&a[i]), y = word(b + i), z = mul ? x * y : x - y;
      std::memcpy(&out[i], &z, 4);
      continue;
    }
    const double x = test::oracle::value(dt, &a[i]), y = test::oracle::value(dt, b + i);
    test::oracle::store(&out[i], es * 8, test::oracle::round_to(dt, mul ? x * y : x - y));
  }
  return out;
}

}  // namespace

TEST(VxmOps, MulAndSubOfEveryTypeMatchTheOracleAndBroadcastOneVector) {
  Bench b(test::node_yaml(2));
  const core::Dtype types[] = {core::Dtype::fp32, core::Dtype::bf16, core::Dtype::fp16, core::Dtype::int32};
  for (int k = 0; k < 4; ++k) {
    b.write_vec(0, 100 * k, randoms(types[k], 10 + k, 3));
    b.write_vec(0, 100 * k + 10, randoms(types[k], 20 + k, 3));
  }
  b.load(0,
         ".queue 0\nMUL.fp32 @1000, @0, @10, 3\n.queue 1\nMUL.bf16 @1010, @100, @110, 3\n"
         ".queue 2\nSUB.fp16 @1020, @200, @210, 3\n.queue 3\nSUB.int32 @1030, @300, @310, 3, BCAST\n"
         ".queue 4\nWAIT 10\nSUB.fp32 @1040, @0, @10, 3\nWAIT 20\nMUL.fp16 @1050, @200, @212, 3, BCAST\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(0).vxm_ops.get(), 6u);
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(20 + 2 + 16));
  auto expect = [&](uint32_t at, core::Dtype dt, bool mul, uint32_t a, uint32_t bb, bool bcast) {
    const std::vector<uint8_t> av = b.read_vec(0, a, 3), bv = b.read_vec(0, bb, 3), got = b.read_vec(0, at, 3);
    std::vector<uint8_t> bfull = bv;
    if (bcast)
      for (int v = 1; v < 3; ++v) std::memcpy(&bfull[v * 320], &bv[0], 320);
    EXPECT_EQ(got, oracle(dt, mul, av, bfull.data())) << core::dtype_name(dt) << (mul ? " mul" : " sub");
  };
  expect(1000, core::Dtype::fp32, true, 0, 10, false);
  expect(1010, core::Dtype::bf16, true, 100, 110, false);
  expect(1020, core::Dtype::fp16, false, 200, 210, false);
  expect(1030, core::Dtype::int32, false, 300, 310, true);
  expect(1040, core::Dtype::fp32, false, 0, 10, false);
  expect(1050, core::Dtype::fp16, true, 200, 212, true);
}

TEST(VxmOps, MulAndSubWithABcastPeriodOrASpreadReadTheDocumentedBVectors) {
  Bench b(test::node_yaml(2));
  struct Case {
    const char* op;
    core::Dtype dt;
    const char* mode;  // BCAST p: b[i mod p]; SPREAD q: b[i / q]
    uint32_t k;
  };
  const Case cases[] = {{"MUL", core::Dtype::fp32, "BCAST", 4},   {"SUB", core::Dtype::fp16, "BCAST", 4},
                        {"SUB", core::Dtype::int32, "SPREAD", 4}, {"MUL", core::Dtype::bf16, "SPREAD", 4},
                        {"MUL", core::Dtype::int32, "BCAST", 5},  {"SUB", core::Dtype::fp32, "SPREAD", 5}};
  const uint32_t n = 12;
  std::string text;
  for (uint32_t c = 0; c < 6; ++c) {
    b.write_vec(0, 100 * c, randoms(cases[c].dt, 30 + c, n));
    b.write_vec(0, 100 * c + 50, randoms(cases[c].dt, 40 + c, n));  // more b vectors than are read
    // Four ALUs: the last two wait for the first two.
    text +=
        fmt::format(".queue {}\n{}{}.{} @{}, @{}, @{}, {}, {} {}\n", c, c >= 4 ? "WAIT 12\n" : "", cases[c].op,
                    core::dtype_name(cases[c].dt), 2000 + 20 * c, 100 * c, 100 * c + 50, n, cases[c].mode, cases[c].k);
  }
  b.load(0, text);
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(0).vxm_ops.get(), 6u);
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(12 + n - 1 + 16));  // step i still at c + i
  for (uint32_t c = 0; c < 6; ++c) {
    const Case& k = cases[c];
    const std::vector<uint8_t> av = b.read_vec(0, 100 * c, n), bv = b.read_vec(0, 100 * c + 50, n);
    std::vector<uint8_t> bfull(av.size());
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t j = std::string(k.mode) == "BCAST" ? i % k.k : i / k.k;
      std::memcpy(&bfull[i * 320], &bv[j * 320], 320);
    }
    EXPECT_EQ(b.read_vec(0, 2000 + 20 * c, n), oracle(k.dt, std::string(k.op) == "MUL", av, bfull.data()))
        << k.op << "." << core::dtype_name(k.dt) << ", " << k.mode << " " << k.k;
  }
}

TEST(VxmOps, BcastAndSpreadCheckExactlyTheBVectorsTheyReadAgainstTheStreams) {
  Bench b(test::node_yaml(2));
  // The MXM's results [0,0,0,2000..2003] land at cycle 164. SPREAD 4 from
  // @1998 reads only @1998 and @1999 (8 steps); BCAST 4 reads @1998..@2001,
  // @2000 first at step 2: cycle 123.
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 1\n"
         ".queue 1\nWAIT 120\nMUL.fp32 @3000, @0, @1998, 8, SPREAD 4\n"
         ".queue 2\nWAIT 121\nSUB.fp32 @3100, @0, @1998, 8, BCAST 4\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("SUB reads [0,0,0,2000] at cycle 123, before the MXM issued at cycle 100"),
            std::string::npos)
      << b.errors()[0].message;
}

namespace {
struct VxmBadBinary {
  const char* name;
  void (*spoil)(tsp::Instr&);
  const char* what;
};
void PrintTo(const VxmBadBinary& b, std::ostream* os) { *os << b.name; }
class VxmBinary : public ::testing::TestWithParam<VxmBadBinary> {};
}  // namespace

TEST_P(VxmBinary, IsRefusedWhenTheChipLoadsIt) {
  tsp::Instr in;
  in.op = tsp::Op::MUL;
  in.dtype = core::Dtype::fp32;
  in.a = 2000;
  in.b = 0;
  in.c = 100;
  in.count = 8;
  in.line = 9;
  GetParam().spoil(in);
  const std::string err = test::refusal_at_load(in);
  EXPECT_NE(err.find(std::string("queue 4 instruction 0 (source line 9): MUL ") + GetParam().what), std::string::npos)
      << (err.empty() ? "accepted" : err);
}

INSTANTIATE_TEST_SUITE_P(VxmOps, VxmBinary,
                         ::testing::Values(VxmBadBinary{"BcastAndSpread",
                                                        [](tsp::Instr& i) { i.imm = tsp::vxm_imm(2, 3); },
                                                        "has both BCAST 2 and SPREAD 3"},
                                           VxmBadBinary{"SpreadPastSram",
                                                        [](tsp::Instr& i) {
                                                          i.c = 720893;  // SPREAD 2 of 8 steps reads 4 vectors
                                                          i.imm = tsp::vxm_imm(0, 2);
                                                        },
                                                        "runs past the end of SRAM"}),
                         [](const ::testing::TestParamInfo<VxmBadBinary>& p) { return std::string(p.param.name); });

TEST(VxmOps, ReciprocalSquareRootStaysWithinItsDocumentedError) {
  // Every exponent, 4096 significands each, and the subnormals: relative error < 5e-6.
  double worst = 0;
  for (uint32_t e = 0; e < 255; ++e)
    for (uint32_t m = 0; m < 4096; ++m) {
      const uint32_t x = (e << 23) | (m * 2047u + (m >> 3)) % 0x800000u;
      if (x == 0) continue;
      float f;
      std::memcpy(&f, &x, 4);
      const uint32_t r = tsp::rsqrt_fp32(x);
      float g;
      std::memcpy(&g, &r, 4);
      const double want = 1.0 / std::sqrt(static_cast<double>(f));
      worst = std::max(worst, std::fabs(g - want) / want);
    }
  EXPECT_LT(worst, 5e-6);
  EXPECT_GT(worst, 1e-7);                                       // an approximation, not the correctly rounded value
  EXPECT_EQ(tsp::rsqrt_fp32(0x00000000u), 0x7f800000u);         // +0 -> +inf
  EXPECT_EQ(tsp::rsqrt_fp32(0x80000000u), 0xff800000u);         // -0 -> -inf
  EXPECT_EQ(tsp::rsqrt_fp32(0x7f800000u), 0x00000000u);         // +inf -> +0
  EXPECT_EQ(tsp::rsqrt_fp32(0xbf800000u), core::ieee::kNaN32);  // -1
  EXPECT_EQ(tsp::rsqrt_fp32(0x7fc12345u), core::ieee::kNaN32);
  EXPECT_NEAR(test::flt(tsp::rsqrt_fp32(0x40800000u)), 0.5f, 0.5f * 5e-6f);  // rsqrt(4)
  RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("rsqrt worst relative error %.3g\n", worst);
}

TEST(VxmOps, ExponentialStaysWithinItsDocumentedError) {
  // Every 97th binary32 in [-103.97, 88.72] (~23 million points): relative error < 1.5e-7
  // (measured 9.91e-8) where e^x is normal; within one subnormal step (2^-149) of that where it is not.
  double worst = 0, worst_sub = 0;
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t mag = 0; mag < 0x42d00000u; mag += 97) {  // |x| < 104
      const uint32_t x = sign << 31 | mag;
      const float f = test::flt(x);
      if (f > 88.7228394f || f < -103.972084f) continue;
      const double want = std::exp(static_cast<double>(f));
      const double got = test::flt(tsp::exp_fp32(x));
      if (want >= 1.1754943508222875e-38)
        worst = std::max(worst, std::fabs(got - want) / want);
      else
        worst_sub = std::max(worst_sub, std::fabs(got - want) - 1.5e-7 * want);
    }
  EXPECT_LT(worst, 1.5e-7);
  EXPECT_LE(worst_sub, std::ldexp(1.0, -149));
  EXPECT_EQ(tsp::exp_fp32(0x00000000u), 0x3f800000u);          // e^0 = 1 exactly
  EXPECT_EQ(tsp::exp_fp32(0x80000000u), 0x3f800000u);          // e^-0
  EXPECT_EQ(tsp::exp_fp32(0x7f800000u), 0x7f800000u);          // e^inf
  EXPECT_EQ(tsp::exp_fp32(0xff800000u), 0x00000000u);          // e^-inf = +0
  EXPECT_EQ(tsp::exp_fp32(test::bits(89.0f)), 0x7f800000u);    // overflows
  EXPECT_EQ(tsp::exp_fp32(test::bits(-104.0f)), 0x00000000u);  // underflows
  EXPECT_EQ(tsp::exp_fp32(0xffc00001u), core::ieee::kNaN32);
  RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("exp worst relative error %.3g (subnormal results: %.3g beyond 1.5e-7)\n", worst, worst_sub);
}

TEST(VxmOps, RsqrtSplatNarrowAndWidenInTheChip) {
  Bench b(test::node_yaml(2));
  std::vector<uint8_t> x = randoms(core::Dtype::fp32, 5, 2);
  for (size_t i = 0; i < x.size(); i += 4) x[i + 3] &= 0x7f;  // positive
  b.write_vec(0, 0, x);
  b.load(0,
         ".queue 0\nRSQRT.fp32 @100, @0, 2\nEXP.fp32 @500, @0, 2\n"
         ".queue 1\nSPLAT.fp32 @200, @0, 7, 2\n"
         ".queue 2\nNARROW.fp16 @300, @0, 1\nWAIT 40\nWIDEN.fp16 @400, @300, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const std::vector<uint8_t> r = b.read_vec(0, 100, 2), s = b.read_vec(0, 200, 2), n = b.read_vec(0, 300),
                             w = b.read_vec(0, 400, 2), xp = b.read_vec(0, 500, 2);
  for (uint32_t e = 0; e < 160; ++e) {
    EXPECT_EQ(word(&r[4 * e]), tsp::rsqrt_fp32(word(&x[4 * e])));
    EXPECT_EQ(word(&xp[4 * e]), tsp::exp_fp32(word(&x[4 * e])));
    EXPECT_EQ(word(&s[4 * e]), word(&x[(e / 80) * 320 + 4 * 7]));  // lane 7 of each source vector
    float f;
    std::memcpy(&f, &x[4 * e], 4);
    uint16_t h;
    std::memcpy(&h, &n[2 * e], 2);
    EXPECT_EQ(h, core::ieee::f32_to_f16(f));
    const float back = core::ieee::f16_to_f32(h);
    EXPECT_EQ(word(&w[4 * e]), test::bits(back));
  }
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(40 + 16));
}

TEST(VxmOps, ReadingAnMxmResultOnItsStreamAndBadOperandsAreRefused) {
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 2\n"
         ".queue 1\nWAIT 110\nRSQRT.fp32 @3000, @2000, 1\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("RSQRT reads"), std::string::npos) << b.errors()[0].message;
  test::expect_asm_error("RSQRT.fp16 @0, @1, 1", "RSQRT takes .fp32");
  test::expect_asm_error("EXP.bf16 @0, @1, 1", "EXP takes .fp32");
  test::expect_asm_error("NARROW.fp32 @0, @1, 1", "takes .fp16 or .bf16");
  test::expect_asm_error("SPLAT.fp32 @0, @1, 80, 1", "lane 80 out of range: a fp32 vector has 80 lanes");
  test::expect_asm_error("MUL.int8 @0, @1, @2, 1", "MUL needs a type suffix");
  test::expect_asm_error("SUB.fp32 @0, @1, @2, 1, ACC", "fifth operand is BCAST");
  test::expect_asm_error("WIDEN.fp16 @720895, @0, 1", "runs past the end of SRAM");
}

TEST(VxmOps, MaximumIsTheLargerOperandOfEachLaneWithTheDocumentedZerosAndNaN) {
  EXPECT_EQ(tsp::max_fp32(test::bits(1.5f), test::bits(-2.0f)), test::bits(1.5f));
  EXPECT_EQ(tsp::max_fp32(test::bits(-3.0f), test::bits(-2.0f)), test::bits(-2.0f));
  EXPECT_EQ(tsp::max_fp32(0x00000000u, 0x80000000u), 0x00000000u);  // +0, -0: the first
  EXPECT_EQ(tsp::max_fp32(0x80000000u, 0x00000000u), 0x80000000u);
  EXPECT_EQ(tsp::max_fp32(0xff800000u, test::bits(-1e38f)), test::bits(-1e38f));  // -inf is the smallest
  EXPECT_EQ(tsp::max_fp32(0x7f800000u, test::bits(1e38f)), 0x7f800000u);
  EXPECT_EQ(tsp::max_fp32(0x00000001u, 0x00000000u), 0x00000001u);  // subnormals compare as numbers
  EXPECT_EQ(tsp::max_fp32(0x7fc00001u, test::bits(1.0f)), core::ieee::kNaN32);
  EXPECT_EQ(tsp::max_fp32(test::bits(1.0f), 0xffc00000u), core::ieee::kNaN32);
}

TEST(VxmOps, MaxInTheChipTakesTheLargerLaneAndABcastPeriod) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> a = randoms(core::Dtype::fp32, 31, 8), m = randoms(core::Dtype::fp32, 32, 4);
  b.write_vec(0, 0, a);
  b.write_vec(0, 100, m);
  b.load(0, ".queue 0\nMAX.fp32 @300, @0, @100, 8, BCAST 4\n.queue 1\nMAX.fp32 @400, @0, @100, 4\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const std::vector<uint8_t> p = b.read_vec(0, 300, 8), q = b.read_vec(0, 400, 4);
  for (uint32_t v = 0; v < 8; ++v)
    for (uint32_t e = 0; e < 80; ++e) {
      float x, y, got;
      std::memcpy(&x, &a[(v * 80 + e) * 4], 4);
      std::memcpy(&y, &m[((v % 4) * 80 + e) * 4], 4);
      std::memcpy(&got, &p[(v * 80 + e) * 4], 4);
      EXPECT_EQ(test::bits(got), test::bits(y > x ? y : x)) << "vector " << v << " lane " << e;
      if (v < 4) {
        std::memcpy(&got, &q[(v * 80 + e) * 4], 4);
        EXPECT_EQ(test::bits(got), test::bits(y > x ? y : x));
      }
    }
  EXPECT_EQ(b.chip(0).vxm_ops.get(), 2u);
}
