// The matrix unit (docs/isa.md "LW and MXM"): sub-operation arithmetic against
// an independent binary64 oracle, latencies, and the hardware errors of a
// wrong schedule.
#include <cstring>
#include <random>

#include "harness.h"
#include "ieee_oracle.h"
#include "models/core/config.h"
#include "models/core/dtype.h"
#include "sw/sched/checker.h"

using namespace fabricvp;
using test::Bench;

namespace {

std::vector<uint8_t> random_vectors(core::Dtype dt, uint64_t seed, uint32_t vectors) {
  std::vector<uint8_t> v(uint64_t(vectors) * tsp::kVectorBytes);
  core::random_elements(dt, seed, v.data(), v.size(), 0, 65504);
  return v;
}

/// Oracle of one fp16 sub-operation: binary64 products (exact), every sum
/// rounded to binary32 by the oracle's integer rounding.
std::vector<uint32_t> oracle_fp16(const uint8_t* in, const std::vector<uint8_t>& tile, uint32_t rows) {
  const auto f16 = test::oracle::format_of(core::Dtype::fp16);
  const auto f32 = test::oracle::format_of(core::Dtype::fp32);
  std::vector<uint32_t> out(320);
  for (uint32_t j = 0; j < 320; ++j) {
    double acc = 0.0;
    for (uint32_t k = 0; k < 160; ++k) {
      const double a = test::oracle::decode(f16, test::oracle::load(in + 2 * k, 16));
      const double w = k < rows ? test::oracle::decode(f16, test::oracle::load(&tile[(k * 320 + j) * 2], 16)) : 0.0;
      acc = test::oracle::decode(f32, test::oracle::round_to(core::Dtype::fp32, acc + a * w));
    }
    out[j] = test::oracle::round_to(core::Dtype::fp32, acc);
  }
  return out;
}

uint32_t word(const std::vector<uint8_t>& v, size_t i) {
  uint32_t x;
  std::memcpy(&x, &v[4 * i], 4);
  return x;
}

}  // namespace

TEST(Mxm, Fp16SubOperationsMatchABinary64OracleAndAccumulate) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> in = random_vectors(core::Dtype::fp16, 1, 16);
  const std::vector<uint8_t> w0 = random_vectors(core::Dtype::fp16, 2, 320);
  const std::vector<uint8_t> w1 = random_vectors(core::Dtype::fp16, 3, 320);
  b.write_vec(0, 0, in);
  b.write_vec(0, 1000, w0);
  b.write_vec(0, 1400, w1);
  // Unit 1 (planes 2, 3): tile 0 into w0, tile 1 into w1 once the first load is done;
  // 8 sub-operations at cycle 100, then 8 more accumulated onto the same results at 200.
  b.load(0,
         ".queue 5\nLW.fp16 m1.w0, @1000, 320\nWAIT 20\nLW.fp16 m1.w1, @1400, 320\n"
         "WAIT 100\nMXM.fp16 m1.w0, @2000, @0, 8\nWAIT 200\nMXM.fp16 m1.w1, @2000, @8, 8, ACC\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const tsp::Tsp& t = b.chip(0);
  EXPECT_EQ(t.last_write_ps(), b.clk().ps(200 + 7 + t.mxm_latency));
  EXPECT_EQ(t.mxm_subops.get(), 16u);
  EXPECT_EQ(t.weight_loads.get(), 2u);
  EXPECT_EQ(t.mxm_plane_cycles.get(), 32u);  // an fp16 unit is two planes
  const std::vector<uint8_t> out = b.read_vec(0, 2000, 8 * 4);
  for (uint32_t i = 0; i < 8; ++i) {
    const auto r0 = oracle_fp16(&in[i * 320], w0, 160), r1 = oracle_fp16(&in[(8 + i) * 320], w1, 160);
    for (uint32_t j = 0; j < 320; ++j) {
      const auto f32 = test::oracle::format_of(core::Dtype::fp32);
      const uint32_t want = test::oracle::round_to(core::Dtype::fp32,
                                                   test::oracle::decode(f32, r0[j]) + test::oracle::decode(f32, r1[j]));
      ASSERT_EQ(word(out, i * 320 + j), want) << "sub-operation " << i << " column " << j;
    }
  }
}

TEST(Mxm, Int8ProductsAreExactAndAShortTileReadsZeroRows) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> in = random_vectors(core::Dtype::int8, 4, 4);
  const std::vector<uint8_t> w = random_vectors(core::Dtype::int8, 5, 100);
  b.write_vec(0, 0, in);
  b.write_vec(0, 1000, w);
  b.write_vec(0, 1100, random_vectors(core::Dtype::int8, 6, 220));  // must not be loaded
  b.load(0, ".queue 7\nLW.int8 m3.w1, @1000, 100\nWAIT 50\nMXM.int8 m3.w1, @3000, @0, 4\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(50 + 3 + b.chip(0).mxm_latency));
  const std::vector<uint8_t> out = b.read_vec(0, 3000, 16);
  for (uint32_t i = 0; i < 4; ++i)
    for (uint32_t j = 0; j < 320; ++j) {
      int64_t sum = 0;
      for (uint32_t k = 0; k < 100; ++k)
        sum += int64_t(static_cast<int8_t>(in[i * 320 + k])) * static_cast<int8_t>(w[k * 320 + j]);
      ASSERT_EQ(static_cast<int32_t>(word(out, i * 320 + j)), sum) << i << " " << j;
    }
}

TEST(Mxm, ReadingAResultStillOnItsStreamIsAHardwareError) {
  // The deliberately wrong schedule of issue 15: the VXM reads an MXM result
  // 20 cycles after the MXM issued, 44 cycles before it lands.
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, random_vectors(core::Dtype::fp16, 1, 4));
  b.write_vec(0, 1000, random_vectors(core::Dtype::fp16, 2, 320));
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 4\n"
         ".queue 1\nWAIT 120\nADD.fp32 @3000, @2000, @2000, 4\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("still on its stream"), std::string::npos) << b.errors()[0].message;
  EXPECT_NE(b.errors()[0].message.find("MXM issued at cycle 100"), std::string::npos) << b.errors()[0].message;
}

TEST(Mxm, TheSameReadAfterTheResultLandedIsFine) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, random_vectors(core::Dtype::fp16, 1, 4));
  b.write_vec(0, 1000, random_vectors(core::Dtype::fp16, 2, 320));
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 4\n"
         ".queue 1\nWAIT 164\nADD.fp32 @3000, @2000, @2000, 4\n");  // vector 4i lands at 164 + i
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const std::vector<uint8_t> r = b.read_vec(0, 2000), d = b.read_vec(0, 3000);
  std::vector<uint8_t> want(320);
  core::add(core::Dtype::fp32, want.data(), r.data(), r.data(), 320);
  EXPECT_EQ(d, want);
}

TEST(Mxm, MxmBeforeItsWeightsAreInstalledIsAHardwareError) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 30\nMXM.fp16 m0.w0, @2000, @0, 4\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("before its weights are installed (cycle 44)"), std::string::npos)
      << b.errors()[0].message;
}

TEST(Mxm, LoadingWeightsAnMxmStillReadsIsAHardwareError) {
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nLW.int8 m2.w0, @1000, 320\nWAIT 100\nMXM.int8 m2.w0, @2000, @0, 50\n"
         ".queue 1\nWAIT 120\nLW.int8 m2.w0, @1000, 320\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("overwrites weights an MXM reads until cycle 150"), std::string::npos)
      << b.errors()[0].message;
}

TEST(Mxm, TwoOperationsOnOneUnitAtOnceAreAStructuralHazard) {
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 50\n"
         ".queue 1\nWAIT 120\nMXM.fp16 m0.w0, @3000, @0, 10\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("still streaming (until cycle 150)"), std::string::npos)
      << b.errors()[0].message;
}

TEST(Mxm, WeightsOfAnotherTypeOrUnitAreRefused) {
  Bench b(test::node_yaml(2));
  // fp16 unit 0 loads planes 0 and 1; int8 unit 1 (plane 1) finds no int8 weights there.
  b.load(0, ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.int8 m1.w0, @2000, @0, 4\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("holds no int8 weights of this unit"), std::string::npos)
      << b.errors()[0].message;
}

TEST(Mxm, AUnitThatDoesNotExistIsRefusedWhenTheProgramLoads) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nMXM.fp16 m2.w0, @2000, @0, 4\n");
  try {
    b.run();
    FAIL() << "expected a program error";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("MXM unit 2 does not exist: the chip has 2 fp16 units"), std::string::npos)
        << e.what();
  }
}

TEST(Mxm, AssemblerReadsAndWritesLwAndMxm) {
  const sw::Program p =
      sw::assemble(".queue 0\nLW.int8 m3.w1, [0,1,0,5], 100\nMXM.fp16 m1.w0, @2000, @7, 800, ACC\n", "x.s");
  ASSERT_EQ(p.queues[0].size(), 2u);
  const tsp::Instr& lw = p.queues[0][0];
  EXPECT_EQ(lw.op, tsp::Op::LW);
  EXPECT_EQ(lw.dtype, core::Dtype::int8);
  EXPECT_EQ(lw.port, 3u);
  EXPECT_EQ(lw.c, 1u);
  EXPECT_EQ(lw.count, 100u);
  const tsp::Instr& mx = p.queues[0][1];
  EXPECT_EQ(mx.op, tsp::Op::MXM);
  EXPECT_EQ(mx.a, 2000u);
  EXPECT_EQ(mx.b, 7u);
  EXPECT_EQ(mx.imm, 1u);
  EXPECT_EQ(sw::format_instr(mx), "MXM.fp16 m1.w0, [0,0,0,2000], [0,0,0,7], 800, ACC");
  sw::Program back = sw::assemble(sw::disassemble(p), "y.s");
  ASSERT_EQ(back.queues[0].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    back.queues[0][i].line = p.queues[0][i].line;  // the disassembly has its own line numbers
    EXPECT_EQ(back.queues[0][i], p.queues[0][i]);
  }
  test::expect_asm_error("LW.fp32 m0.w0, @0, 320", "needs a type suffix .fp16 or .int8");
  test::expect_asm_error("LW m0.w0, @0, 320", "needs a type suffix .fp16 or .int8");
  test::expect_asm_error("LW.fp16 m0.w2, @0, 320", "weight buffer 2 out of range");
  test::expect_asm_error("LW.fp16 u0, @0, 320", "expected an MXM unit and weight buffer mU.wB");
  test::expect_asm_error("LW.fp16 m0.w0, @0, 321", "at most 320 vectors");
  test::expect_asm_error("MXM.fp16 m0.w0, @0, @0, 4, ACCUMULATE", "fifth operand is ACC");
  test::expect_asm_error("MXM.int8 m0.w0, @720000, @0, 300", "run past the end of SRAM");
  test::expect_asm_error("ADD.int8 @0, @0, @0, 1", "ADD needs a type suffix");
}

TEST(Mxm, TheStaticCheckFindsTheSameFaultsBeforeARun) {
  Bench b(test::node_yaml(2));
  const sched::Machine m = groq::machine_of(*b.sys);
  std::vector<sw::Program> progs(2);
  progs[0] = sw::assemble(
      ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 30\nMXM.fp16 m0.w0, @2000, @0, 50\n"  // before installed
      ".queue 1\nWAIT 60\nMXM.fp16 m0.w0, @3000, @0, 10\n"                             // unit busy
      ".queue 2\nWAIT 70\nLW.fp16 m0.w0, @1000, 320\n",                                // weights in use
      "bad.s");
  const sched::CheckReport rep = sched::check_schedule(m, progs);
  EXPECT_EQ(rep.mxm_ops, 4u);
  std::string all;
  for (const auto& v : rep.violations) all += v.where + " @" + std::to_string(v.cycle) + ": " + v.what + "\n";
  EXPECT_NE(all.find("sys.node0.tsp0.m0 @30: MXM before its weights are installed (cycle 44)"), std::string::npos)
      << all;
  EXPECT_NE(all.find("@60: MXM while the unit is still streaming"), std::string::npos) << all;
  EXPECT_NE(all.find("@70: LW into w0 while an MXM reads it until cycle 80"), std::string::npos) << all;
  progs[0] = sw::assemble(".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 44\nMXM.fp16 m0.w0, @2000, @0, 50\n", "ok.s");
  EXPECT_TRUE(sched::check_schedule(m, progs).violations.empty());
}

TEST(Mxm, StridedInputsGiveTheResultsOfTheSameVectorsContiguous) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> in = random_vectors(core::Dtype::fp16, 7, 24);
  const std::vector<uint8_t> w = random_vectors(core::Dtype::fp16, 8, 320);
  b.write_vec(0, 0, in);
  b.write_vec(0, 1000, w);
  // The vectors STRIDE 3 reads, gathered: in[3i] at @100 + i, in[3i + 1] at @200 + i.
  std::vector<uint8_t> even(8 * 320), odd(8 * 320);
  for (uint32_t i = 0; i < 8; ++i) {
    std::memcpy(&even[i * 320], &in[3 * i * 320], 320);
    std::memcpy(&odd[i * 320], &in[(3 * i + 1) * 320], 320);
  }
  b.write_vec(0, 100, even);
  b.write_vec(0, 200, odd);
  // The same weights in both fp16 units: unit 0 reads strided inputs, unit 1 the gathered copies.
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 8, STRIDE 3\n"
         "WAIT 200\nMXM.fp16 m0.w0, @2000, @1, 8, ACC, STRIDE 3\n"
         ".queue 1\nLW.fp16 m1.w0, @1000, 320\nWAIT 100\nMXM.fp16 m1.w0, @3000, @100, 8\n"
         "WAIT 200\nMXM.fp16 m1.w0, @3000, @200, 8, ACC\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const tsp::Tsp& t = b.chip(0);
  EXPECT_EQ(t.last_write_ps(), b.clk().ps(200 + 7 + t.mxm_latency));  // timing as without a stride
  EXPECT_EQ(t.mxm_subops.get(), 32u);
  const std::vector<uint8_t> strided = b.read_vec(0, 2000, 8 * 4), contiguous = b.read_vec(0, 3000, 8 * 4);
  EXPECT_EQ(strided, contiguous);
  const auto f32 = test::oracle::format_of(core::Dtype::fp32);
  for (uint32_t i = 0; i < 8; ++i) {
    const auto r0 = oracle_fp16(&in[3 * i * 320], w, 160), r1 = oracle_fp16(&in[(3 * i + 1) * 320], w, 160);
    for (uint32_t j = 0; j < 320; ++j) {
      const uint32_t want = test::oracle::round_to(core::Dtype::fp32,
                                                   test::oracle::decode(f32, r0[j]) + test::oracle::decode(f32, r1[j]));
      ASSERT_EQ(word(strided, i * 320 + j), want) << "sub-operation " << i << " column " << j;
    }
  }
}

TEST(Mxm, Int8StridedInputsMayCrossBanksAndSlices) {
  Bench b(test::node_yaml(2));
  const uint32_t stride = 2 * 4096 + 1;  // next slice, one offset on
  const std::vector<uint8_t> in = random_vectors(core::Dtype::int8, 9, 3);
  const std::vector<uint8_t> w = random_vectors(core::Dtype::int8, 10, 320);
  for (uint32_t i = 0; i < 3; ++i)
    b.write_vec(0, 5 + i * stride, std::vector<uint8_t>(in.begin() + i * 320, in.begin() + (i + 1) * 320));
  b.write_vec(0, 6, random_vectors(core::Dtype::int8, 11, 1));  // between the inputs: never read
  b.write_vec(0, 1000, w);
  b.load(0, ".queue 0\nLW.int8 m2.w1, @1000, 320\nWAIT 50\nMXM.int8 m2.w1, @3000, @5, 3, stride 8193\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const std::vector<uint8_t> out = b.read_vec(0, 3000, 12);
  for (uint32_t i = 0; i < 3; ++i)
    for (uint32_t j = 0; j < 320; ++j) {
      int64_t sum = 0;
      for (uint32_t k = 0; k < 320; ++k)
        sum += int64_t(static_cast<int8_t>(in[i * 320 + k])) * static_cast<int8_t>(w[k * 320 + j]);
      ASSERT_EQ(static_cast<int32_t>(word(out, i * 320 + j)), sum) << i << " " << j;
    }
}

TEST(Mxm, AStridedInputOnAStreamIsAHardwareErrorButOneItStridesOverIsNot) {
  Bench b(test::node_yaml(2));
  // Unit 0's results [0,0,0,2000..2003] land at cycle 164. Unit 1 first reads
  // @1998 and @2006 (a range spanning them, none of them read), then @1996,
  // @1998 and @2000, the last at cycle 112 + 2.
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 1\n"
         ".queue 1\nLW.fp16 m1.w0, @1000, 320\nWAIT 110\nMXM.fp16 m1.w0, @3000, @1998, 2, STRIDE 8\n"
         "WAIT 112\nMXM.fp16 m1.w0, @3100, @1996, 3, STRIDE 2\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("MXM reads [0,0,0,2000] at cycle 114, before the MXM issued at cycle 100 "
                                       "writes its result there (cycle 164)"),
            std::string::npos)
      << b.errors()[0].message;
}

namespace {
struct MxmBadBinary {
  const char* name;
  void (*spoil)(tsp::Instr&);
  const char* what;
};
void PrintTo(const MxmBadBinary& b, std::ostream* os) { *os << b.name; }
class MxmBinary : public ::testing::TestWithParam<MxmBadBinary> {};
}  // namespace

TEST_P(MxmBinary, IsRefusedWhenTheChipLoadsIt) {
  tsp::Instr in;
  in.op = tsp::Op::MXM;
  in.dtype = core::Dtype::fp16;
  in.a = 2000;
  in.b = 0;
  in.count = 4;
  in.line = 9;
  GetParam().spoil(in);
  const std::string err = test::refusal_at_load(in);
  EXPECT_NE(err.find(std::string("queue 4 instruction 0 (source line 9): MXM ") + GetParam().what), std::string::npos)
      << (err.empty() ? "accepted" : err);
}

INSTANTIATE_TEST_SUITE_P(
    Mxm, MxmBinary,
    ::testing::Values(MxmBadBinary{"StridePastSram",
                                   [](tsp::Instr& i) {
                                     i.b = 717896;
                                     i.imm = tsp::mxm_imm(false, 1000);
                                   },
                                   "inputs [1,43,1,1096] + 4 vectors 1000 apart run past the end of SRAM"},
                      MxmBadBinary{"ImmediateBitsSet", [](tsp::Instr& i) { i.imm = 3; },
                                   "immediate bits 1-31 must be 0"}),
    [](const ::testing::TestParamInfo<MxmBadBinary>& p) { return std::string(p.param.name); });

TEST(HostInterface, PcieWritesLandAtTheLinkRateAfterTheLatency) {
  Bench b(test::node_yaml(2));
  const tsp::Tsp& t = b.chip(0);
  // Gen4 x16: 16 GT/s x 16 lanes, 128b/130b; a vector is two TLPs (256 + 64 B) of 24 B overhead each.
  EXPECT_EQ(t.pcie_vector_bytes(), 368u);
  const core::SerialRate want(368 * 8, 16, 16.0 * 128 / 130);
  EXPECT_EQ(t.pcie().rate().ps(100), want.ps(100));
  EXPECT_NEAR(t.pcie().rate().payload_GBps(320), 27.4, 0.05);
  const std::vector<uint8_t> data = test::pattern(3, 100);
  const uint64_t done = b.sys->host.dma(0, 500 * 320, data.data(), data.size(), 2000000);
  EXPECT_EQ(done, 2000000 + want.ps(100) + 1000000);  // ready at 2 us, 1 us latency
  // A second write queues behind the first on the link.
  const uint64_t second = b.sys->host.dma(0, 700 * 320, data.data(), 320, 0);
  EXPECT_EQ(second, 2000000 + want.ps(101) + 1000000);
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.read_vec(0, 500, 100), data);
  EXPECT_EQ(t.last_write_ps(), second);
  EXPECT_EQ(t.pcie().transfer_count(), 2u);
}

TEST(HostInterface, WritesOutsideSramOrNotWholeVectorsAreRefused) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> data = test::pattern(3, 2);
  EXPECT_THROW(b.sys->host.dma(0, UINT64_MAX - 575, data.data(), 640, 0), std::runtime_error);  // would wrap
  EXPECT_THROW(b.sys->host.dma(0, tsp::kSramBytes - 320, data.data(), 640, 0), std::runtime_error);
  EXPECT_THROW(b.sys->host.dma(0, 100, data.data(), 320, 0), std::runtime_error);  // not a vector boundary
  EXPECT_THROW(b.sys->host.dma(0, 0, data.data(), 100, 0), std::runtime_error);    // not whole vectors
  EXPECT_EQ(b.chip(0).pcie().transfer_count(), 0u);
}

TEST(HostInterface, ReadingAVectorStillOnThePcieLinkIsAHardwareError) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> data = test::pattern(3, 10);
  b.sys->host.dma(0, 0, data.data(), data.size(), 0);  // lands from ~1.01 us = cycle ~910
  b.load(0, ".queue 0\nWAIT 500\nADD.int32 @100, @0, @0, 10\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("still on the PCIe link"), std::string::npos) << b.errors()[0].message;
}

TEST(HostInterface, HostwWritesToHostMemoryAtTheLinkRateAfterTheLatency) {
  Bench b(test::node_yaml(2));
  const tsp::Tsp& t = b.chip(0);
  const std::vector<uint8_t> data = test::pattern(5, 30);
  b.write_vec(0, 200, data);
  // Issued at cycle 100; the next HOSTW waits until the link is idle again.
  b.load(0, ".queue 0\nWAIT 100\nHOSTW @200, 30, 1000\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  std::vector<uint8_t> got(data.size());
  EXPECT_TRUE(b.sys->host.received(0, 1000 * 320, got.data(), got.size()));
  EXPECT_EQ(got, data);
  EXPECT_FALSE(b.sys->host.received(0, 1030 * 320, got.data(), 320));  // never written
  const uint64_t start = t.clock().ps(100);
  EXPECT_EQ(t.last_write_ps(), start + t.pcie_out().rate().ps(30) + 1000000);
  EXPECT_EQ(t.pcie_out().transfer_count(), 1u);
  EXPECT_EQ(t.pcie().transfer_count(), 0u);  // the other direction
}

TEST(HostInterface, HostwOnALinkStillSendingIsAHardwareError) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nHOSTW @0, 10, 0\nHOSTW @10, 1, 10\n");  // 10 vectors take ~117 ns = ~105 cycles
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("PCIe link to the host is still sending"), std::string::npos)
      << b.errors()[0].message;
}

TEST(HostInterface, HostwOfAResultStillOnItsStreamIsAHardwareError) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @0, @2000, 1\nHOSTW @0, 4, 0\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("HOSTW reads"), std::string::npos) << b.errors()[0].message;
}

TEST(Asm, HostwRoundTripsAndBadOperandsAreRefused) {
  const sw::Program p = sw::assemble(".queue 3\nHOSTW @7, 12, 4096\n", "t.s");
  ASSERT_EQ(p.queues.size(), 4u);
  const tsp::Instr& in = p.queues[3][0];
  EXPECT_EQ(in.op, tsp::Op::HOSTW);
  EXPECT_EQ(in.a, 7u);
  EXPECT_EQ(in.count, 12u);
  EXPECT_EQ(in.imm, 4096u);
  EXPECT_EQ(tsp::Instr::decode(in.encode().data()), in);
  EXPECT_EQ(sw::format_instr(in), "HOSTW " + tsp::VecAddr::from_linear(7).str() + ", 12, 4096");
  test::expect_asm_error("HOSTW @7, 0, 1\n", "count");
  test::expect_asm_error("HOSTW @7, 12\n", "HOSTW");
  test::expect_asm_error("HOSTW.fp16 @7, 12, 1\n", "HOSTW");
  test::expect_asm_error("HOSTW @720890, 12, 1\n", "past the end of SRAM");
}
