#include <gtest/gtest.h>

#include <random>

#include "models/core/timebase.h"

using fabricvp::core::Clock;
using fabricvp::core::SerialRate;

TEST(Timebase, Clock900MHzEdgesAreExactToThePicosecond) {
  Clock c(900.0);
  EXPECT_EQ(c.ps(0), 0u);
  EXPECT_EQ(c.ps(1), 1112u);   // ceil(1111.11)
  EXPECT_EQ(c.ps(9), 10000u);  // 9 cycles = 10 ns exactly
  EXPECT_EQ(c.ps(900), 1000000u);
  EXPECT_EQ(c.ps(650), 722223u);                          // one hop: 650 cycles = 722.2 ns
  EXPECT_EQ(c.ps(900000000000ULL), 1000000000000000ULL);  // 1000 s, no drift
}

TEST(Timebase, CycleLookupInvertsEdges) {
  std::mt19937_64 rng(7);
  for (double mhz : {900.0, 1000.0, 1250.0, 333.333}) {
    Clock c(mhz);
    for (int i = 0; i < 20000; ++i) {
      uint64_t t = rng() % 4000000000000ULL;
      uint64_t a = c.cycle_at_or_after(t);
      EXPECT_GE(c.ps(a), t);
      if (a) {
        EXPECT_LT(c.ps(a - 1), t);
      }
      uint64_t b = c.cycle_at_or_before(t);
      EXPECT_LE(c.ps(b), t);
      EXPECT_GT(c.ps(b + 1), t);
    }
  }
}

TEST(Timebase, SerializationOf328BytePacketsAt100Gbps) {
  SerialRate r(328 * 8, 4, 25.0);
  EXPECT_EQ(r.ps(1), 26240u);  // 2624 bits / 100 Gb/s
  EXPECT_EQ(r.ps(1000), 26240000u);
  EXPECT_NEAR(r.payload_GBps(320), 12.195, 0.001);
}

TEST(Timebase, SerializationRoundsOnceNeverAccumulates) {
  SerialRate r(328 * 8, 4, 30.0);  // 120 Gb/s: 21866.67 ps per packet
  EXPECT_EQ(r.ps(1), 21867u);
  EXPECT_EQ(r.ps(3), 65600u);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100000; ++i) {
    uint64_t n = rng() % 100000000;
    unsigned __int128 exact = static_cast<unsigned __int128>(n) * 2624 * 1000000000ULL;
    uint64_t want = static_cast<uint64_t>((exact + 120000000 - 1) / 120000000);
    ASSERT_EQ(r.ps(n), want) << n;
  }
}

TEST(Timebase, CeilRatioLargeArgumentsUseWideArithmetic) {
  Clock c(777.777);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10000; ++i) {
    uint64_t n = rng() >> 20;  // up to 2^44 cycles
    unsigned __int128 exact = static_cast<unsigned __int128>(n) * 1000000000000000ULL;
    uint64_t f = 777777000000ULL;  // mHz
    EXPECT_EQ(c.ps(n), static_cast<uint64_t>((exact + f - 1) / f));
  }
}
