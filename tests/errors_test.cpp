// Programs that break the hardware's rules fail loudly: no back-pressure,
// no interlocks, so the model reports the chip, port or queue and the cycle.
#include "harness.h"

using namespace fabricvp;
using test::Bench;

namespace {
std::string first_error(const Bench& b) {
  if (b.errors().empty()) return "";
  const auto& e = b.errors()[0];
  return e.where + " @" + std::to_string(e.cycle) + ": " + e.message;
}
}  // namespace

TEST(HardwareErrors, RecvTooEarlyIsAnUnderflow) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nSEND p0, @0, 4\n");
  b.load(1, ".queue 11\nWAIT 444\nRECV p0, @0, 4\n");  // the vector lands at cycle 444.6
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_EQ(b.errors()[0].where, "sys.node0.tsp1.c2c0");
  EXPECT_EQ(b.errors()[0].cycle, 444);
  EXPECT_NE(b.errors()[0].message.find("RX underflow on c2c0 from sys.node0.tsp0: RECV issued at cycle 444"),
            std::string::npos)
      << first_error(b);
  EXPECT_NE(b.errors()[0].message.find("next vector arrives at cycle 445"), std::string::npos) << first_error(b);
}

TEST(HardwareErrors, RecvWithNothingSentIsAnUnderflow) {
  Bench b(test::node_yaml(2));
  b.load(1, ".queue 11\nWAIT 1000\nRECV p0, @0, 4\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u) << first_error(b);
  EXPECT_NE(b.errors()[0].message.find("no further vector was sent to this port"), std::string::npos);
}

TEST(HardwareErrors, TwoSendsOverrunTheReceiveBuffer) {
  // 32 vectors arrive back to back; the receiver takes them far too late. The
  // 17th arrival finds the 16-vector buffer full.
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nSEND p0, @0, 16\nSEND p0, @16, 16\n");
  b.load(1, ".queue 11\nWAIT 5000\nRECV p0, @0, 32\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u) << first_error(b);
  uint64_t arrival16 = b.clk().ps(205) + 26240ull * 17 + 240000;
  EXPECT_EQ(b.errors()[0].where, "sys.node0.tsp1.c2c0");
  EXPECT_EQ(b.errors()[0].time_ps, arrival16);
  EXPECT_EQ(static_cast<uint64_t>(b.errors()[0].cycle), b.clk().cycle_at_or_before(arrival16));
  EXPECT_NE(b.errors()[0].message.find("RX buffer overflow"), std::string::npos) << first_error(b);
}

TEST(HardwareErrors, SendBeyondTheTransmitBufferOverflows) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nSEND p0, @0, 17\nSEND p0, @17, 1\n");
  b.run();
  ASSERT_FALSE(b.errors().empty());
  EXPECT_EQ(b.errors()[0].where, "sys.node0.tsp0.queue0");
  EXPECT_EQ(b.errors()[0].cycle, 1);
  EXPECT_NE(b.errors()[0].message.find("TX buffer overflow on c2c0"), std::string::npos) << first_error(b);
}

TEST(HardwareErrors, VectorsNobodyReceivesAreReported) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nSEND p0, @0, 4\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("4 vector(s) from sys.node0.tsp0 arrived on c2c0 but no RECV ever took them"),
            std::string::npos)
      << first_error(b);
}

TEST(HardwareErrors, OverlappingRecvsOnOnePort) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nSEND p0, @0, 20\n");
  b.load(1, ".queue 11\nWAIT 445\nRECV p0, @0, 10\n.queue 12\nWAIT 450\nRECV p0, @10, 10\n");
  b.run();
  ASSERT_FALSE(b.errors().empty());
  EXPECT_EQ(b.errors()[0].where, "sys.node0.tsp1.queue12");
  EXPECT_NE(b.errors()[0].message.find("previous RECV is still taking vectors"), std::string::npos) << first_error(b);
}

TEST(HardwareErrors, AddWhenEveryAluIsBusy) {
  Bench b(test::node_yaml(2, "  node0:\n    tsp*:\n      vxm_alus: 1\n"));
  b.load(0, ".queue 0\nADD.fp32 @1000, @0, @0, 100\n.queue 1\nWAIT 50\nADD.fp32 @2000, @0, @0, 1\n");
  b.run();
  ASSERT_FALSE(b.errors().empty());
  EXPECT_EQ(b.errors()[0].cycle, 50);
  EXPECT_NE(b.errors()[0].message.find("all 1 vector ALUs are busy (next free at cycle 100)"), std::string::npos)
      << first_error(b);
}

TEST(HardwareErrors, WaitForACyclePassedAlready) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nNOP 10\nWAIT 5\n");
  b.run();
  ASSERT_FALSE(b.errors().empty());
  EXPECT_NE(b.errors()[0].message.find("WAIT 5 issued at cycle 10"), std::string::npos) << first_error(b);
}

TEST(HardwareErrors, SyncWithoutNotifyNeverFinishes) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 4\nNOP 60\nSYNC\n.queue 5\nNOP 50\nNOTIFY\n");  // the NOTIFY precedes the SYNC
  b.run();
  ASSERT_FALSE(b.errors().empty());
  EXPECT_EQ(b.errors()[0].where, "sys.node0.tsp0.queue4");
  EXPECT_NE(b.errors()[0].message.find("parked in SYNC"), std::string::npos) << first_error(b);
}

TEST(HardwareErrors, SendOnAPortWithoutLinkIsRejectedAtLoad) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nSEND p7, @0, 1\n");
  try {
    b.chip(0).start();
    FAIL() << "expected a program error";
  } catch (const core::ConfigError& e) {
    EXPECT_STREQ(e.what(), "sys.node0.tsp0: queue 0 instruction 0 (source line 2): SEND port 7 has no link");
  }
}

TEST(HardwareErrors, DataPathStopsAtTheFirstError) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, test::pattern(1, 4));
  b.load(0, ".queue 0\nSEND p0, @0, 4\n");
  b.load(1, ".queue 11\nWAIT 300\nRECV p0, @0, 4\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_EQ(b.read_vec(1, 0), std::vector<uint8_t>(tsp::kVectorBytes, 0));  // nothing written after the fault
}

TEST(HardwareErrors, AnErrorFoundWhileAnotherChipPullsDataStopsCleanly) {
  // tsp0 never drains on its own before tsp1 needs its data (huge drain
  // interval); tsp1's pull makes tsp0 sweep its receive buffer and find its
  // own underflow at cycle 10 before it has read the vectors tsp1 wants.
  Bench b(test::node_yaml(2, "  node0:\n    tsp0:\n      drain_interval_ns: 1000000000\n"));
  b.load(0, ".queue 0\nSEND p0, @0, 200\n.queue 11\nWAIT 10\nRECV p0, @1000, 1\n");
  b.load(1, ".queue 11\nWAIT 445\nRECV p0, @0, 200\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u) << first_error(b);
  EXPECT_EQ(b.errors()[0].where, "sys.node0.tsp0.c2c0");
  EXPECT_EQ(b.errors()[0].cycle, 10);
}
