// C2C link timing, exact to the picosecond, and the calibrated hop latency.
#include "harness.h"

using namespace fabricvp;
using test::Bench;

namespace {
// tx pipeline + propagation + FEC (KP4: 5140 message bits at 100 Gb/s + 20 ns decoder) + rx pipeline
constexpr uint64_t kLinkLatencyPs = 60000 + 4000 + (51400 + 20000) + 104600;
}  // namespace

TEST(Link, OneHopIs650CyclesAt900MHz) {
  // SEND issued at cycle 0 -> first packet at the serializer at cycle 205 ->
  // 26.24 ns serialization -> 240 ns link -> receive buffer at 494.018 ns (cycle 444.6)
  // -> RECV at cycle 445 -> readable in SRAM at cycle 650 = 722.2 ns (seed 000: 722 ns per hop).
  Bench b(test::node_yaml(2));
  EXPECT_EQ(b.clk().ps(205) + 26240 + kLinkLatencyPs, 494018u);
  EXPECT_EQ(b.clk().cycle_at_or_after(494018), 445u);
  b.write_vec(0, 0, test::pattern(1));
  b.load(0, ".queue 0\nSEND p0, @0, 1\n");
  b.load(1, ".queue 11\nWAIT 445\nRECV p0, @100, 1\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(1).last_write_ps(), b.clk().ps(650));
  EXPECT_EQ(b.chip(1).last_write_ps(), 722223u);
  EXPECT_EQ(b.read_vec(1, 100), test::pattern(1));
}

TEST(Link, BurstOfNVectorsArrivesBackToBackExactly) {
  const uint32_t n = 1000;
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, test::pattern(2, n));
  b.load(0, ".queue 0\nSEND p0, @0, 1000\n");
  b.load(1, ".queue 11\nWAIT 445\nRECV p0, @5000, 1000\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  // vector i readable at T(650) + i * 26240 ps
  EXPECT_EQ(b.chip(1).last_write_ps(), 722223u + 26240u * (n - 1));
  EXPECT_EQ(b.now_ps(), b.chip(1).last_write_ps());
  const c2c::Link& l = *b.sys->links[0];
  EXPECT_EQ(l.a_to_b.packets.get(), n);
  EXPECT_EQ(l.a_to_b.busy_ps.get(), 26240ull * n);
  EXPECT_EQ(l.a_to_b.payload_bytes.get(), 320ull * n);
  EXPECT_EQ(l.a_to_b.wire_bytes.get(), 328ull * n);
  EXPECT_EQ(l.b_to_a.packets.get(), 0u);
  EXPECT_EQ(b.read_vec(1, 5000, n), test::pattern(2, n));
  EXPECT_EQ(b.chip(1).port(0).rx_peak_occupancy.get(), 1u);
}

TEST(Link, LaneCountAndRateSetTheSerializationTime) {
  // 2 lanes x 30 Gb/s: 2624 bits per packet take 43733.3 ps; packet i ends at start + ceil((i+1) * 43733.3).
  Bench b(test::node_yaml(2, "  node0:\n    link*:\n      lanes: 2\n      lane_gbps: 30\n"));
  const core::SerialRate& ser = b.sys->links[0]->a_to_b.rate();
  EXPECT_EQ(ser.ps(1), 43734u);
  EXPECT_EQ(ser.ps(3), 131200u);
  const uint32_t n = 77;
  uint64_t start = b.clk().ps(205);
  // The FEC codeword accumulation scales with the rate too: 5140 message bits at 60 Gb/s = 85666.7 ps.
  const uint64_t latency = b.sys->links[0]->a_to_b.latency_ps();
  EXPECT_EQ(latency, 60000u + 4000u + 85667u + 20000u + 104600u);
  uint64_t arrival0 = start + ser.ps(1) + latency;
  uint64_t c = b.clk().cycle_at_or_after(arrival0);
  b.write_vec(0, 0, test::pattern(3, n));
  b.load(0, ".queue 0\nSEND p0, @0, 77\n");
  b.load(1, ".queue 11\nWAIT " + std::to_string(c) + "\nRECV p0, @0, 77\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(1).last_write_ps(), b.clk().ps(c + 205) + ser.ps(n - 1));
  EXPECT_EQ(b.sys->links[0]->a_to_b.busy_ps.get(), ser.ps(n));
  EXPECT_EQ(b.read_vec(1, 0, n), test::pattern(3, n));
}

TEST(Link, SendWithinTheTransmitBufferStartsWhenTheSerializerIsFree) {
  // Two bursts of 16 on one port: the second SEND (cycle 1) waits for the first in the
  // 16-packet transmit buffer and follows it back-to-back.
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, test::pattern(4, 32));
  b.load(0, ".queue 0\nSEND p0, @0, 16\nSEND p0, @16, 16\n");
  b.load(1, ".queue 11\nWAIT 445\nRECV p0, @0, 32\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.chip(1).last_write_ps(), 722223u + 26240u * 31);
  EXPECT_EQ(b.sys->links[0]->a_to_b.busy_ps.get(), 26240u * 32);
  EXPECT_EQ(b.read_vec(1, 0, 32), test::pattern(4, 32));
  EXPECT_GE(b.chip(0).port(0).tx_peak_backlog.get(), 15u);
}

TEST(Link, BothDirectionsAreIndependent) {
  Bench b(test::node_yaml(2));
  b.write_vec(0, 0, test::pattern(5, 10));
  b.write_vec(1, 0, test::pattern(6, 10));
  b.load(0, ".queue 0\nSEND p0, @0, 10\n.queue 11\nWAIT 445\nRECV p0, @100, 10\n");
  b.load(1, ".queue 0\nSEND p0, @0, 10\n.queue 11\nWAIT 445\nRECV p0, @100, 10\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(b.read_vec(1, 100, 10), test::pattern(5, 10));
  EXPECT_EQ(b.read_vec(0, 100, 10), test::pattern(6, 10));
  EXPECT_EQ(b.chip(0).last_write_ps(), b.chip(1).last_write_ps());
}
