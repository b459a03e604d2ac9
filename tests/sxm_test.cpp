// The SXM's TRANSPOSE (docs/isa.md "TRANSPOSE"): one lane of n strided
// vectors gathered into one vector, against an expectation computed here from
// the source bytes; its read, write and unit timing; its hardware errors and
// the assembler's refusals.
#include <fmt/format.h>

#include <cstring>

#include "harness.h"
#include "models/core/config.h"
#include "models/core/dtype.h"
#include "sw/sched/checker.h"
#include "sw/sched/engine.h"

using namespace fabricvp;
using test::Bench;

namespace {

std::vector<uint8_t> randoms(core::Dtype dt, uint64_t seed, uint32_t vectors) {
  std::vector<uint8_t> v(uint64_t(vectors) * tsp::kVectorBytes);
  core::random_elements(dt, seed, v.data(), v.size(), 0, 1000);
  return v;
}

/// What TRANSPOSE.dt of the vectors in `src` (the first at index 0) must
/// write: element k = element `lane` of vector k * stride, zeros from n on.
std::vector<uint8_t> gathered(core::Dtype dt, const std::vector<uint8_t>& src, uint32_t n, uint32_t lane,
                              uint32_t stride) {
  const uint32_t es = core::dtype_bytes(dt);
  std::vector<uint8_t> out(tsp::kVectorBytes, 0);
  for (uint32_t k = 0; k < n; ++k)
    for (uint32_t b = 0; b < es; ++b)
      out[k * es + b] = src.at(uint64_t(k) * stride * tsp::kVectorBytes + uint64_t(lane) * es + b);
  return out;
}

}  // namespace

TEST(Sxm, TransposeGathersOneLaneOfEveryTypeAndZeroFillsTheRest) {
  Bench b(test::node_yaml(2));
  struct Case {
    core::Dtype dt;
    uint32_t src, n, lane, stride, dst;
  };
  // Full and partial gathers, stride 1 and 2, for fp16, fp32 and int8 (and one bf16 and int32).
  const Case cases[] = {
      {core::Dtype::fp16, 0, 160, 7, 1, 50000},      {core::Dtype::fp16, 1000, 100, 159, 2, 50001},
      {core::Dtype::fp32, 2000, 80, 79, 2, 50002},   {core::Dtype::fp32, 2400, 33, 0, 1, 50003},
      {core::Dtype::int8, 3000, 320, 319, 1, 50004}, {core::Dtype::int8, 4000, 200, 5, 2, 50005},
      {core::Dtype::bf16, 5000, 160, 80, 2, 50006},  {core::Dtype::int32, 6000, 1, 3, 1, 50007},
  };
  std::string prog = ".queue 3\n";
  std::vector<std::vector<uint8_t>> srcs;
  uint64_t cycle = 10, vectors = 0;
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    srcs.push_back(randoms(k.dt, 100 + i, (k.n - 1) * k.stride + 1));
    b.write_vec(0, k.src, srcs.back());
    b.write_vec(0, k.dst, test::pattern(7 + static_cast<uint32_t>(i)));  // overwritten whole, zeros included
    prog += fmt::format("WAIT {}\nTRANSPOSE.{} @{}, @{}, {}, {}{}\n", cycle, core::dtype_name(k.dt), k.dst, k.src, k.n,
                        k.lane, k.stride == 1 ? std::string() : fmt::format(", {}", k.stride));
    cycle += 10;
    vectors += k.n;
  }
  b.load(0, prog);
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& k = cases[i];
    EXPECT_EQ(b.read_vec(0, k.dst), gathered(k.dt, srcs[i], k.n, k.lane, k.stride))
        << "case " << i << ": TRANSPOSE." << core::dtype_name(k.dt) << " n " << k.n << " lane " << k.lane << " stride "
        << k.stride;
  }
  const tsp::Tsp& t = b.chip(0);
  EXPECT_EQ(t.sxm_ops.get(), std::size(cases));
  EXPECT_EQ(t.sxm_vectors.get(), vectors);
  EXPECT_EQ(t.vxm_ops.get(), 0u);  // not a VXM operation
  EXPECT_EQ(t.alu_busy_cycles.get(), 0u);
  // The last one (int32, n = 1) issued at cycle 80: written at 80 + 0 + sxm_latency.
  EXPECT_EQ(t.last_write_ps(), b.clk().ps(80 + t.sxm_latency));
}

TEST(Sxm, SourcesAreReadAtIssuePlusKOverRateAndTheResultIsReadableAtTheDocumentedCycle) {
  Bench b(test::node_yaml(2));
  const tsp::Tsp& t = b.chip(0);
  ASSERT_EQ(t.sxm_vectors_per_cycle.get(), 16u);
  ASSERT_EQ(t.sxm_latency.get(), 16u);
  const std::vector<uint8_t> src = randoms(core::Dtype::fp16, 1, 160);
  b.write_vec(0, 0, src);
  std::vector<uint8_t> newer = randoms(core::Dtype::fp16, 2, 2);
  b.write_vec(0, 500, newer);
  // TRANSPOSE at cycle 20: vector k is read at 20 + k / 16, so vectors 16..31 at
  // 21. A COPY (written 16 cycles after issue) overwrites vector 16 at cycle 21
  // (writes before reads: the TRANSPOSE sees it). The result is readable at
  // 20 + 159 / 16 + 16 = 45: a COPY of it issued at 45 reads it. (A read a
  // cycle too early is a hardware error: the next two tests.)
  b.load(0,
         ".queue 0\nWAIT 5\nCOPY @16, @500, 1\n"
         ".queue 1\nWAIT 20\nTRANSPOSE.fp16 @3000, @0, 160, 9\n"
         ".queue 2\nWAIT 45\nCOPY @3002, @3000, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  std::vector<uint8_t> seen = src;
  std::memcpy(&seen[16 * 320], &newer[0], 320);
  const std::vector<uint8_t> want = gathered(core::Dtype::fp16, seen, 160, 9, 1);
  EXPECT_EQ(b.read_vec(0, 3000), want);
  EXPECT_NE(want, gathered(core::Dtype::fp16, src, 160, 9, 1));  // the overwrite of vector 16 shows
  EXPECT_EQ(b.read_vec(0, 3002), want) << "read at the cycle the result is written";
  EXPECT_EQ(t.last_write_ps(), b.clk().ps(45 + 16));  // the COPY
}

TEST(Sxm, ASourceReadBeforeAnAluResultLandsThereIsAHardwareError) {
  // Vector 32 is read at cycle 22; a COPY issued at 7 writes it at 23.
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nWAIT 7\nCOPY @32, @501, 1\n"
         ".queue 1\nWAIT 20\nTRANSPOSE.fp16 @3000, @0, 160, 9\n");
  b.run();
  test::expect_hardware_error(b,
                              "TRANSPOSE reads [0,0,0,32] at cycle 22, before the COPY issued at cycle 7 "
                              "writes its result there (cycle 23)");
}

TEST(Sxm, ReadingTheResultACycleBeforeItIsWrittenIsAHardwareError) {
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 1\nWAIT 20\nTRANSPOSE.fp16 @3000, @0, 160, 9\n"
         ".queue 2\nWAIT 44\nCOPY @3001, @3000, 1\n");
  b.run();
  test::expect_hardware_error(b,
                              "COPY reads [0,0,0,3000] at cycle 44, before the TRANSPOSE issued at cycle 20 "
                              "writes its result there (cycle 45)");
}

TEST(Sxm, AUnitIsFreeAgainAfterCeilNOverRateCycles) {
  // n = 33 occupies a unit for 3 cycles: two at cycle 10, two more at 13 are fine.
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nWAIT 10\nTRANSPOSE.fp32 @1000, @0, 33, 1\nWAIT 13\nTRANSPOSE.fp32 @1001, @0, 33, 2\n"
         ".queue 1\nWAIT 10\nTRANSPOSE.fp32 @1002, @0, 33, 3\nWAIT 13\nTRANSPOSE.fp32 @1003, @0, 1, 4\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(0).sxm_ops.get(), 4u);
}

TEST(Sxm, AThirdTransposeWhileBothUnitsAreBusyIsAHardwareError) {
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nWAIT 10\nTRANSPOSE.fp32 @1000, @0, 33, 1\n"
         ".queue 1\nWAIT 10\nTRANSPOSE.fp32 @1001, @0, 33, 2\n"
         ".queue 2\nWAIT 12\nTRANSPOSE.fp32 @1002, @0, 1, 3\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  const std::string& m = b.errors()[0].message;
  EXPECT_NE(m.find("TRANSPOSE issued while all 2 SXM transpose units are busy (next free at cycle 13)"),
            std::string::npos)
      << m;
  EXPECT_EQ(b.errors()[0].cycle, 12);
}

TEST(Sxm, ThreeTransposesInOneCycleOnTwoUnitsAreAStructuralHazard) {
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nWAIT 10\nTRANSPOSE.fp16 @1000, @0, 16, 1\n"
         ".queue 1\nWAIT 10\nTRANSPOSE.fp16 @1001, @0, 16, 2\n"
         ".queue 2\nWAIT 10\nTRANSPOSE.fp16 @1002, @0, 16, 3\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  const std::string& m = b.errors()[0].message;
  EXPECT_NE(m.find("SXM transpose units are busy"), std::string::npos) << m;
  EXPECT_NE(b.errors()[0].where.find("queue2"), std::string::npos) << b.errors()[0].where;
}

TEST(Sxm, ReadingAnMxmResultStillOnItsStreamIsAHardwareError) {
  // MXM at cycle 100 writes result vectors 2000 + 4i + q at 100 + i + 64. A
  // TRANSPOSE at 120 with stride 4 reads vector 2000 + 4k at 120 + k / 16:
  // vector 2000 lands at 164, so the first read is 44 cycles early.
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, randoms(core::Dtype::fp16, 1, 4));
  b.write_vec(0, 1000, randoms(core::Dtype::fp16, 2, 320));
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 4\n"
         ".queue 1\nWAIT 120\nTRANSPOSE.fp32 @3000, @1990, 4, 0, 10\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  const std::string& m = b.errors()[0].message;
  EXPECT_NE(m.find("TRANSPOSE reads [0,0,0,2000] at cycle 120"), std::string::npos) << m;
  EXPECT_NE(m.find("still on its stream"), std::string::npos) << m;
  EXPECT_NE(m.find("MXM issued at cycle 100"), std::string::npos) << m;
}

TEST(Sxm, TheSameGatherAfterTheResultsLandedIsFine) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, randoms(core::Dtype::fp16, 1, 4));
  b.write_vec(0, 1000, randoms(core::Dtype::fp16, 2, 320));
  // Vectors 2000, 2004, 2008, 2012 land at 164..167; read at 167 (k / 16 = 0).
  b.load(0,
         ".queue 0\nLW.fp16 m0.w0, @1000, 320\nWAIT 100\nMXM.fp16 m0.w0, @2000, @0, 4\n"
         ".queue 1\nWAIT 167\nTRANSPOSE.fp32 @3000, @2000, 4, 0, 4\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.read_vec(0, 3000), gathered(core::Dtype::fp32, b.read_vec(0, 2000, 13), 4, 0, 4));
}

TEST(Sxm, AssemblerReadsAndWritesTransposeAndRefusesBadOperands) {
  const sw::Program p =
      sw::assemble(".queue 0\nTRANSPOSE.fp16 [0,1,0,5], @7, 160, 159, 3\ntranspose.int8 @100, @200, 320, 0\n", "x.s");
  ASSERT_EQ(p.queues[0].size(), 2u);
  const tsp::Instr& t = p.queues[0][0];
  EXPECT_EQ(t.op, tsp::Op::TRANSPOSE);
  EXPECT_EQ(static_cast<int>(t.op), 22);
  EXPECT_EQ(t.dtype, core::Dtype::fp16);
  EXPECT_EQ(t.a, (tsp::VecAddr{0, 1, 0, 5}.linear()));
  EXPECT_EQ(t.b, 7u);
  EXPECT_EQ(t.c, 3u);
  EXPECT_EQ(t.count, 160u);
  EXPECT_EQ(t.imm, 159u);
  EXPECT_EQ(p.queues[0][1].c, 1u);  // stride omitted: 1
  EXPECT_EQ(std::string(tsp::op_name(t.op)), "TRANSPOSE");
  EXPECT_EQ(sw::format_instr(t), "TRANSPOSE.fp16 [0,1,0,5], [0,0,0,7], 160, 159, 3");
  EXPECT_EQ(sw::format_instr(p.queues[0][1]), "TRANSPOSE.int8 [0,0,0,100], [0,0,0,200], 320, 0, 1");
  for (const tsp::Instr& in : p.queues[0]) EXPECT_EQ(tsp::Instr::decode(in.encode().data()), in);
  sw::Program back = sw::assemble(sw::disassemble(p), "y.s");
  ASSERT_EQ(back.queues[0].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    back.queues[0][i].line = p.queues[0][i].line;  // the disassembly has its own line numbers
    EXPECT_EQ(back.queues[0][i], p.queues[0][i]);
  }
  test::expect_asm_error("TRANSPOSE.fp16 @0, @1, 0, 0", "TRANSPOSE of 0 vectors out of range: n must be in [1, 160]");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @1, 161, 0", "TRANSPOSE of 161 vectors out of range");
  test::expect_asm_error("TRANSPOSE.fp32 @0, @1, 81, 0", "n must be in [1, 80]");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @1, 4, 160", "lane 160 out of range: a fp16 vector has 160 lanes");
  test::expect_asm_error("TRANSPOSE.int8 @0, @1, 4, 320", "lane 320 out of range: a int8 vector has 320 lanes");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @1, 4, 1, 0", "TRANSPOSE stride must be at least 1");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @1, 4", "TRANSPOSE takes 4 or 5 operands");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @1, 4, 1, 1, 1", "TRANSPOSE takes 4 or 5 operands");
  test::expect_asm_error("TRANSPOSE @0, @1, 4, 1", "TRANSPOSE needs a type suffix");
  test::expect_asm_error("TRANSPOSE.fp64 @0, @1, 4, 1", "TRANSPOSE needs a type suffix");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @720000, 10, 1, 100", "runs past the end of SRAM");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @0, 2, 1, 720896", "stride 720896 out of range");
  test::expect_asm_error("TRANSPOSE.fp16 @0, @1, -1, 1", "expected vector count");
}

struct BadBinary {
  const char* name;
  void (*spoil)(tsp::Instr&);
  const char* what;
};

void PrintTo(const BadBinary& b, std::ostream* os) { *os << b.name; }

class SxmBinary : public ::testing::TestWithParam<BadBinary> {};

TEST_P(SxmBinary, IsRefusedWhenTheChipLoadsIt) {
  tsp::Instr in;
  in.op = tsp::Op::TRANSPOSE;
  in.dtype = core::Dtype::fp16;
  in.a = 100;
  in.b = 0;
  in.c = 1;
  in.count = 16;
  in.line = 9;
  GetParam().spoil(in);
  const std::string err = test::refusal_at_load(in);
  EXPECT_NE(err.find(std::string("queue 4 instruction 0 (source line 9): TRANSPOSE ") + GetParam().what),
            std::string::npos)
      << (err.empty() ? "accepted" : err);
}

INSTANTIATE_TEST_SUITE_P(
    Sxm, SxmBinary,
    ::testing::Values(BadBinary{"NTooLarge", [](tsp::Instr& i) { i.count = 161; },
                                "of 161 vectors: n must be in [1, 160]"},
                      BadBinary{"NZero", [](tsp::Instr& i) { i.count = 0; }, "of 0 vectors"},
                      BadBinary{"LaneTooLarge", [](tsp::Instr& i) { i.imm = 160; }, "lane 160 does not exist"},
                      BadBinary{"StrideZero", [](tsp::Instr& i) { i.c = 0; }, "stride must be at least 1"},
                      BadBinary{"NoType", [](tsp::Instr& i) { i.dtype = core::Dtype::none; }, "has no valid data type"},
                      BadBinary{"PastSram", [](tsp::Instr& i) { i.c = 100000; }, "runs past the end of SRAM"}),
    [](const ::testing::TestParamInfo<BadBinary>& p) { return std::string(p.param.name); });

TEST(Sxm, TheEngineSerializesTransposesOnOneUnitAndPredictsTheirCompletion) {
  Bench b(test::node_yaml(2, "  node0:\n    tsp*:\n      sxm_units: 1\n"));
  const sched::Machine m = groq::machine_of(*b.sys);
  const sched::ChipSpec& s = m.chips[0];
  ASSERT_EQ(s.sxm_units, 1u);
  ASSERT_EQ(s.sxm_rate, 16u);
  ASSERT_EQ(s.sxm_latency, 16u);
  const std::vector<uint8_t> src = randoms(core::Dtype::fp16, 4, 80);
  b.write_vec(0, 0, src);
  sched::Engine eng(m);
  // n = 40 occupies the unit for ceil(40 / 16) = 3 cycles: the second waits for it.
  const uint64_t c0 = eng.transpose(0, 10, core::Dtype::fp16, 1000, 0, 40, 3, 2);
  const uint64_t c1 = eng.transpose(0, 10, core::Dtype::fp16, 1001, 1, 40, 150, 2);
  EXPECT_EQ(c0, 10u);
  EXPECT_EQ(c1, 13u);
  EXPECT_EQ(eng.completion_ps(), s.clock.ps(13 + 39 / 16 + 16));
  // A short one fits after them; none fits inside their reservations.
  EXPECT_EQ(eng.transpose(0, 11, core::Dtype::fp16, 1002, 0, 1, 0, 1), 16u);
  const std::vector<sw::Program> progs = eng.programs();
  const uint32_t queue = 2 * static_cast<uint32_t>(s.ports.size()) + s.alus + s.mxm_planes;  // after the MXM queues
  ASSERT_EQ(progs[0].queues.size(), queue + 1);
  EXPECT_EQ(sw::disassemble(progs[0]).substr(sw::disassemble(progs[0]).find(".queue")),
            fmt::format(".queue {}\n    WAIT 10\n    TRANSPOSE.fp16 [0,0,0,1000], [0,0,0,0], 40, 3, 2\n    WAIT 13\n"
                        "    TRANSPOSE.fp16 [0,0,0,1001], [0,0,0,1], 40, 150, 2\n    WAIT 16\n"
                        "    TRANSPOSE.fp16 [0,0,0,1002], [0,0,0,0], 1, 0, 1\n",
                        queue));
  const sched::CheckReport rep = sched::check_schedule(m, progs);
  EXPECT_TRUE(rep.violations.empty()) << rep.violations[0].what;
  EXPECT_EQ(rep.sxm_ops, 3u);
  b.load(0, sw::disassemble(progs[0]));
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(0).last_write_ps(), eng.completion_ps());
  EXPECT_EQ(b.read_vec(0, 1000), gathered(core::Dtype::fp16, src, 40, 3, 2));
  EXPECT_EQ(b.read_vec(0, 1001), gathered(core::Dtype::fp16, {src.begin() + 320, src.end()}, 40, 150, 2));
}

TEST(Sxm, TheStaticCheckCountsTransposesAndFindsTooManyAtOnce) {
  Bench b(test::node_yaml(2));
  const sched::Machine m = groq::machine_of(*b.sys);
  std::vector<sw::Program> progs(2);
  progs[0] = sw::assemble(
      ".queue 0\nWAIT 10\nTRANSPOSE.fp16 @1000, @0, 40, 1\n"  // cycles [10, 13)
      ".queue 1\nWAIT 11\nTRANSPOSE.fp16 @1001, @0, 16, 1\n"  // [11, 12)
      ".queue 2\nWAIT 11\nTRANSPOSE.fp16 @1002, @0, 1, 1\n",  // a third at 11
      "bad.s");
  const sched::CheckReport rep = sched::check_schedule(m, progs);
  EXPECT_EQ(rep.sxm_ops, 3u);
  ASSERT_EQ(rep.violations.size(), 1u);
  EXPECT_EQ(rep.violations[0].where, "sys.node0.tsp0.sxm");
  EXPECT_EQ(rep.violations[0].cycle, 11u);
  EXPECT_EQ(rep.violations[0].what, "3 TRANSPOSEs at once; the chip has 2 SXM units");
  progs[0] = sw::assemble(
      ".queue 0\nWAIT 10\nTRANSPOSE.fp16 @1000, @0, 40, 1\n"
      ".queue 1\nWAIT 11\nTRANSPOSE.fp16 @1001, @0, 16, 1\n"
      ".queue 2\nWAIT 12\nTRANSPOSE.fp16 @1002, @0, 1, 1\n",
      "ok.s");
  EXPECT_TRUE(sched::check_schedule(m, progs).violations.empty());
}
