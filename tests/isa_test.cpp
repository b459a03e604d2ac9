// Instruction semantics and latencies (docs/isa.md).
#include <cstring>

#include "harness.h"
#include "models/core/dtype.h"

using namespace fabricvp;
using test::Bench;

namespace {
std::vector<uint8_t> i32(std::initializer_list<int32_t> lanes) {
  std::vector<uint8_t> v(tsp::kVectorBytes, 0);
  size_t i = 0;
  for (int32_t x : lanes) std::memcpy(&v[4 * i++], &x, 4);
  return v;
}
int32_t lane(const std::vector<uint8_t>& v, size_t i) {
  int32_t x;
  std::memcpy(&x, &v[4 * i], 4);
  return x;
}
}  // namespace

TEST(Isa, NopDelaysTheNextIssueAndAddWritesAfterItsLatency) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, i32({1, 2, 3}));
  b.write_vec(0, 1, i32({10, 20, -30}));
  b.load(0, ".queue 0\nNOP 10\nADD.int32 @10, @0, @1, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty());
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(10 + 16));  // ADD at cycle 10, 16-cycle latency
  auto r = b.read_vec(0, 10);
  EXPECT_EQ(lane(r, 0), 11);
  EXPECT_EQ(lane(r, 1), 22);
  EXPECT_EQ(lane(r, 2), -27);
  EXPECT_EQ(b.chip(0).nops.get(), 1u);
  EXPECT_EQ(b.chip(0).adds.get(), 1u);
}

TEST(Isa, WaitIssuesAtTheAbsoluteCycleAndAddStreamsOneVectorPerCycle) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, test::pattern(1, 50));
  b.load(0, ".queue 3\nWAIT 100\nADD.int32 @1000, @0, @0, 50\n");
  b.run();
  ASSERT_TRUE(b.errors().empty());
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(100 + 49 + 16));  // last of 50 vectors
  EXPECT_EQ(b.chip(0).alu_busy_cycles.get(), 50u);
  auto in = b.read_vec(0, 0, 50), out = b.read_vec(0, 1000, 50);
  for (size_t i = 0; i < 50 * 80; ++i)
    ASSERT_EQ(lane(out, i), static_cast<int32_t>(2u * static_cast<uint32_t>(lane(in, i))));
}

TEST(Isa, AddOfEveryTypeMatchesTheAlu) {
  Bench b(test::node_yaml(2));
  std::vector<uint8_t> x = test::pattern(7), y = test::pattern(8);
  b.write_vec(0, 0, x);
  b.write_vec(0, 1, y);
  b.load(0,
         ".queue 0\nADD.fp32 @10, @0, @1, 1\n.queue 1\nADD.bf16 @11, @0, @1, 1\n"
         ".queue 2\nADD.fp16 @12, @0, @1, 1\n.queue 3\nADD.int32 @13, @0, @1, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty());
  const core::Dtype types[] = {core::Dtype::fp32, core::Dtype::bf16, core::Dtype::fp16, core::Dtype::int32};
  for (int k = 0; k < 4; ++k) {
    std::vector<uint8_t> want(tsp::kVectorBytes);
    core::add(types[k], want.data(), x.data(), y.data(), tsp::kVectorBytes);
    EXPECT_EQ(b.read_vec(0, 10 + k), want) << core::dtype_name(types[k]);
  }
}

TEST(Isa, NotifyRestartsSyncedQueuesAfterItsLatency) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, i32({5}));
  b.load(0,
         ".queue 0\nSYNC\nADD.int32 @10, @0, @0, 1\n"
         ".queue 1\nSYNC\nADD.int32 @11, @0, @0, 1\n"
         ".queue 2\nNOP 50\nNOTIFY\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  // NOTIFY at cycle 50, delivered at 54: both queues issue their ADD at cycle 54.
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(54 + 16));
  EXPECT_EQ(lane(b.read_vec(0, 10), 0), 10);
  EXPECT_EQ(lane(b.read_vec(0, 11), 0), 10);
  EXPECT_EQ(b.chip(0).syncs.get(), 2u);
  EXPECT_EQ(b.chip(0).notifies.get(), 1u);
}

TEST(Isa, SendReadsSramAtItsIssueCycleWritesBeforeReads) {
  // ADD writes @10 at cycle 16. A SEND issued at 16 on an idle port reads the
  // new value (a write at t is visible to a read at t).
  Bench b(test::node_yaml(3));
  b.write_vec(0, 0, i32({7}));
  b.load(0,
         ".queue 0\nADD.int32 @10, @0, @0, 1\n"
         ".queue 2\nWAIT 16\nSEND p1, @10, 1\n");
  const uint64_t recv_at = b.clk().cycle_at_or_after(b.clk().ps(16 + 205) + 26240 + 240000);
  b.load(2, ".queue 11\nWAIT " + std::to_string(recv_at) + "\nRECV p0, @0, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(lane(b.read_vec(2, 0), 0), 14);  // fresh
}

TEST(Isa, ASendOfAnAddResultStillOnItsStreamIsAHardwareError) {
  // A SEND issued at 15 would read @10 a cycle before the ADD's result lands
  // there: the stream check (docs/isa.md "LW and MXM") names both.
  Bench b(test::node_yaml(3));
  b.load(0,
         ".queue 0\nADD.int32 @10, @0, @0, 1\n"
         ".queue 1\nWAIT 15\nSEND p0, @10, 1\n");
  b.run();
  test::expect_hardware_error(b,
                              "SEND reads [0,0,0,10] at cycle 15, before the ADD issued at cycle 0 writes "
                              "its result there (cycle 16)");
}

TEST(Isa, ReceivedVectorIsReadableRecvLatencyCyclesAfterItIsTaken) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, i32({3, 4}));
  b.load(0, ".queue 0\nSEND p0, @0, 1\n");
  // RECV at 445 -> readable at cycle 650.
  b.load(1,
         ".queue 11\nWAIT 445\nRECV p0, @100, 1\n"
         ".queue 20\nWAIT 649\nADD.int32 @200, @100, @100, 1\n"
         ".queue 21\nWAIT 650\nADD.int32 @201, @100, @100, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(lane(b.read_vec(1, 200), 1), 0);
  EXPECT_EQ(lane(b.read_vec(1, 201), 1), 8);
}

TEST(Isa, EveryQueueRunsItsOwnStreamInParallel) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, i32({1}));
  std::string prog;
  for (int q = 0; q < 4; ++q)
    prog += ".queue " + std::to_string(q) + "\nWAIT " + std::to_string(100 + q) + "\nADD.int32 @" +
            std::to_string(10 + q) + ", @0, @0, 1\n";
  b.load(0, prog);
  b.run();
  ASSERT_TRUE(b.errors().empty());
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(103 + 16));
  EXPECT_EQ(b.chip(0).instructions.get(), 8u);
}

TEST(Isa, VectorOverwrittenAtItsSourceWhileInFlightArrivesWithTheValueSent) {
  // tsp0 sends @0..@3 at cycle 0 (read at cycles 0 .. ~70); an ADD overwrites
  // @1 and @3 at cycle 100 (after their reads, long before tsp1 writes them at
  // cycle ~650+). The vectors travel as references to tsp0's SRAM; the ADD must
  // not change what tsp1 receives.
  Bench b(test::node_yaml(2));
  std::vector<uint8_t> v = test::pattern(3, 4);
  b.write_vec(0, 0, v);
  b.load(0, ".queue 0\nSEND p0, @0, 4\n.queue 22\nWAIT 84\nADD.int32 @1, @1, @1, 1\nADD.int32 @3, @3, @3, 1\n");
  b.load(1, ".queue 11\nWAIT 445\nRECV p0, @100, 4\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.read_vec(1, 100, 4), v);                                                  // what was sent
  EXPECT_NE(b.read_vec(0, 1), std::vector<uint8_t>(v.begin() + 320, v.begin() + 640));  // the source did change
}

TEST(Isa, ASendOnALinkFasterThanTheClockIsCheckedVectorByVector) {
  // At 1000 Gb/s x 4 lanes a vector leaves every 656 ps, faster than a
  // 900 MHz cycle: a SEND issued at 16 reads @11 before the ADD's result
  // lands there at 17, though @10 (read first) has landed.
  Bench b(test::node_yaml(2, "  node0:\n    link*:\n      lane_gbps: 1000\n"));
  b.load(0,
         ".queue 0\nADD.int32 @10, @0, @0, 4\n"
         ".queue 1\nWAIT 16\nSEND p0, @10, 4\n");
  b.run();
  test::expect_hardware_error(b, "SEND reads [0,0,0,11] at cycle 17, before the ADD issued at cycle 0");
}
