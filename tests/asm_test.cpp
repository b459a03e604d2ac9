#include <gtest/gtest.h>

#include "models/core/config.h"
#include "sw/asm/program.h"

using namespace fabricvp;
using tsp::Op;

namespace {
std::string error_of(const std::string& text) {
  try {
    sw::assemble(text, "prog.s");
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}
/// One line of queue 0 that must be refused: the error names prog.s line 2 and says `what`.
void expect_refused(const std::string& line, const std::string& what) {
  const std::string e = error_of(".queue 0\n" + line + "\n");
  EXPECT_NE(e.find("prog.s:2: "), std::string::npos) << line << ": " << e;
  EXPECT_NE(e.find(what), std::string::npos) << line << ": " << e;
}
}  // namespace

TEST(Asm, ParsesEveryInstruction) {
  sw::Program p = sw::assemble(R"(
; comment
.tsp sys.node0.tsp1
.queue 3
    WAIT 100          # comment
    SEND p2, [0,1,0,5], 64
    recv 4, @70000, 2
    ADD.bf16 [1,43,1,4000], @0, @10, 96
    NOP
    NOP 7
    SYNC
    NOTIFY
)",
                               "prog.s");
  EXPECT_EQ(p.target, "sys.node0.tsp1");
  ASSERT_EQ(p.queues.size(), 4u);
  const auto& q = p.queues[3];
  ASSERT_EQ(q.size(), 8u);
  EXPECT_EQ(q[0].op, Op::WAIT);
  EXPECT_EQ(q[0].imm, 100u);
  EXPECT_EQ(q[1].op, Op::SEND);
  EXPECT_EQ(q[1].port, 2);
  EXPECT_EQ(q[1].a, (tsp::VecAddr{0, 1, 0, 5}.linear()));
  EXPECT_EQ(q[1].count, 64u);
  EXPECT_EQ(q[1].line, 6u);
  EXPECT_EQ(q[2].op, Op::RECV);
  EXPECT_EQ(q[2].a, 70000u);
  EXPECT_EQ(q[3].dtype, core::Dtype::bf16);
  EXPECT_EQ(q[3].b, 0u);
  EXPECT_EQ(q[3].c, 10u);
  EXPECT_EQ(q[4].imm, 1u);
  EXPECT_EQ(q[5].imm, 7u);
  EXPECT_EQ(q[6].op, Op::SYNC);
  EXPECT_EQ(q[7].op, Op::NOTIFY);
}

TEST(Asm, DisassemblyAssemblesToTheSameProgram) {
  sw::Program p;
  p.target = "sys.node0.tsp0";
  tsp::Instr s;
  s.op = Op::SEND;
  s.port = 6;
  s.a = 123456;
  s.count = 999;
  p.emit(0, s);
  tsp::Instr a;
  a.op = Op::ADD;
  a.dtype = core::Dtype::int32;
  a.a = 1;
  a.b = 2;
  a.c = 700000;
  a.count = 20000;
  p.emit(5, a);
  tsp::Instr w;
  w.op = Op::WAIT;
  w.imm = 1ull << 40;
  p.emit(5, w);
  sw::Program q = sw::assemble(sw::disassemble(p), "x.s");
  ASSERT_EQ(q.queues.size(), p.queues.size());
  for (size_t i = 0; i < p.queues.size(); ++i) {
    ASSERT_EQ(q.queues[i].size(), p.queues[i].size());
    for (size_t j = 0; j < p.queues[i].size(); ++j) {
      tsp::Instr x = q.queues[i][j];
      x.line = 0;
      EXPECT_TRUE(x == p.queues[i][j]) << sw::format_instr(x);
    }
  }
  EXPECT_EQ(q.target, p.target);
}

TEST(Asm, BinaryEncodingRoundTripsAndEndsWithEnd) {
  tsp::Instr a;
  a.op = Op::ADD;
  a.dtype = core::Dtype::fp16;
  a.port = 0xbeef;
  a.count = 0x01020304;
  a.a = 7;
  a.b = 8;
  a.c = 9;
  a.imm = 0x1122334455667788ull;
  a.line = 42;
  auto enc = a.encode();
  EXPECT_EQ(enc[0], static_cast<uint8_t>(Op::ADD));
  EXPECT_EQ(enc[20], 0x88);  // little-endian immediate
  EXPECT_TRUE(tsp::Instr::decode(enc.data()) == a);
  auto img = sw::encode_queue({a, a});
  ASSERT_EQ(img.size(), 3 * tsp::kInstrBytes);
  EXPECT_EQ(tsp::Instr::decode(&img[2 * tsp::kInstrBytes]).op, Op::END);
}

TEST(Asm, ErrorsNameFileAndLine) {
  EXPECT_EQ(error_of("SEND p0, @0, 1\n"), "prog.s:1: 'SEND' before any .queue directive");
  EXPECT_NE(error_of(".queue 0\n\nFOO 1\n").find("prog.s:3: unknown instruction 'FOO'"), std::string::npos);
  EXPECT_NE(error_of(".queue 0\nSEND p0, [2,0,0,0], 1\n").find("prog.s:2: address [2,0,0,0] out of range"),
            std::string::npos);
  EXPECT_NE(error_of(".queue 0\nSEND p0, @0\n").find("prog.s:2: SEND takes 3 operand(s), got 2"), std::string::npos);
  EXPECT_NE(error_of(".queue 0\nADD @0, @1, @2, 4\n").find("prog.s:2: ADD needs a type suffix"), std::string::npos);
  EXPECT_NE(error_of(".queue 0\nRECV p1, @720890, 10\n").find("prog.s:2: 10 vectors from"), std::string::npos);
  EXPECT_NE(error_of(".queue 0\nNOP 0\n").find("prog.s:2: NOP needs at least 1 cycle"), std::string::npos);
  EXPECT_NE(error_of(".queue 0\nRECV p1, @0, 0\n").find("prog.s:2: vector count 0"), std::string::npos);
  EXPECT_NE(error_of(".queue 0\nWAIT -5\n").find("prog.s:2: expected cycle"), std::string::npos);
  EXPECT_NE(error_of(".queue 0\nSEND.fp32 p0, @0, 1\n").find("takes no type suffix"), std::string::npos);
}

TEST(Asm, MxmStrideAndVxmBroadcastModesRoundTrip) {
  const sw::Program p = sw::assemble(
      ".queue 2\n"
      "MXM.fp16 m1.w0, @2000, @7, 8, STRIDE 3\n"
      "MXM.int8 m3.w1, @4000, @9, 16, ACC, stride 0x1000\n"
      "MXM.fp16 m0.w0, @2000, @7, 8, ACC, STRIDE 1\n"
      "MXM.fp16 m0.w0, @2000, @7, 8\n"
      "MUL.fp32 @100, @0, @50, 12, BCAST\n"
      "MUL.bf16 @100, @0, @50, 12, bcast 4\n"
      "SUB.int32 @100, @0, @50, 12, SPREAD 4\n"
      "SUB.fp16 @100, @0, @50, 12\n"
      "MUL.fp32 @100, @0, @50, 12, BCAST 1\n",
      "r.s");
  ASSERT_EQ(p.queues.size(), 3u);
  const std::vector<tsp::Instr>& q = p.queues[2];
  ASSERT_EQ(q.size(), 9u);
  // MXM: imm bit 0 = ACC, imm >> 32 = stride, 0 meaning 1 (the encoding without STRIDE is unchanged).
  EXPECT_EQ(q[0].imm, 3ull << 32);
  EXPECT_EQ(tsp::mxm_stride(q[0]), 3u);
  EXPECT_FALSE(tsp::mxm_acc(q[0]));
  EXPECT_EQ(tsp::mxm_input(q[0], 2), 13u);
  EXPECT_EQ(q[1].imm, 4096ull << 32 | 1);
  EXPECT_EQ(tsp::mxm_stride(q[1]), 4096u);
  EXPECT_TRUE(tsp::mxm_acc(q[1]));
  EXPECT_EQ(q[2].imm, 1u);
  EXPECT_EQ(tsp::mxm_stride(q[2]), 1u);
  EXPECT_EQ(q[3].imm, 0u);
  EXPECT_EQ(tsp::mxm_imm(true, 1), 1u);
  EXPECT_EQ(tsp::mxm_imm(false, 5), 5ull << 32);
  EXPECT_EQ(sw::format_instr(q[0]), "MXM.fp16 m1.w0, [0,0,0,2000], [0,0,0,7], 8, STRIDE 3");
  EXPECT_EQ(sw::format_instr(q[1]), "MXM.int8 m3.w1, [0,0,0,4000], [0,0,0,9], 16, ACC, STRIDE 4096");
  EXPECT_EQ(sw::format_instr(q[2]), "MXM.fp16 m0.w0, [0,0,0,2000], [0,0,0,7], 8, ACC");
  EXPECT_EQ(sw::format_instr(q[3]), "MXM.fp16 m0.w0, [0,0,0,2000], [0,0,0,7], 8");
  // MUL, SUB: imm low word = BCAST period, high word = SPREAD; plain BCAST is imm 1 as before.
  EXPECT_EQ(q[4].imm, 1u);
  EXPECT_EQ(q[5].imm, 4u);
  EXPECT_EQ(q[6].imm, 4ull << 32);
  EXPECT_EQ(q[7].imm, 0u);
  EXPECT_EQ(q[8].imm, 1u);
  EXPECT_EQ(tsp::vxm_imm(4, 0), 4u);
  EXPECT_EQ(tsp::vxm_imm(0, 4), 4ull << 32);
  for (uint32_t i = 0; i < 12; ++i) {
    EXPECT_EQ(tsp::vxm_b_index(q[4], i), 0u);
    EXPECT_EQ(tsp::vxm_b_index(q[5], i), i % 4);
    EXPECT_EQ(tsp::vxm_b_index(q[6], i), i / 4);
    EXPECT_EQ(tsp::vxm_b_index(q[7], i), i);
  }
  EXPECT_EQ(tsp::vxm_b_vectors(q[4]), 1u);
  EXPECT_EQ(tsp::vxm_b_vectors(q[5]), 4u);
  EXPECT_EQ(tsp::vxm_b_vectors(q[6]), 3u);
  EXPECT_EQ(tsp::vxm_b_vectors(q[7]), 12u);
  EXPECT_EQ(sw::format_instr(q[4]), "MUL.fp32 [0,0,0,100], [0,0,0,0], [0,0,0,50], 12, BCAST");
  EXPECT_EQ(sw::format_instr(q[5]), "MUL.bf16 [0,0,0,100], [0,0,0,0], [0,0,0,50], 12, BCAST 4");
  EXPECT_EQ(sw::format_instr(q[6]), "SUB.int32 [0,0,0,100], [0,0,0,0], [0,0,0,50], 12, SPREAD 4");
  EXPECT_EQ(sw::format_instr(q[7]), "SUB.fp16 [0,0,0,100], [0,0,0,0], [0,0,0,50], 12");
  // Text -> binary -> text -> binary.
  for (const tsp::Instr& in : q) EXPECT_EQ(tsp::Instr::decode(in.encode().data()), in) << sw::format_instr(in);
  const sw::Program back = sw::assemble(sw::disassemble(p), "back.s");
  ASSERT_EQ(back.queues.size(), 3u);
  ASSERT_EQ(back.queues[2].size(), q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    tsp::Instr x = back.queues[2][i];
    x.line = q[i].line;  // the disassembly has its own line numbers
    EXPECT_EQ(x, q[i]) << sw::format_instr(x);
  }
}

TEST(Asm, BadStridesBroadcastsAndSpreadsAreRefused) {
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, STRIDE 0", "MXM stride must be at least 1");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, ACC, STRIDE 0", "MXM stride must be at least 1");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, STRIDE", "MXM STRIDE needs a distance");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, STRIDE -2", "expected MXM stride");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, STRIDE 720896", "MXM stride 720896 out of range");
  // (n - 1) * s + src must stay below 720,896 vectors.
  expect_refused("MXM.fp16 m0.w0, @0, @717896, 4, STRIDE 1000",
                 "MXM of 4 input vectors 1000 apart from [1,43,1,1096] runs past the end of SRAM");
  EXPECT_EQ(sw::assemble(".queue 0\nMXM.fp16 m0.w0, @0, @717895, 4, STRIDE 1000\n", "ok.s").queues[0].size(), 1u);
  expect_refused("MXM.fp16 m0.w0, @0, @720000, 1000", "1000 input vectors from");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, STRIDE 2, ACC", "ACC comes before STRIDE");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, STRIDE 2, STRIDE 2", "sixth operand is ACC");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, ACC, ACC", "sixth operand is ACC");
  expect_refused("MXM.fp16 m0.w0, @0, @0, 4, ACC, STRIDE 2, 1", "MXM takes 4 to 6 operands");
  expect_refused("MUL.fp32 @0, @1, @2, 4, BCAST 0", "MUL BCAST period must be at least 1");
  expect_refused("SUB.fp32 @0, @1, @2, 4, BCAST 0", "SUB BCAST period must be at least 1");
  expect_refused("MUL.fp32 @0, @1, @2, 4, SPREAD 0", "MUL SPREAD must be at least 1");
  expect_refused("SUB.int32 @0, @1, @2, 4, SPREAD 0", "SUB SPREAD must be at least 1");
  expect_refused("SUB.fp32 @0, @1, @2, 4, SPREAD", "SUB SPREAD needs a count");
  expect_refused("MUL.fp32 @0, @1, @2, 4, BCAST x", "expected BCAST period");
  expect_refused("MUL.fp32 @0, @1, @2, 4, BCAST 2, SPREAD 2", "MUL takes BCAST or SPREAD, not both");
  expect_refused("SUB.fp16 @0, @1, @2, 4, SPREAD 3, BCAST", "SUB takes BCAST or SPREAD, not both");
  expect_refused("MUL.fp32 @0, @1, @2, 4, BCAST 2, BCAST 2", "MUL takes one BCAST");
  expect_refused("MUL.fp32 @0, @1, @2, 4, SPREAD 2, ACC", "sixth operand is BCAST [p]");
  // The second operand's extent is the vectors actually read.
  expect_refused("MUL.fp32 @0, @1, @720893, 8, SPREAD 2", "runs past the end of SRAM");  // 4 vectors
  expect_refused("MUL.fp32 @0, @1, @720893, 8, BCAST 4", "runs past the end of SRAM");
  EXPECT_EQ(sw::assemble(".queue 0\nMUL.fp32 @0, @1, @720893, 8, BCAST 3\nSUB.fp32 @0, @1, @720892, 8, SPREAD 2\n"
                         "MUL.fp32 @0, @1, @720895, 8, BCAST\n",
                         "ok.s")
                .queues[0]
                .size(),
            3u);
}

TEST(Asm, MaxRoundTripsWithItsBroadcastModesAndTakesOnlyFp32) {
  const std::string text =
      ".queue 3\nMAX.fp32 @100, @0, @50, 12\nMAX.fp32 @100, @0, @50, 12, BCAST 4\nMAX.fp32 @100, @0, @50, 12, "
      "SPREAD 3\n";
  const sw::Program p = sw::assemble(text, "m.s");
  ASSERT_EQ(p.queues.size(), 4u);
  ASSERT_EQ(p.queues[3].size(), 3u);
  EXPECT_EQ(p.queues[3][0].op, tsp::Op::MAX);
  EXPECT_EQ(tsp::vxm_bcast(p.queues[3][1]), 4u);
  EXPECT_EQ(tsp::vxm_spread(p.queues[3][2]), 3u);
  // Text -> binary -> text is stable.
  const std::string once = sw::disassemble(p);
  EXPECT_EQ(sw::disassemble(sw::assemble(once, "again.s")), once);
  EXPECT_NE(once.find("MAX.fp32 [0,0,0,100], [0,0,0,0], [0,0,0,50], 12, BCAST 4"), std::string::npos) << once;
  try {
    sw::assemble(".queue 0\nMAX.fp16 @100, @0, @50, 12\n", "bad.s");
    FAIL() << "MAX.fp16 accepted";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("MAX takes .fp32"), std::string::npos) << e.what();
  }
}
