// Per-chip oscillators and the HAC/SAC counters (docs/clocks.md).
#include <cmath>

#include "harness.h"
#include "models/clock/hac_counter.h"
#include "models/clock/oscillator.h"
#include "sw/sched/machine.h"

using namespace fabricvp;
using test::Bench;

TEST(Clock, NominalOscillatorIsExactlyTheCoreClock) {
  clock::Oscillator o(900.0, 0.0, 0.0, 1);
  core::Clock c(900.0);
  for (uint64_t k : {0ULL, 1ULL, 9ULL, 12345ULL, 100000000ULL, 1ULL << 40}) {
    EXPECT_EQ(o.ps(k), c.ps(k)) << k;
    EXPECT_EQ(o.cycle_at_or_after(c.ps(k)), k);
  }
}

TEST(Clock, PpmOffsetMovesEveryEdgeExactly) {
  clock::Oscillator fast(900.0, 100.0, 0.0, 1), slow(900.0, -100.0, 0.0, 1);
  EXPECT_DOUBLE_EQ(fast.mhz(), 900.09);
  // 10^8 cycles at 900.09 MHz: ceil(1e8 * 1e12 / 900.09e6) ps.
  const unsigned __int128 num = static_cast<unsigned __int128>(100000000ULL) * 1000000000000000ULL,
                          den = 900090000000ULL;
  const uint64_t want = static_cast<uint64_t>((num + den - 1) / den);
  EXPECT_EQ(fast.ps(100000000), want);
  // Over 10^8 cycles the two chips are 200 ppm = about 20,000 cycles apart.
  const double apart = (static_cast<double>(slow.ps(100000000)) - static_cast<double>(fast.ps(100000000))) / 1111.111;
  EXPECT_NEAR(apart, 20000.0, 10.0);
}

TEST(Clock, JitterIsBoundedDeterministicAndKeepsEdgesInOrder) {
  clock::Oscillator a(900.0, 0.0, 20.0, 7), b(900.0, 0.0, 20.0, 7), other(900.0, 0.0, 20.0, 8);
  core::Clock mean(900.0);
  double sq = 0;
  int differ = 0;
  const int n = 200000;
  for (int k = 1; k < n; ++k) {
    ASSERT_LT(a.ps(k - 1), a.ps(k));
    ASSERT_EQ(a.ps(k), b.ps(k));
    const double j = static_cast<double>(a.ps(k)) - static_cast<double>(mean.ps(k));
    ASSERT_LE(std::fabs(j), 20.0 * 3.47 + 1);
    sq += j * j;
    differ += a.ps(k) != other.ps(k);
    ASSERT_EQ(a.cycle_at_or_after(a.ps(k)), static_cast<uint64_t>(k));
    ASSERT_EQ(a.cycle_at_or_before(a.ps(k) - 1), static_cast<uint64_t>(k - 1));
  }
  EXPECT_NEAR(std::sqrt(sq / n), 20.0, 1.0);
  EXPECT_GT(differ, n / 2);
}

TEST(Clock, JitterThatCouldReorderEdgesIsAConfigurationError) {
  EXPECT_THROW(Bench(test::node_yaml(2, "  node0:\n    tsp1:\n      clock_jitter_ps: 500\n")), core::ConfigError);
}

TEST(Clock, ChipsDrawTheirOffsetFromTheSeedAndTheSchedulerSeesNominalClocks) {
  Bench b(test::node_yaml(4, "  node0:\n    tsp*:\n      clock_ppm_spread: 100\n"));
  double lo = 1e9, hi = -1e9;
  for (uint32_t c = 0; c < 4; ++c) {
    const double ppm = b.chip(c).clock().ppm();
    EXPECT_LE(std::fabs(ppm), 100.0);
    lo = std::min(lo, ppm);
    hi = std::max(hi, ppm);
    EXPECT_DOUBLE_EQ(b.chip(c).nominal_clock().mhz(), 900.0);
  }
  EXPECT_GT(hi - lo, 1.0);  // four independent draws
  const sched::Machine m = groq::machine_of(*b.sys);
  for (const auto& c : m.chips) EXPECT_EQ(c.clock.ps(100000000), core::Clock(900.0).ps(100000000));
  EXPECT_TRUE(b.sys->hac->exchanging());  // auto: on, the oscillators are not nominal
}

TEST(Clock, DefaultsAreNominalAndTheExchangeIsOff) {
  Bench b(test::node_yaml(8));
  for (uint32_t c = 0; c < 8; ++c) {
    EXPECT_EQ(b.chip(c).clock().ppm(), 0.0);
    EXPECT_EQ(b.chip(c).clock().ps(123456789), core::Clock(900.0).ps(123456789));
  }
  EXPECT_FALSE(b.sys->hac->exchanging());
}

TEST(Clock, HacCounterEpochsAdjustmentsAndDrift) {
  clock::HacCounter h(0);
  EXPECT_EQ(h.next_boundary(0), 252u);
  EXPECT_EQ(h.next_boundary(251), 252u);
  EXPECT_EQ(h.next_boundary(252), 504u);
  EXPECT_EQ(h.hac(300), 48);
  EXPECT_EQ(h.sac(300), 48);
  // +3 decided at 300: the epoch that starts at 504 is 3 cycles shorter.
  h.adjust(3, 300);
  EXPECT_EQ(h.next_boundary(400), 504u);
  EXPECT_EQ(h.next_boundary(504), 753u);
  EXPECT_EQ(h.hac(600), 96);
  EXPECT_EQ(h.drift(753), -3);  // the HAC moved 3 cycles ahead of local time
  // -2: an epoch 2 cycles longer; the counter holds at 251.
  h.adjust(-2, 800);
  EXPECT_EQ(h.next_boundary(1004), 1005u);
  EXPECT_EQ(h.next_boundary(1005), 1259u);
  EXPECT_EQ(h.hac(1257), 251);
  EXPECT_EQ(h.drift(1259), -1);
  EXPECT_EQ(h.total_adjustment(), 1);
  h.resync(1259);
  EXPECT_EQ(h.drift(1259), 0);
  EXPECT_EQ(h.sac(1259), h.hac(1259));
  // Far ahead without adjustments: O(1), and the past stays readable.
  EXPECT_EQ(h.next_boundary(1259 + 252 * 1000000ULL + 5), 1259 + 252 * 1000001ULL);
  EXPECT_EQ(h.hac(1259 + 252 * 1000000ULL + 5), 5);
  EXPECT_EQ(h.hac(1259 + 252 * 1000000ULL - 2), 250);
  EXPECT_EQ(clock::wrap_epoch(130), -122);
  EXPECT_EQ(clock::wrap_epoch(-127), 125);
}
