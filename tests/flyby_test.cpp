// VXM fly-by (docs/isa.md "Fly-by", seed 000 §5.5): instructions chained
// through the vector ALUs in one pass. The chain computes exactly what its
// instructions compute one at a time, writes only its last result, lands it
// add_latency + (k - 1) * fly_latency after each read, takes one ALU per
// instruction, and a malformed chain is refused by the assembler and by the
// chip.
#include <cstring>

#include "harness.h"
#include "models/tsp/vxm.h"

using namespace fabricvp;
using test::Bench;

namespace {

std::vector<uint8_t> floats(uint64_t seed, uint32_t vectors, bool positive = false) {
  std::vector<uint8_t> out(vectors * tsp::kVectorBytes);
  uint64_t s = seed;
  for (size_t i = 0; i < out.size(); i += 4) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    float f = static_cast<float>((s >> 40) % 20000) / 100.0f - (positive ? 0.0f : 100.0f) + 0.5f;
    std::memcpy(&out[i], &f, 4);
  }
  return out;
}

// The Cholesky step's fly-bys: (S - U) * mask * r, and rsqrt(splat(S - U)).
const char* const kChain =
    "SUB.fp32 -, @0, @100, 4\n"
    "MUL.fp32 -, FLY, @200, 4\n"
    "MUL.fp32 @300, FLY, @400, 4, BCAST\n";
const char* const kApart =
    "SUB.fp32 @1000, @0, @100, 4\n"
    "WAIT 30\n"
    "MUL.fp32 @1100, @1000, @200, 4\n"
    "WAIT 60\n"
    "MUL.fp32 @1200, @1100, @400, 4, BCAST\n";

/// kChain's operands on chip 0: S @0, U @100, the mask @200, r @400 (positive S and r).
void write_chain_operands(Bench& b) {
  b.write_vec(0, 0, floats(1, 4, true));
  b.write_vec(0, 100, floats(2, 4));
  b.write_vec(0, 200, floats(3, 4));
  b.write_vec(0, 400, floats(4, 1, true));
}

}  // namespace

TEST(FlyBy, AChainComputesItsInstructionsResultsAndWritesOnlyTheLast) {
  Bench b(test::node_yaml(2));
  write_chain_operands(b);
  b.write_vec(0, 500, floats(5, 1, true));
  const std::vector<uint8_t> zero_before = b.read_vec(0, 0, 1);
  b.load(0, std::string(".queue 0\n") + kChain + ".queue 1\n" + kApart +
                ".queue 2\nWAIT 10\nSUB.fp32 -, @0, @100, 1\nSPLAT.fp32 -, FLY, 5, 1\nRSQRT.fp32 @600, FLY, 1\n"
                ".queue 3\nWAIT 100\nSUB.fp32 @700, @0, @100, 1\nWAIT 120\nSPLAT.fp32 @710, @700, 5, 1\n"
                "WAIT 140\nRSQRT.fp32 @720, @710, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.read_vec(0, 300, 4), b.read_vec(0, 1200, 4));
  EXPECT_EQ(b.read_vec(0, 600, 1), b.read_vec(0, 720, 1));
  EXPECT_EQ(b.read_vec(0, 0, 1), zero_before);  // the passed-on results are not written (their dst field is 0)
  // 3 + 3 + 3 + 3 instructions; two fly-bys chained 2 + 2 of them.
  EXPECT_EQ(b.chip(0).vxm_ops.get(), 12u);
  EXPECT_EQ(b.chip(0).vxm_chained.get(), 4u);
  EXPECT_EQ(b.chip(0).alu_busy_cycles.get(), 3u * 4 + 3 * 1 + 3 * 4 + 3 * 1);
}

// k = 3 instructions, n = 4: result i lands at cycle i + 16 + 2 * 4 (the
// defaults add_latency 16, fly_latency 4): an ADD reading it from cycle 24 on
// reads every vector of the result (twice each: 2x, exact).
TEST(FlyBy, TheLastResultLandsAddLatencyPlusFlyLatencyPerChainedInstruction) {
  Bench b(test::node_yaml(2));
  write_chain_operands(b);
  b.load(0, std::string(".queue 0\n") + kChain + ".queue 1\nWAIT 24\nADD.fp32 @900, @300, @300, 4\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(24 + 3 + 16));
  const std::vector<uint8_t> r = b.read_vec(0, 300, 4), twice = b.read_vec(0, 900, 4);
  for (uint32_t e = 0; e < 320; ++e) {
    float x, y;
    std::memcpy(&x, &r[4 * e], 4);
    std::memcpy(&y, &twice[4 * e], 4);
    EXPECT_NE(x, 0.0f);
    EXPECT_EQ(y, 2 * x) << "lane " << e;
  }
}

TEST(FlyBy, ReadingTheResultACycleBeforeItLandsIsAHardwareError) {
  Bench b(test::node_yaml(2));
  b.load(0, std::string(".queue 0\n") + kChain + ".queue 1\nWAIT 23\nADD.fp32 @900, @300, @300, 4\n");
  b.run();
  test::expect_hardware_error(b,
                              "ADD reads [0,0,0,300] at cycle 23, before the fly-by issued at cycle 0 writes "
                              "its result there (cycle 24)");
}

TEST(FlyBy, EveryInstructionTakesAnAluAndTooFewFreeIsAHardwareError) {
  // Four ALUs: two long ADDs leave two free at cycle 5, too few for three.
  Bench b(test::node_yaml(2));
  b.load(0,
         ".queue 0\nADD.fp32 @2000, @3000, @3000, 100\n.queue 1\nADD.fp32 @2200, @3000, @3000, 100\n"
         ".queue 2\nWAIT 5\n" +
             std::string(kChain));
  b.run();
  test::expect_hardware_error(b, "a fly-by of 3 instructions issued while 2 of the 4 vector ALUs are free");
}

TEST(FlyBy, MalformedChainsAreRefusedByTheAssembler) {
  test::expect_asm_error("SUB.fp32 -, @0, @1, 4", "passes its result on (FLY-out) but is its queue's last instruction");
  test::expect_asm_error("MUL.fp32 @5, FLY, @1, 4", "no FLY-out instruction precedes it");
  test::expect_asm_error("NARROW.fp16 -, @0, 1", "NARROW cannot pass its result on in a fly-by");
  test::expect_asm_error("WIDEN.fp16 @0, FLY, 1", "WIDEN cannot take a fly-by's result");
  auto refused = [](const std::string& text, const std::string& what) {
    try {
      sw::assemble(".queue 0\n" + text, "bad.s");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused("SUB.fp32 -, @0, @1, 4\nMUL.fp32 @9, FLY, @2, 2\n", "runs 2 steps of fp32 but the fly-by it joins runs 4");
  refused("SUB.fp32 -, @0, @1, 4\nMUL.int32 @9, FLY, @2, 4\n", "runs 4 steps of int32 but the fly-by it joins");
  refused("SUB.fp32 -, @0, @1, 4\nWAIT 9\nMUL.fp32 @9, FLY, @2, 4\n", "WAIT follows a SUB that passes its result on");
  refused("SUB.fp32 -, @0, @1, 4\nMUL.fp32 @9, @3, @2, 4\n", "MUL follows a SUB that passes its result on");
  // What the assembler accepts disassembles to text that assembles to the same binary.
  const sw::Program p = sw::assemble(std::string(".queue 0\n") + kChain, "ok.s");
  const sw::Program again = sw::assemble(sw::disassemble(p), "again.s");
  ASSERT_EQ(again.queues.size(), p.queues.size());
  for (size_t i = 0; i < p.queues[0].size(); ++i) {
    tsp::Instr x = p.queues[0][i], y = again.queues[0][i];
    x.line = y.line = 0;
    EXPECT_TRUE(x == y) << sw::format_instr(x) << " / " << sw::format_instr(y);
  }
  EXPECT_NE(sw::disassemble(p).find("MUL.fp32 -, FLY, "), std::string::npos) << sw::disassemble(p);
}

namespace {
/// The chip's refusal of one fp32 instruction with these fields when it loads it ("" if accepted).
std::string load_refusal(tsp::Op op, uint32_t count, uint16_t port, uint32_t a = 0, uint32_t c = 0) {
  tsp::Instr in;
  in.op = op;
  in.dtype = core::Dtype::fp32;
  in.count = count;
  in.port = port;
  in.a = a;
  in.c = c;
  return test::refusal_at_load(in);
}
}  // namespace

TEST(FlyBy, ABinaryWithAMalformedChainIsRefusedWhenTheChipLoadsIt) {
  EXPECT_NE(load_refusal(tsp::Op::MUL, 4, tsp::kFlyIn, 0, 10).find("no FLY-out instruction precedes it"),
            std::string::npos);
}

TEST(FlyBy, FlagsOtherThanTheTwoAndANamedDestinationAreRefusedWhenLoaded) {
  EXPECT_NE(load_refusal(tsp::Op::RSQRT, 1, 4).find("only FLY-out (1) and FLY-in (2) may be set"), std::string::npos);
}

TEST(FlyBy, AFlyOutThatNamesADestinationIsRefusedWhenLoaded) {
  EXPECT_NE(
      load_refusal(tsp::Op::EXP, 1, tsp::kFlyOut, 7).find("passes its result on (FLY-out) but names a destination"),
      std::string::npos);
}

TEST(FlyBy, AChainLongerThanTheChipHasAlusIsRefusedWhenLoaded) {
  Bench b(test::node_yaml(2, "  node0:\n    tsp*:\n      vxm_alus: 2\n"));
  b.load(0, std::string(".queue 0\n") + kChain);
  try {
    b.run();
    FAIL() << "a 3-instruction fly-by loaded on a chip with 2 ALUs";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("makes a fly-by of 3 instructions; it needs one vector ALU each and the chip "
                                         "has 2 (vxm_alus)"),
              std::string::npos)
        << e.what();
  }
}

TEST(FlyBy, CholeskyOnChipsWithTooFewAlusForItsFlyBysIsRefusedNamingTheParameter) {
  const test::Result r = test::sh("run " + std::string(FABRICVP_PLATFORMS) +
                                  "/groq-node.yaml --workload cholesky --n 640 --tsps 2 -p 'sys.node0.tsp*.vxm_alus=2' "
                                  "-q -o /tmp/fabricvp-flyby-alus");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("vxm_alus must be at least 3, it is 2"), std::string::npos) << r.out;
}
