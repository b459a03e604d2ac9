// LOOP (docs/isa.md "LOOP"): the assembler's text and binary forms and its
// refusals, the chip's load checks, and the semantics against the same
// program unrolled by hand (shifted WAITs and host vectors) on a second chip.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "harness.h"
#include "models/core/config.h"

using namespace fabricvp;
using test::Bench;
using tsp::Op;

namespace {

std::string asm_error(const std::string& text) {
  try {
    sw::assemble(text, "loop.s");
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}

/// Queue 4 of chip 0 of a 2-TSP node holds `prog` (a binary the assembler
/// would refuse): the chip's refusal when it loads it, "" if it accepts it.
std::string load_refusal(const std::vector<tsp::Instr>& prog) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> img = sw::encode_queue(prog);
  b.sys->host.write(0, tsp::kImemBase + 4 * tsp::kImemStride, img.data(), img.size());
  try {
    b.chip(0).start();
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}

tsp::Instr loop(uint32_t n, uint64_t period, uint32_t host_stride = 0, uint32_t line = 0) {
  tsp::Instr in;
  in.op = Op::LOOP;
  in.count = n;
  in.imm = period;
  in.a = host_stride;
  in.line = line;
  return in;
}

std::vector<uint8_t> i32(std::initializer_list<int32_t> lanes) {
  std::vector<uint8_t> v(tsp::kVectorBytes, 0);
  size_t i = 0;
  for (int32_t x : lanes) std::memcpy(&v[4 * i++], &x, 4);
  return v;
}

/// Every int32 lane of `v` times k (wrapping, as ADD.int32 does).
std::vector<uint8_t> times(const std::vector<uint8_t>& v, uint32_t k) {
  std::vector<uint8_t> out(v.size());
  for (size_t i = 0; i < v.size(); i += 4) {
    uint32_t x;
    std::memcpy(&x, &v[i], 4);
    x *= k;
    std::memcpy(&out[i], &x, 4);
  }
  return out;
}

std::vector<uint8_t> host_vec(Bench& b, uint32_t chip, uint64_t vec) {
  std::vector<uint8_t> out(tsp::kVectorBytes);
  EXPECT_TRUE(b.sys->host.received(chip, vec * tsp::kVectorBytes, out.data(), out.size()))
      << "chip " << chip << " host vector " << vec << " never written";
  return out;
}

}  // namespace

TEST(Loop, AssemblesWithAndWithoutHostAndRoundTripsThroughTextAndBinary) {
  const sw::Program p = sw::assemble(
      ".queue 2\nWAIT 10\nHOSTW @7, 1, 1000\nLOOP 99, 5000, HOST 8\n"
      ".queue 5\nNOP 3\nloop 1, 4\n"
      ".queue 6\nNOP\nLoop 4294967295, 256, host 0\n",
      "l.s");
  ASSERT_EQ(p.queues.size(), 7u);
  const tsp::Instr& a = p.queues[2].back();
  EXPECT_EQ(a.op, Op::LOOP);
  EXPECT_EQ(a.count, 99u);  // n: iterations to repeat
  EXPECT_EQ(a.imm, 5000u);  // P: period in cycles
  EXPECT_EQ(a.a, 8u);       // s: host-vector stride
  EXPECT_EQ(a.line, 4u);
  const tsp::Instr& b = p.queues[5].back();
  EXPECT_EQ(b.op, Op::LOOP);
  EXPECT_EQ(b.count, 1u);
  EXPECT_EQ(b.imm, 4u);
  EXPECT_EQ(b.a, 0u);  // HOST omitted: stride 0
  const tsp::Instr& c = p.queues[6].back();
  EXPECT_EQ(c.count, 4294967295u);
  EXPECT_EQ(c.imm, 256u);  // 2^32 - 1 iterations of 256 cycles: inside 2^40
  EXPECT_EQ(c.a, 0u);
  EXPECT_EQ(sw::format_instr(a), "LOOP 99, 5000, HOST 8");
  EXPECT_EQ(sw::format_instr(b), "LOOP 1, 4");
  EXPECT_EQ(sw::format_instr(c), "LOOP 4294967295, 256");
  EXPECT_STREQ(tsp::op_name(Op::LOOP), "LOOP");
  // Binary: opcode 26, count, a and imm in their usual fields.
  const auto enc = a.encode();
  EXPECT_EQ(enc[0], 26);
  EXPECT_EQ(enc[4], 99);
  EXPECT_EQ(enc[8], 8);
  EXPECT_EQ(enc[20] | enc[21] << 8, 5000);
  EXPECT_EQ(tsp::Instr::decode(enc.data()), a);
  const std::vector<uint8_t> img = sw::encode_queue(p.queues[2]);
  ASSERT_EQ(img.size(), 4 * tsp::kInstrBytes);
  EXPECT_EQ(tsp::Instr::decode(&img[2 * tsp::kInstrBytes]), a);
  EXPECT_EQ(tsp::Instr::decode(&img[3 * tsp::kInstrBytes]).op, Op::END);
  // Text -> binary -> text -> binary.
  const std::string once = sw::disassemble(p);
  const sw::Program back = sw::assemble(once, "back.s");
  EXPECT_EQ(sw::disassemble(back), once);
  for (const size_t q : {size_t(2), size_t(5), size_t(6)}) {
    ASSERT_EQ(back.queues[q].size(), p.queues[q].size());
    for (size_t i = 0; i < p.queues[q].size(); ++i) {
      tsp::Instr x = back.queues[q][i];
      x.line = p.queues[q][i].line;  // the disassembly has its own line numbers
      EXPECT_EQ(x, p.queues[q][i]) << sw::format_instr(x);
    }
  }
}

TEST(Loop, TheAssemblerRefusesALoopNotLastASecondLoopAndZeroCountOrPeriodWithFileAndLine) {
  // Not last: the instruction after it is refused, naming the LOOP's line.
  EXPECT_EQ(asm_error(".queue 0\nNOP\nLOOP 2, 10\nADD.int32 @0, @0, @0, 1\n"),
            "loop.s:4: ADD after the LOOP of line 3: LOOP must be the last instruction of queue 0");
  // Also when the queue is taken up again by a later .queue directive.
  EXPECT_EQ(asm_error(".queue 1\nLOOP 2, 10\n.queue 0\nNOP\n.queue 1\nNOP 5\n"),
            "loop.s:6: NOP after the LOOP of line 2: LOOP must be the last instruction of queue 1");
  // Two LOOPs in one queue, also through .rept.
  EXPECT_EQ(asm_error(".queue 3\nNOP\nLOOP 2, 10\nLOOP 3, 10\n"),
            "loop.s:4: queue 3 has a LOOP already (line 3): a queue has at most one LOOP");
  EXPECT_EQ(asm_error(".queue 0\n.rept 2\nLOOP 1, 10\n.endr\n"),
            "loop.s:3: queue 0 has a LOOP already (line 3): a queue has at most one LOOP");
  // One LOOP in each of two queues is fine.
  EXPECT_EQ(asm_error(".queue 0\nNOP\nLOOP 2, 10\n.queue 1\nNOP\nLOOP 2, 10\n"), "");
  // n = 0, P = 0.
  EXPECT_EQ(asm_error(".queue 0\nNOP\nLOOP 0, 10\n"), "loop.s:3: LOOP needs at least 1 iteration to repeat (n >= 1)");
  EXPECT_EQ(asm_error(".queue 0\nNOP\nLOOP 3, 0\n"), "loop.s:3: LOOP period must be at least 1 cycle (P >= 1)");
  // Operands.
  test::expect_asm_error("LOOP 3", "LOOP takes 2 or 3 operands (n, P[, HOST s]), got 1");
  test::expect_asm_error("LOOP 3, 10, 4", "LOOP's third operand is HOST s (the host-vector stride), got '4'");
  test::expect_asm_error("LOOP 3, 10, HOST", "LOOP's third operand is HOST s");
  test::expect_asm_error("LOOP 3, 10, HOST -1", "expected host-vector stride");
  test::expect_asm_error("LOOP -1, 10", "expected iteration count");
  test::expect_asm_error("LOOP.fp32 3, 10", "LOOP takes no type suffix");
  test::expect_asm_error("LOOP 4294967296, 1", "LOOP 4294967296 iterations: at most 4294967295");
  test::expect_asm_error("LOOP 1024, 1073741825", "the repetitions span more than 2^40 cycles (n x P at most 2^40)");
  test::expect_asm_error("LOOP 1024, 10, HOST 1073741825", "move host vectors past 2^40 (n x s at most 2^40)");
  EXPECT_EQ(asm_error(".queue 0\nLOOP 1024, 1073741824, HOST 1073741824\n"), "");  // exactly 2^40
}

TEST(Loop, TheChipRefusesABinaryWithALoopNotLast) {
  tsp::Instr nop;
  nop.op = Op::NOP;
  nop.imm = 1;
  nop.line = 7;
  const std::string err = load_refusal({nop, loop(2, 10, 0, 8), nop});
  EXPECT_EQ(err,
            "sys.node0.tsp0: queue 4 instruction 1 (source line 8): LOOP must be the last instruction of its queue, "
            "but instruction 2 (NOP) follows it");
}

TEST(Loop, TheChipRefusesABinaryWithTwoLoops) {
  const std::string err = load_refusal({loop(2, 10), loop(3, 10)});
  EXPECT_EQ(err,
            "sys.node0.tsp0: queue 4 instruction 0: LOOP is followed by another LOOP (instruction 1): a queue has at "
            "most one LOOP, its last instruction");
}

TEST(Loop, TheChipAcceptsALoopFollowedByEnd) {
  // What follows an END is not part of the queue: the LOOP is its last instruction.
  tsp::Instr end, nop;
  nop.op = Op::NOP;
  nop.imm = 1;
  std::vector<uint8_t> img = sw::encode_queue({nop, loop(1, 10), end, nop});
  Bench b(test::node_yaml(2));
  b.sys->host.write(0, tsp::kImemBase + 4 * tsp::kImemStride, img.data(), img.size());
  b.loaded.push_back(0);
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(0).instructions.get(), 4u);  // NOP, LOOP (iteration 0), NOP, LOOP (iteration 1)
  EXPECT_EQ(b.chip(0).loops.get(), 2u);
  EXPECT_EQ(b.chip(0).end_cycle(), 12u);  // the second LOOP at cycle 11 falls through
}

namespace {
struct LoopBadBinary {
  const char* name;
  tsp::Instr in;
  const char* what;
};
void PrintTo(const LoopBadBinary& b, std::ostream* os) { *os << b.name; }
class LoopBinary : public ::testing::TestWithParam<LoopBadBinary> {};
}  // namespace

TEST_P(LoopBinary, IsRefusedWhenTheChipLoadsIt) {
  const std::string err = test::refusal_at_load(GetParam().in);
  EXPECT_EQ(err, std::string("sys.node0.tsp0: queue 4 instruction 0 (source line 9): LOOP ") + GetParam().what)
      << (err.empty() ? "accepted" : err);
}

INSTANTIATE_TEST_SUITE_P(
    Loop, LoopBinary,
    ::testing::Values(LoopBadBinary{"ZeroIterations", loop(0, 10, 0, 9), "repeats 0 iterations: n must be at least 1"},
                      LoopBadBinary{"ZeroPeriod", loop(3, 0, 0, 9), "period must be at least 1 cycle"},
                      LoopBadBinary{"SpanPast2To40Cycles", loop(1024, (uint64_t(1) << 30) + 1, 0, 9),
                                    "1024 iterations of 1073741825 cycles span more than 2^40 cycles"},
                      LoopBadBinary{"HostVectorsPast2To40", loop(1024, 10, (1u << 30) + 1, 9),
                                    "1024 iterations with host-vector stride 1073741825 move host vectors past 2^40"}),
    [](const ::testing::TestParamInfo<LoopBadBinary>& p) { return std::string(p.param.name); });

// Chip 0 runs three looped queues, chip 1 the same queues unrolled by hand:
// iteration k's WAITs k * P later, its HOSTW host vector k * s further, a
// WAIT for the next iteration's start in place of each repeating LOOP and a
// NOP (one issue slot) in place of the last. SRAM, host memory, every HOSTW's
// completion, the last write and the end cycle must be the same, and what
// the program computes is also checked in closed form.
TEST(Loop, RepeatsTheQueueExactlyLikeTheSameProgramUnrolledByHand) {
  Bench b(test::node_yaml(2));
  const std::vector<uint8_t> x = i32({1, -2, 3, 1000000, -7}), y = test::pattern(4), z = test::pattern(9);
  for (uint32_t c = 0; c < 2; ++c) {
    b.write_vec(c, 0, x);
    b.write_vec(c, 1, y);
    b.write_vec(c, 2, z);
  }
  // Queue 0: @100 += x at cycle 10 + 200k, HOSTW of @100 at 40 + 200k to host vector 1000 + 2k.
  // Queue 1: @200 += y at cycle 20k, no WAIT: each iteration starts at program cycle k * P.
  // Queue 2: the shortest period: the LOOP issues at cycle 18 + 19k, iteration k + 1 starts at 19(k + 1).
  b.load(0,
         ".queue 0\nWAIT 10\nADD.int32 @100, @100, @0, 1\nWAIT 40\nHOSTW @100, 1, 1000\nLOOP 3, 200, HOST 2\n"
         ".queue 1\nADD.int32 @200, @200, @1, 1\nLOOP 5, 20\n"
         ".queue 2\nADD.int32 @500, @500, @2, 1\nNOP 17\nLOOP 2, 19\n");
  std::string unrolled;
  auto between = [](uint32_t k, uint32_t n, uint64_t period) {
    return k < n ? "WAIT " + std::to_string((k + 1) * period) + "\n" : std::string("NOP\n");
  };
  unrolled += ".queue 0\n";
  for (uint32_t k = 0; k <= 3; ++k)
    unrolled += "WAIT " + std::to_string(10 + 200 * k) + "\nADD.int32 @100, @100, @0, 1\nWAIT " +
                std::to_string(40 + 200 * k) + "\nHOSTW @100, 1, " + std::to_string(1000 + 2 * k) + "\n" +
                between(k, 3, 200);
  unrolled += ".queue 1\n";
  for (uint32_t k = 0; k <= 5; ++k) unrolled += "ADD.int32 @200, @200, @1, 1\n" + between(k, 5, 20);
  unrolled += ".queue 2\n";
  for (uint32_t k = 0; k <= 2; ++k) unrolled += "ADD.int32 @500, @500, @2, 1\nNOP 17\n" + between(k, 2, 19);
  b.load(1, unrolled);
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const tsp::Tsp &looped = b.chip(0), &flat = b.chip(1);

  // The same as unrolled, vector for vector and picosecond for picosecond.
  for (uint32_t v : {100u, 200u, 500u}) EXPECT_EQ(b.read_vec(0, v), b.read_vec(1, v)) << "SRAM vector " << v;
  for (uint64_t h = 1000; h <= 1006; h += 2) EXPECT_EQ(host_vec(b, 0, h), host_vec(b, 1, h)) << "host vector " << h;
  ASSERT_EQ(looped.host_writes().size(), 4u);
  ASSERT_EQ(flat.host_writes().size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(looped.host_writes()[i].host_vec, flat.host_writes()[i].host_vec) << i;
    EXPECT_EQ(looped.host_writes()[i].n, flat.host_writes()[i].n) << i;
    EXPECT_EQ(looped.host_writes()[i].done_ps, flat.host_writes()[i].done_ps) << i;
  }
  EXPECT_EQ(looped.last_write_ps(), flat.last_write_ps());
  EXPECT_EQ(looped.end_cycle(), flat.end_cycle());
  EXPECT_EQ(looped.instructions.get(), flat.instructions.get());
  EXPECT_EQ(looped.adds.get(), flat.adds.get());
  EXPECT_EQ(looped.alu_busy_cycles.get(), flat.alu_busy_cycles.get());
  EXPECT_EQ(looped.pcie_out().transfer_count(), flat.pcie_out().transfer_count());

  // And what that is, in closed form: queue 0 ran 4 times, queue 1 6 times, queue 2 3 times.
  EXPECT_EQ(b.read_vec(0, 100), times(x, 4));
  EXPECT_EQ(b.read_vec(0, 200), times(y, 6));
  EXPECT_EQ(b.read_vec(0, 500), times(z, 3));
  for (uint32_t k = 0; k <= 3; ++k) {
    EXPECT_EQ(host_vec(b, 0, 1000 + 2 * k), times(x, k + 1)) << "iteration " << k;
    const tsp::Tsp::HostWriteDone& w = looped.host_writes()[k];
    EXPECT_EQ(w.host_vec, 1000 + 2 * k);
    EXPECT_EQ(w.n, 1u);
    // HOSTW issued at cycle 40 + 200k: in host memory ser(1) + pcie_latency_ns later.
    EXPECT_EQ(w.done_ps, b.clk().ps(40 + 200 * k) + looped.pcie_out().rate().ps(1) + 1000000) << "iteration " << k;
  }
  std::vector<uint8_t> none(tsp::kVectorBytes);
  EXPECT_FALSE(b.sys->host.received(0, 1001 * tsp::kVectorBytes, none.data(), none.size()));  // the stride skips it
  EXPECT_EQ(looped.last_write_ps(), looped.host_writes().back().done_ps);
  EXPECT_EQ(looped.end_cycle(), 642u);  // queue 0's last LOOP issues at 41 + 3 x 200 and falls through
  EXPECT_EQ(looped.loops.get(), 4u + 6u + 3u);
  EXPECT_EQ(flat.loops.get(), 0u);
  EXPECT_EQ(looped.waits.get(), 2u * 4u);
  EXPECT_EQ(looped.instructions.get(), 5u * 4u + 2u * 6u + 3u * 3u);
}

TEST(Loop, StartingTheChipAgainRunsTheLoopFromIterationZero) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, test::pattern(2));
  b.load(0, ".queue 0\nWAIT 10\nHOSTW @0, 1, 50\nLOOP 2, 100, HOST 1\n");
  tsp::Tsp& t = b.chip(0);
  t.start();
  sc_core::sc_start();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  ASSERT_EQ(t.host_writes().size(), 3u);
  // The host runtime's relaunch: program time restarts at an epoch boundary, and so do the iterations.
  t.start(true);
  sc_core::sc_start();
  t.finish();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const uint64_t launch = t.program_start_ps();
  ASSERT_GT(launch, 0u);
  ASSERT_EQ(launch % 280000, 0u);  // a multiple of 252 cycles at 900 MHz: ps(launch + c) = launch + ps(c)
  ASSERT_EQ(t.host_writes().size(), 6u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(t.host_writes()[k].host_vec, 50 + k);
    EXPECT_EQ(t.host_writes()[3 + k].host_vec, 50 + k);
    EXPECT_EQ(t.host_writes()[3 + k].done_ps, launch + t.host_writes()[k].done_ps) << k;
  }
  EXPECT_EQ(t.loops.get(), 6u);
}

TEST(Loop, APeriodTooShortIsAHardwareErrorNamingTheLoop) {
  Bench b(test::node_yaml(2));
  // The LOOP issues at cycle 9: iteration 1 would have to start at cycle 9, already too late (LOOP 1, 10 would not be).
  b.load(0, ".queue 3\nNOP 9\nLOOP 1, 9\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_EQ(b.errors()[0].where, "sys.node0.tsp0.queue3");
  EXPECT_EQ(b.errors()[0].message,
            "LOOP 1, 9: iteration 1 would start at program cycle 9, but the queue reached the LOOP at cycle 9: the "
            "period is too short");
  EXPECT_EQ(b.chip(0).loops.get(), 1u);
  EXPECT_EQ(b.chip(0).nops.get(), 1u);  // iteration 1 never ran
}

TEST(Loop, APeriodTooShortFailsARunOfHandWrittenPrograms) {
  test::TempDir t;
  std::filesystem::create_directories(t.path / "progs");
  // Iteration 0 ends with its LOOP at cycle 101, after iteration 1's start at 100.
  t.file("progs/sys.node0.tsp0.s", ".queue 0\nWAIT 100\nNOP\nLOOP 4, 100\n");
  const test::Result r = test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --programs " +
                                  (t / "progs") + " -o " + (t / "o"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("sys.node0.tsp0.queue0] hardware error at cycle 101"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LOOP 4, 100: iteration 1 would start at program cycle 100, but the queue reached the LOOP at "
                       "cycle 101"),
            std::string::npos)
      << r.out;
  const nlohmann::json j = test::load_json(t / "o/stats.json");
  EXPECT_EQ(j["run"]["status"], "hardware_error");
  EXPECT_EQ(j["sys"]["node0"]["tsp0"]["loops"], 1);
}
