#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>

#include "models/core/timebase.h"
#include "models/core/timed_queue.h"

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

TEST(Timebase, CycleLookupIsExactAroundEveryEdge) {
  // Every ps from 0 to 20 cycles, and around edges far out, at rates whose
  // cycle is and is not a whole number of ps.
  for (double mhz : {900.0, 1000.0, 933.333, 777.777}) {
    Clock c(mhz);
    for (uint64_t t = 0; t <= c.ps(20); ++t) {
      const uint64_t a = c.cycle_at_or_after(t);
      ASSERT_GE(c.ps(a), t) << mhz << " MHz, t " << t;
      if (a) {
        ASSERT_LT(c.ps(a - 1), t) << mhz << " MHz, t " << t;
      }
    }
    for (uint64_t e : {uint64_t{1} << 40, uint64_t{1} << 50, uint64_t{3} << 55})
      for (uint64_t t = c.ps(e) - 2; t <= c.ps(e) + 2; ++t) {
        const uint64_t a = c.cycle_at_or_after(t);
        ASSERT_GE(c.ps(a), t);
        ASSERT_LT(c.ps(a - 1), t);
      }
  }
}

TEST(Timebase, SerializationStepsEqualEachPacketsTime) {
  for (double gbps : {25.0, 30.0, 26.5625, 7.77}) {
    SerialRate r(328 * 8, 4, gbps);
    auto s = r.steps();
    for (uint64_t i = 0; i < 200000; ++i, s.next()) ASSERT_EQ(s.value(), r.ps(i)) << gbps << " Gb/s, packet " << i;
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

namespace {
// The action queue's calendar beside its reference, a map of FIFOs.
struct CheckedCalendar {
  fabricvp::core::TimeCalendar<uint64_t> cal;
  std::map<uint64_t, std::deque<uint64_t>> ref;
  size_t ref_size = 0;
  uint64_t next_id = 0;
  void push(uint64_t t) {
    cal.push(t, next_id);
    ref[t].push_back(next_id++);
    ++ref_size;
  }
  /// take() (due() said an item is due) is the reference's earliest item.
  void take() {
    ASSERT_FALSE(ref.empty());
    ASSERT_EQ(cal.take(), ref.begin()->second.front());
    ref.begin()->second.pop_front();
    if (ref.begin()->second.empty()) ref.erase(ref.begin());
    --ref_size;
  }
};
}  // namespace

// The action queue's calendar: time order, and push order within a time,
// as a map of FIFOs gives, whatever the spread of times, with items pushed at
// the time being taken joining it and many distinct times alive at once
// (items moving down the buckets).
TEST(TimeCalendar, TakesItemsInTimeThenPushOrderAsAMapOfFifos) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 20; ++round) {
    CheckedCalendar c;
    auto& [cal, ref, ref_size, next_id] = c;
    const uint64_t spread = round % 2 ? 1000 : (uint64_t{1} << (20 + round));
    auto push = [&](uint64_t t) { c.push(t); };
    for (int i = 0; i < 200; ++i) push(rng() % spread);
    while (!cal.empty()) {
      ASSERT_EQ(cal.size(), ref_size);
      const uint64_t now = cal.top_time();
      ASSERT_EQ(now, ref.begin()->first);
      if (now > 0) {
        ASSERT_FALSE(cal.due(now - 1));
      }
      while (cal.due(now)) {
        ASSERT_EQ(ref.begin()->first, now);
        ASSERT_NO_FATAL_FAILURE(c.take());
        // pushes while taking: at now (joins this time, after what is there), soon, or far ahead
        const uint64_t r = rng() % 8;
        if (next_id < 20000 && r == 0) push(now);
        if (next_id < 20000 && r <= 3) push(now + 1 + rng() % 7);
        if (next_id < 20000 && r == 3) push(now + rng() % spread);
        if (next_id < 20000 && r >= 5) push(now + 1 + rng() % 50);
      }
      ASSERT_TRUE(ref.empty() || ref.begin()->first > now);
      // a time pushed again once taken (a later delta cycle at the same simulated time)
      if (next_id < 20000 && rng() % 4 == 0) {
        push(now);
        ASSERT_TRUE(cal.due(now));
        ASSERT_NO_FATAL_FAILURE(c.take());
        ASSERT_FALSE(cal.due(now));
      }
    }
    EXPECT_TRUE(ref.empty());
    EXPECT_GT(next_id, 1000u);
  }
}

// The calendar when every item has its own time, as in the SiP-ML fabrics:
// earliest first, as an ordered map gives, with times pushed after a look at
// the earliest that come before it (an action posted for sooner than the
// queue's next wake-up), times equal to the one taken last, spreads from a
// few picoseconds to 2^63, and a push before the time taken last refused.
TEST(TimeCalendar, TakesDistinctTimesInOrderWhateverTheirSpread) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 40; ++round) {
    CheckedCalendar c;
    auto& [cal, ref, ref_size, next_id] = c;
    const unsigned bits = 4 + round * 59 / 39;  // spread 2^4 .. 2^63
    uint64_t now = 0;
    auto push = [&](uint64_t t) { c.push(t); };
    for (int i = 0; i < 300; ++i) push(rng() >> (64 - bits));
    for (int step = 0; step < 5000 && !ref.empty(); ++step) {
      ASSERT_EQ(cal.size(), ref_size);
      ASSERT_EQ(cal.top_time(), ref.begin()->first);
      const uint64_t top = ref.begin()->first;
      if (top > now + 1 && rng() % 3 == 0) push(now + 1 + rng() % (top - now - 1));  // before the earliest
      if (rng() % 2 == 0) continue;
      now = ref.begin()->first;
      ASSERT_TRUE(cal.due(now));
      ASSERT_NO_FATAL_FAILURE(c.take());
      if (rng() % 4 == 0) push(now);  // the time being taken, again
      if (rng() % 2 == 0 && now < (uint64_t{1} << 62)) push(now + (rng() >> (64 - bits)));
    }
    while (!ref.empty()) {
      const uint64_t t = ref.begin()->first;
      ASSERT_TRUE(cal.due(t));
      ASSERT_NO_FATAL_FAILURE(c.take());
      now = t;
    }
    EXPECT_TRUE(cal.empty());
    EXPECT_FALSE(cal.due(~uint64_t(0)));
    if (now > 0) {
      EXPECT_THROW(cal.push(now - 1, 0), std::logic_error);
    }
  }
}

// A burst larger than the room a bucket keeps (2^16 items at one time, and as
// many spread over later times), taken by one due() at a time after all of
// them; following() names the items after each one at the same time.
TEST(TimeCalendar, ABurstIsTakenInOrderAndFollowingNamesTheRestOfItsTime) {
  fabricvp::core::TimeCalendar<uint64_t> cal;
  const uint64_t n = 70000;
  for (uint64_t i = 0; i < n; ++i) cal.push(1000, i);
  for (uint64_t i = 0; i < n; ++i) cal.push(2000 + i % 7, n + i);
  std::vector<std::pair<uint64_t, uint64_t>> want;  // (time, item), as taken
  for (uint64_t i = 0; i < n; ++i) want.emplace_back(1000, i);
  for (uint64_t t = 0; t < 7; ++t)
    for (uint64_t i = 0; i < n; ++i)
      if (i % 7 == t) want.emplace_back(2000 + t, n + i);
  size_t k = 0, run_end = 0;
  while (cal.due(5000)) {
    const uint64_t t = cal.top_time();
    const uint64_t item = cal.take();
    ASSERT_LT(k, want.size());
    ASSERT_EQ(t, want[k].first);
    ASSERT_EQ(item, want[k].second);
    if (k == run_end) {  // the first item of its time: where that time's items end
      while (run_end < want.size() && want[run_end].first == t) ++run_end;
    }
    const auto [next, count] = cal.following();
    ASSERT_EQ(count, run_end - k - 1);
    for (size_t on : {size_t{1}, size_t{2}, size_t{10}})
      if (on <= count) {
        ASSERT_EQ(next[on - 1].t, t);
        ASSERT_EQ(next[on - 1].item, want[k + on].second);
      }
    if (k == n) {  // taking 2000 with later times waiting: 1999 is refused
      EXPECT_THROW(cal.push(1999, 0), std::logic_error);
    }
    ++k;
  }
  EXPECT_EQ(k, want.size());
  EXPECT_TRUE(cal.empty());
}
