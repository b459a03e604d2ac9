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
