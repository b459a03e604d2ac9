// ACE datapath RTL: the verilated ALU against hand-checked IEEE results and
// the host's float arithmetic; the pipeline timing of the RTL and of the C++
// model against hand-computed cycles; the equivalence bench (passes, catches a
// wrong expectation, deterministic); $finish and the watchdog; the command.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "models/ace/datapath.h"
#include "models/ace/rtl_datapath.h"
#include "models/core/context.h"
#include "models/core/dtype.h"
#include "tb/ace/equiv.h"

namespace fs = std::filesystem;
using namespace fabricvp;
using namespace fabricvp::ace;
using core::add_lane;
using core::Dtype;
using core::dtype_bytes;
using core::dtype_name;

namespace {

struct Case {
  uint32_t a, b, sum;
};

using fabricvp::test::bits;
using fabricvp::test::flt;

Chunk make_chunk(Op op, Dtype dt, uint32_t row, const std::vector<uint32_t>& data, bool wb, bool send, uint32_t tag = 0,
                 uint32_t part = 0) {
  Chunk c;
  c.op = op;
  c.dtype = dt;
  c.part = part;
  c.row = row;
  c.wb = wb;
  c.send = send;
  c.tag = tag;
  c.data = data;
  return c;
}

/// a[i] + b[i] computed by the RTL: b is stored into a row, then a is added to it.
std::vector<uint32_t> rtl_add(RtlDatapath& rtl, Dtype dt, const std::vector<std::pair<uint32_t, uint32_t>>& ops) {
  const Geometry& g = rtl.geometry();
  rtl.configure(0, 0, g.depth);
  std::vector<uint32_t> out;
  for (size_t first = 0; first < ops.size(); first += g.lanes) {
    std::vector<uint32_t> a(g.lanes, 0), b(g.lanes, 0);
    for (size_t i = 0; i < g.lanes && first + i < ops.size(); ++i) {
      a[i] = ops[first + i].first;
      b[i] = ops[first + i].second;
    }
    const uint32_t row = static_cast<uint32_t>((first / g.lanes) % g.depth);
    rtl.submit(make_chunk(Op::store, dt, row, b, true, false));
    rtl.submit(make_chunk(Op::add, dt, row, a, false, true));
    Completion stored, sum;
    EXPECT_TRUE(rtl.next(stored));
    EXPECT_TRUE(rtl.next(sum));
    EXPECT_EQ(sum.data.size(), g.lanes);
    for (size_t i = 0; i < g.lanes && first + i < ops.size(); ++i) out.push_back(sum.data.at(i));
  }
  return out;
}

void expect_rtl_sums(Dtype dt, const std::vector<Case>& cases) {
  RtlDatapath rtl("dut");
  std::vector<std::pair<uint32_t, uint32_t>> ops;
  for (const Case& c : cases) ops.emplace_back(c.a, c.b);
  std::vector<uint32_t> got = rtl_add(rtl, dt, ops);
  ASSERT_EQ(got.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(got[i], cases[i].sum) << dtype_name(dt) << std::hex << " RTL " << cases[i].a << " + " << cases[i].b;
    EXPECT_EQ(add_lane(dt, cases[i].a, cases[i].b), cases[i].sum)
        << dtype_name(dt) << std::hex << " C++ " << cases[i].a << " + " << cases[i].b;
  }
}

}  // namespace

TEST(AceAlu, Fp32CornerCasesGiveTheIeeeResults) {
  expect_rtl_sums(Dtype::fp32,
                  {
                      {0x00000000, 0x80000000, 0x00000000},  // +0 + -0 = +0
                      {0x80000000, 0x80000000, 0x80000000},  // -0 + -0 = -0
                      {0x3f800000, 0xbf800000, 0x00000000},  // 1 - 1 = +0
                      {0x80000001, 0x00000001, 0x00000000},  // subnormal x - x = +0
                      {0x80000000, 0x00000001, 0x00000001}, {0x7f800000, 0xff800000, 0x7fc00000},  // inf - inf = NaN
                      {0x7f800000, 0x3f800000, 0x7f800000}, {0xff800000, 0xff800000, 0xff800000},
                      {0x7fc00001, 0x3f800000, 0x7fc00000},  // NaN payload: canonical
                      {0xffc00000, 0x00000000, 0x7fc00000},  // negative NaN: canonical
                      {0x7f800001, 0x00000000, 0x7fc00000},  // signalling NaN: canonical
                      {0x7f800000, 0x7fc00000, 0x7fc00000}, {0x7f7fffff, 0x7f7fffff, 0x7f800000},  // overflow
                      {0x7f7fffff, 0x73000000, 0x7f800000},  // max + half ulp: tie, odd -> inf
                      {0x7f7fffff, 0x72800000, 0x7f7fffff},  // max + quarter ulp
                      {0x00000001, 0x00000001, 0x00000002},  // subnormals, no flush
                      {0x007fffff, 0x00000001, 0x00800000},  // largest subnormal + 1 ulp = min normal
                      {0x00800000, 0x80000001, 0x007fffff},  // min normal - 1 ulp: subnormal
                      {0x3f800000, 0x33800000, 0x3f800000},  // 1 + 2^-24: tie to even
                      {0x3f800001, 0x33800000, 0x3f800002},  // tie, odd rounds up
                      {0x3f800000, 0x33800001, 0x3f800001},  // above the tie
                      {0x3f800000, 0xb3800000, 0x3f7fffff},  // 1 - 2^-24 exact
                      {0x3f800000, 0xb3000000, 0x3f800000},  // 1 - 2^-25: tie to even
                      {0x4b800000, 0x3f800000, 0x4b800000},  // 2^24 + 1: tie to even
                      {0x4b800000, 0x40400000, 0x4b800002},  // 2^24 + 3: tie to even (up)
                      {0x40000000, 0xbfffffff, 0x34000000},  // 2 - (2 - ulp): cancellation
                      {0xc0400000, 0x3f800000, 0xc0000000},  // -3 + 1 = -2
                      {0x00000000, 0x00000000, 0x00000000},
                  });
}

TEST(AceAlu, Fp16CornerCasesGiveTheIeeeResults) {
  expect_rtl_sums(Dtype::fp16, {
                                   {0x7bff, 0x7bff, 0x7c00},  // 65504 + 65504 overflows
                                   {0x7bff, 0x4c00, 0x7c00},  // 65504 + 16: tie, odd -> inf
                                   {0x7bff, 0x4bff, 0x7bff},
                                   {0x7c00, 0xfc00, 0x7e00},  // inf - inf
                                   {0xfe00, 0x3c00, 0x7e00},  // negative NaN: canonical
                                   {0x7c01, 0x0000, 0x7e00},  // signalling NaN: canonical
                                   {0xfc00, 0x3c00, 0xfc00},
                                   {0x0001, 0x0001, 0x0002},  // subnormals
                                   {0x03ff, 0x0001, 0x0400},
                                   {0x0400, 0x8001, 0x03ff},
                                   {0x3c00, 0x1000, 0x3c00},  // 1 + 2^-11: tie to even
                                   {0x3c01, 0x1000, 0x3c02},
                                   {0x8000, 0x8000, 0x8000},
                                   {0x0000, 0x8000, 0x0000},
                                   {0x3c00, 0xbc00, 0x0000},
                                   {0xdead3c00, 0xbeef3c00, 0x4000},  // upper halves ignored: 1 + 1 = 2
                               });
}

TEST(AceAlu, Bf16CornerCasesGiveTheIeeeResults) {
  expect_rtl_sums(Dtype::bf16, {
                                   {0x7f7f, 0x7f7f, 0x7f80},  // overflow
                                   {0x7f80, 0xff80, 0x7fc0},  // inf - inf
                                   {0xffc1, 0x0000, 0x7fc0},  // NaN: canonical
                                   {0x3f80, 0x3b80, 0x3f80},  // 1 + 2^-8: tie to even
                                   {0x3f81, 0x3b80, 0x3f82},
                                   {0x0001, 0x0001, 0x0002},  // subnormals
                                   {0x007f, 0x0001, 0x0080},
                                   {0x8000, 0x8000, 0x8000},
                                   {0x3f80, 0xbf80, 0x0000},
                                   {0x12343f80, 0xffff3f80, 0x4000},  // upper halves ignored
                               });
}

TEST(AceAlu, Int32Wraps) {
  expect_rtl_sums(Dtype::int32, {
                                    {0x7fffffff, 1, 0x80000000},
                                    {0xffffffff, 1, 0},
                                    {0x80000000, 0x80000000, 0},
                                    {12345, 0xffffffff, 12344},
                                });
}

TEST(AceAlu, Fp32AgreesWithHostFloatArithmetic) {
  // The host's float addition (round to nearest even, no flush to zero) is an
  // independent reference for the RTL's fp32 adder.
  const uint64_t seed = 20261201;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::pair<uint32_t, uint32_t>> ops;
  for (int i = 0; i < 24000; ++i) {
    uint32_t a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    switch (i % 4) {
      case 0: break;                                                             // anything, NaNs included
      case 1: b = (b & 0x807fffffu) | (a & 0x7f800000u); break;                  // same binade: cancellation
      case 2: b = (b & 0x80ffffffu) | ((a & 0x7f000000u) ^ 0x01000000u); break;  // nearby binades
      case 3: a &= 0x80ffffffu, b &= 0x80ffffffu; break;                         // tiny and subnormal
    }
    ops.emplace_back(a, b);
  }
  RtlDatapath rtl("dut");
  std::vector<uint32_t> got = rtl_add(rtl, Dtype::fp32, ops);
  ASSERT_EQ(got.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    float r = flt(ops[i].first) + flt(ops[i].second);
    uint32_t want = r != r ? 0x7fc00000u : bits(r);
    ASSERT_EQ(got[i], want) << std::hex << ops[i].first << " + " << ops[i].second;
  }
}

TEST(AceAlu, ReduceAddsWholeElementsInPlace) {
  uint8_t a[16], b[16], d[16];
  for (int i = 0; i < 16; ++i) a[i] = static_cast<uint8_t>(i * 37 + 1), b[i] = static_cast<uint8_t>(i * 91 + 5);
  for (Dtype dt : {Dtype::fp32, Dtype::bf16, Dtype::fp16, Dtype::int32}) {
    core::add(dt, d, a, b, 16);
    const uint32_t size = dtype_bytes(dt);
    for (uint32_t i = 0; i < 16; i += size) {
      uint32_t x = 0, y = 0, z = 0;
      std::memcpy(&x, a + i, size);
      std::memcpy(&y, b + i, size);
      std::memcpy(&z, d + i, size);
      EXPECT_EQ(z, add_lane(dt, x, y)) << dtype_name(dt) << " element " << i / size;
    }
  }
  uint8_t c[16];
  std::memcpy(c, a, 16);
  core::add(Dtype::fp16, c, c, b, 16);  // in place
  core::add(Dtype::fp16, d, a, b, 16);
  EXPECT_EQ(std::memcmp(c, d, 16), 0);
  EXPECT_THROW(core::add(Dtype::fp32, d, a, b, 6), std::invalid_argument);
}

namespace {

// Hand-computed cycles of the documented pipeline (rtl/ace/README.md).
void expect_documented_timing(DatapathModel& m) {
  const uint32_t lanes = m.geometry().lanes;
  const std::vector<uint32_t> ones(lanes, 0x3f800000u);
  Completion x;
  m.configure(0, 0, 16);  // cycle 0
  EXPECT_EQ(m.cycle(), 1u);

  // One chunk: accepted as soon as offered, retired kLatency cycles later.
  m.submit(make_chunk(Op::store, Dtype::fp32, 0, ones, true, true, 1));
  ASSERT_TRUE(m.next(x));
  EXPECT_EQ(x.accept_cycle, 1u);
  EXPECT_EQ(x.retire_cycle, 1u + kLatency);
  EXPECT_EQ(x.data, ones);
  EXPECT_EQ(m.cycle(), 2u + kLatency);  // 6

  // Back to back: one chunk per cycle in and out.
  for (uint32_t i = 1; i <= 8; ++i) m.submit(make_chunk(Op::store, Dtype::fp32, i, ones, true, true, 10 + i));
  for (uint32_t i = 1; i <= 8; ++i) {
    ASSERT_TRUE(m.next(x));
    EXPECT_EQ(x.tag, 10 + i);
    EXPECT_EQ(x.accept_cycle, 5u + i);
    EXPECT_EQ(x.retire_cycle, 5u + i + kLatency);
  }
  EXPECT_EQ(m.cycle(), 18u);

  // Read after write: the second add to row 1 waits until the first has written it.
  m.submit(make_chunk(Op::add, Dtype::fp32, 1, ones, true, true, 20));
  m.submit(make_chunk(Op::add, Dtype::fp32, 1, ones, true, true, 21));
  // No write back, no wait.
  m.submit(make_chunk(Op::add, Dtype::fp32, 2, ones, false, true, 22));
  m.submit(make_chunk(Op::add, Dtype::fp32, 2, ones, true, true, 23));
  const uint64_t accept[] = {18, 23, 24, 25}, retire[] = {22, 27, 28, 29};
  const uint32_t value[] = {0x40000000u, 0x40400000u, 0x40000000u, 0x40000000u};  // 2, 3, 2, 2
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(m.next(x));
    EXPECT_EQ(x.accept_cycle, accept[i]) << "chunk " << i;
    EXPECT_EQ(x.retire_cycle, retire[i]) << "chunk " << i;
    EXPECT_EQ(x.data, std::vector<uint32_t>(lanes, value[i])) << "chunk " << i;
  }
  EXPECT_EQ(m.cycle(), 30u);

  // Back-pressure until cycle 50: four chunks fill the pipeline, the fifth and
  // sixth enter as the first results leave; a chunk that is not sent retires
  // without waiting for out_ready, but in order.
  m.set_out_ready([](uint64_t c) { return c >= 50; });
  for (uint32_t i = 0; i < 6; ++i) m.submit(make_chunk(Op::forward, Dtype::fp32, 3 + i, ones, false, true, 30 + i));
  m.submit(make_chunk(Op::store, Dtype::fp32, 9, ones, true, false, 36));
  const uint64_t accept2[] = {30, 31, 32, 33, 50, 51, 52}, retire2[] = {50, 51, 52, 53, 54, 55, 56};
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(m.next(x));
    EXPECT_EQ(x.tag, 30u + i);
    EXPECT_EQ(x.accept_cycle, accept2[i]) << "chunk " << i;
    EXPECT_EQ(x.retire_cycle, retire2[i]) << "chunk " << i;
    EXPECT_EQ(x.sent, i < 6);
  }
  m.set_out_ready(nullptr);

  // A valid gap counts from the cycle after the previous acceptance.
  Chunk late = make_chunk(Op::store, Dtype::fp32, 10, ones, true, true, 40);
  late.gap = 5;
  m.submit(make_chunk(Op::store, Dtype::fp32, 11, ones, true, true, 39));
  m.submit(late);
  ASSERT_TRUE(m.next(x));
  EXPECT_EQ(x.accept_cycle, 57u);
  ASSERT_TRUE(m.next(x));
  EXPECT_EQ(x.accept_cycle, 63u);
  EXPECT_EQ(x.retire_cycle, 67u);

  // Errors: a row outside its partition and an illegal op complete with err,
  // a zero result that is always sent and no write.
  EXPECT_THROW(m.configure(4, 0, 1), std::invalid_argument);
  m.configure(1, 8, 2);
  m.submit(make_chunk(Op::add, Dtype::fp32, 2, ones, true, false, 50, 1));
  m.submit(make_chunk(Op::illegal, Dtype::fp32, 1, ones, true, false, 51, 1));
  m.submit(make_chunk(Op::forward, Dtype::fp32, 1, ones, false, true, 52, 1));  // physical row 9
  EXPECT_THROW(m.configure(1, 0, 1), std::logic_error);                         // chunks pending
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(m.next(x));
    EXPECT_TRUE(x.err);
    EXPECT_TRUE(x.sent);
    EXPECT_EQ(x.data, std::vector<uint32_t>(lanes, 0));
  }
  ASSERT_TRUE(m.next(x));
  EXPECT_FALSE(x.err);
  EXPECT_EQ(x.data, ones);
  EXPECT_FALSE(m.next(x));
  EXPECT_EQ(m.pending(), 0u);
  EXPECT_TRUE(m.advance(10));
}

}  // namespace

TEST(AceDatapath, CppModelFollowsTheDocumentedTiming) {
  Datapath model(RtlDatapath::built_geometry());
  expect_documented_timing(model);
}

TEST(AceDatapath, RtlFollowsTheDocumentedTiming) {
  RtlDatapath rtl("dut");
  expect_documented_timing(rtl);
  EXPECT_TRUE(rtl.idle());
  EXPECT_FALSE(rtl.failed());
}

namespace {
/// Bursts of store/add pairs as the ACE issues them (models/ace/ace.cpp
/// reduce()), started at several cycles and wrapping around the buffer: the
/// model's cycles must equal reduce_burst_cycles(), which timing-only
/// collectives use instead of running the beats.
void expect_burst_closed_form(DatapathModel& m) {
  const Geometry& g = m.geometry();
  m.configure(0, 0, g.depth);
  const std::vector<uint32_t> ones(g.lanes, 0x3f800000u);
  uint32_t row = g.depth - 3;  // the first bursts wrap around the buffer's end
  uint32_t tag = 0;
  Completion x;
  for (uint64_t idle : {0u, 1u, 5u, 17u}) {
    for (uint64_t rows : {1u, 2u, 3u, 4u, 7u, 64u}) {
      ASSERT_TRUE(m.advance(idle));
      const uint64_t start = m.cycle();
      for (uint64_t r = 0; r < rows; ++r) {
        m.submit(make_chunk(Op::store, Dtype::fp32, row, ones, true, false, tag++ & 0xff));
        m.submit(make_chunk(Op::add, Dtype::fp32, row, ones, false, true, tag++ & 0xff));
        row = (row + 1) % g.depth;
      }
      uint64_t first = 0, last = 0, retire = 0;
      for (uint64_t b = 0; b < 2 * rows; ++b) {
        ASSERT_TRUE(m.next(x));
        if (b == 0) first = x.accept_cycle;
        last = x.accept_cycle;
        retire = x.retire_cycle;
      }
      const BurstCycles want = reduce_burst_cycles(start, rows);
      EXPECT_EQ(first, want.first_accept) << rows << " rows after " << idle << " idle cycles";
      EXPECT_EQ(last, want.last_accept) << rows << " rows after " << idle << " idle cycles";
      EXPECT_EQ(retire, want.last_retire) << rows << " rows after " << idle << " idle cycles";
      EXPECT_EQ(m.cycle(), want.last_retire + 1);
    }
  }
}
}  // namespace

TEST(AceDatapath, CppModelBurstsFollowTheClosedForm) {
  Datapath model(RtlDatapath::built_geometry());
  expect_burst_closed_form(model);
}

TEST(AceDatapath, RtlBurstsFollowTheClosedForm) {
  RtlDatapath rtl("burst_dut");
  expect_burst_closed_form(rtl);
  EXPECT_FALSE(rtl.failed());
}

namespace {
/// One burst as Ace::reduce runs its beats: per row, a store then an add on every slice (slice s has the
/// lanes lane0 = s * lanes of each row of `stride` elements); the sums go back into `local`.
BurstCycles burst_by_beats(std::vector<Datapath>& slices, const Burst& b, std::vector<uint8_t>& local,
                           const std::vector<uint8_t>& incoming) {
  const uint32_t G = slices[0].geometry().lanes, depth = slices[0].geometry().depth;
  auto lane = [&](const std::vector<uint8_t>& v, uint64_t e) {
    uint32_t x = 0;
    std::memcpy(&x, v.data() + e * b.es, b.es);
    return x;
  };
  for (uint64_t k = 0; k < b.rows; ++k)
    for (uint32_t pass = 0; pass < 2; ++pass)
      for (uint32_t s = 0; s < slices.size(); ++s) {
        Chunk c = make_chunk(pass == 0 ? Op::store : Op::add, b.dtype, static_cast<uint32_t>((b.row0 + k) % depth),
                             std::vector<uint32_t>(G, 0), pass == 0, pass == 1);
        for (uint32_t i = 0; i < G; ++i) {
          const uint64_t e = k * b.stride + s * G + i;
          if (e < b.n) c.data[i] = lane(pass == 0 ? local : incoming, e);
        }
        slices[s].submit(c);
      }
  BurstCycles got;
  for (uint32_t s = 0; s < slices.size(); ++s) {
    Completion x;
    for (uint64_t j = 0; j < 2 * b.rows; ++j) {
      EXPECT_TRUE(slices[s].next(x));
      if (j == 0) got.first_accept = x.accept_cycle;
      got.last_accept = x.accept_cycle;
      got.last_retire = x.retire_cycle;
      if (j % 2 == 0) continue;
      for (uint32_t i = 0; i < G; ++i) {
        const uint64_t e = (j / 2) * b.stride + s * G + i;
        if (e < b.n) std::memcpy(local.data() + e * b.es, &x.data[i], b.es);
      }
    }
  }
  return got;
}
}  // namespace

// The C++ model's burst in one call (what the ACE runs with data), with the
// sums added in one pass, leaves the same sums, cycles, staging rows and
// pipeline as its beats: bursts of every
// element type over three slices, a partial last row, rows wrapping around the
// buffer and more rows than it has, after idle gaps; then a beat reading a row
// the burst wrote meets the same pipeline. The RTL has no such call.
TEST(AceDatapath, CppModelBurstEqualsItsBeats) {
  const Geometry geo = RtlDatapath::built_geometry();
  const uint32_t S = 3, G = geo.lanes, depth = geo.depth;
  std::mt19937_64 rng(11);
  for (Dtype dt : {Dtype::fp32, Dtype::bf16, Dtype::fp16, Dtype::int32}) {
    std::vector<Datapath> beats(S, Datapath(geo)), bursts(S, Datapath(geo));
    for (uint32_t s = 0; s < S; ++s) {
      beats[s].configure(0, 0, depth);
      bursts[s].configure(0, 0, depth);
    }
    uint32_t row = depth - 2;
    for (uint64_t n : {uint64_t{1}, uint64_t{S * G}, uint64_t{5 * S * G + 7}, uint64_t{(depth + 3) * S * G - 5}}) {
      Burst b;
      b.dtype = dt;
      b.row0 = row;
      b.es = static_cast<uint32_t>(dtype_bytes(dt));
      b.n = n;
      b.stride = S * G;
      b.rows = (n + b.stride - 1) / b.stride;
      std::vector<uint8_t> local(n * b.es), incoming(n * b.es);
      core::random_elements(dt, rng(), local.data(), local.size(), 0, 2);
      core::random_elements(dt, rng(), incoming.data(), incoming.size(), 0, 2);
      std::vector<uint8_t> sums = local;
      const uint64_t idle = rng() % 9;
      for (uint32_t s = 0; s < S; ++s) {
        ASSERT_TRUE(beats[s].advance(idle));
        ASSERT_TRUE(bursts[s].advance(idle));
      }
      const BurstCycles want = burst_by_beats(beats, b, local, incoming);
      b.local = sums.data();
      for (uint32_t s = 0; s < S; ++s) {
        b.lane0 = s * G;
        BurstCycles got;
        ASSERT_TRUE(bursts[s].reduce_burst(b, got)) << dtype_name(dt);
        EXPECT_EQ(got.first_accept, want.first_accept) << dtype_name(dt) << " n " << n;
        EXPECT_EQ(got.last_accept, want.last_accept) << dtype_name(dt) << " n " << n;
        EXPECT_EQ(got.last_retire, want.last_retire) << dtype_name(dt) << " n " << n;
        EXPECT_EQ(bursts[s].cycle(), beats[s].cycle());
        EXPECT_EQ(bursts[s].pending(), 0u);
        for (uint32_t r = 0; r < depth; ++r)
          ASSERT_EQ(0, std::memcmp(bursts[s].row(r), beats[s].row(r), G * 4)) << dtype_name(dt) << " row " << r;
      }
      core::add(dt, sums.data(), incoming.data(), sums.data(), sums.size());  // what Ace::reduce adds to it
      EXPECT_EQ(sums, local) << dtype_name(dt) << " n " << n;
      row = static_cast<uint32_t>((row + b.rows) % depth);
    }
    // A beat that reads the row the last burst wrote, offered at once: the same acceptance and result.
    const uint32_t last = (row + depth - 1) % depth;
    const Chunk probe = make_chunk(Op::forward, dt, last, std::vector<uint32_t>(G, 0), false, true);
    for (uint32_t s = 0; s < S; ++s) {
      beats[s].submit(probe);
      bursts[s].submit(probe);
      Completion x, y;
      ASSERT_TRUE(beats[s].next(x));
      ASSERT_TRUE(bursts[s].next(y));
      EXPECT_EQ(x.accept_cycle, y.accept_cycle);
      EXPECT_EQ(x.retire_cycle, y.retire_cycle);
      EXPECT_EQ(x.data, y.data);
    }
  }
  // Not where a chunk is pending, nor on the RTL.
  Datapath busy(geo);
  busy.configure(0, 0, depth);
  busy.submit(make_chunk(Op::store, Dtype::fp32, 0, std::vector<uint32_t>(G, 0), true, false));
  std::vector<uint8_t> data(G * 4);
  Burst b;
  b.rows = 1;
  b.n = G;
  b.stride = G;
  b.local = data.data();
  BurstCycles unused;
  EXPECT_FALSE(busy.reduce_burst(b, unused));
  RtlDatapath rtl("burst_call_dut");
  rtl.configure(0, 0, depth);
  EXPECT_FALSE(rtl.reduce_burst(b, unused));
}

TEST(AceDatapath, ChunksThatDoNotFitAreRejected) {
  Datapath model(RtlDatapath::built_geometry());
  Chunk c = make_chunk(Op::add, Dtype::fp32, 0, std::vector<uint32_t>(3, 0), true, true);
  EXPECT_THROW(model.submit(c), std::invalid_argument);  // wrong lane count
  c.data.assign(model.geometry().lanes, 0);
  c.row = 1u << model.geometry().row_bits();
  EXPECT_THROW(model.submit(c), std::invalid_argument);
  c.row = 0;
  c.tag = 1u << model.geometry().tag_bits;
  EXPECT_THROW(model.submit(c), std::invalid_argument);
}

TEST(AceEquiv, ShortRunPasses) {
  tb::EquivOptions opt;
  opt.transactions = 20000;
  opt.seed = 1;
  std::ostringstream log;
  tb::EquivResult r = tb::ace_equiv(opt, &log);
  EXPECT_TRUE(r.passed()) << log.str();
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_TRUE(r.drained);
  const uint32_t depth = RtlDatapath::built_geometry().depth;
  EXPECT_EQ(r.transactions, 20000u + 2 * depth);
  EXPECT_EQ(r.compared, r.transactions);
  EXPECT_GT(r.in_stall_cycles, 0u);   // the stream exercised input stalls
  EXPECT_GT(r.out_stall_cycles, 0u);  // and back-pressure
  EXPECT_NE(log.str().find("result       PASS"), std::string::npos) << log.str();
}

TEST(AceEquiv, ScoreboardCatchesAWrongResultAndTracesTheFailingSeed) {
  const fs::path vcd = fs::temp_directory_path() / ("ace-equiv-fail-" + std::to_string(::getpid()) + ".vcd");
  tb::EquivOptions opt;
  opt.transactions = 600;
  opt.seed = 3;
  opt.corrupt_at = 700;
  opt.corrupt = tb::EquivOptions::Corrupt::data;
  opt.fail_vcd = vcd.string();
  std::ostringstream log;
  tb::EquivResult r = tb::ace_equiv(opt, &log);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_GE(r.first_mismatch, 700);
  EXPECT_NE(r.first_description.find("lane 0"), std::string::npos) << r.first_description;

  EXPECT_EQ(tb::run_ace_equiv(opt), 3);  // prints the seed, re-runs it traced
  std::ifstream in(vcd);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("$enddefinitions"), std::string::npos);
  EXPECT_NE(text.find("in_ready"), std::string::npos);
  fs::remove(vcd);
}

TEST(AceEquiv, ScoreboardCatchesAWrongCycle) {
  for (auto what : {tb::EquivOptions::Corrupt::retire_cycle, tb::EquivOptions::Corrupt::accept_cycle,
                    tb::EquivOptions::Corrupt::tag}) {
    tb::EquivOptions opt;
    opt.transactions = 300;
    opt.seed = 4;
    opt.corrupt_at = 650;
    opt.corrupt = what;
    tb::EquivResult r = tb::ace_equiv(opt, nullptr);
    EXPECT_FALSE(r.passed());
    EXPECT_EQ(r.mismatches, 1u);
    EXPECT_EQ(r.first_mismatch, 650);
  }
}

TEST(AceEquiv, SameSeedGivesTheSameCycles) {
  tb::EquivOptions opt;
  opt.transactions = 1500;
  opt.seed = 7;
  tb::EquivResult a = tb::ace_equiv(opt, nullptr);
  tb::EquivResult b = tb::ace_equiv(opt, nullptr);
  opt.seed = 8;
  tb::EquivResult c = tb::ace_equiv(opt, nullptr);
  ASSERT_TRUE(a.passed() && b.passed() && c.passed());
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(a.in_stall_cycles, b.in_stall_cycles);
  EXPECT_EQ(a.out_stall_cycles, b.out_stall_cycles);
  EXPECT_NE(a.cycles, c.cycles);
}

TEST(AceRtl, FinishIsAHardwareError) {
  RtlDatapath rtl("dut");
  const std::vector<uint32_t> zeros(rtl.geometry().lanes, 0);
  // Results are never taken: four chunks fill the pipeline, the fifth waits.
  uint32_t accepted = 0;
  for (int cycle = 0; cycle < 8; ++cycle)
    accepted += rtl.raw_cycle(true, make_chunk(Op::store, Dtype::fp32, 0, zeros, false, true, accepted), false);
  EXPECT_EQ(accepted, kInFlight);
  EXPECT_FALSE(rtl.failed());
  // Withdrawing the waiting chunk breaks the valid/ready rule: the RTL's check calls $finish.
  rtl.raw_cycle(false, make_chunk(Op::store, Dtype::fp32, 0, zeros, false, true, accepted), false);
  EXPECT_TRUE(rtl.failed());
  EXPECT_NE(rtl.failure().find("$finish"), std::string::npos) << rtl.failure();
  const auto& errors = core::Context::get().hw_errors();
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors.back().where, "dut");
  EXPECT_NE(errors.back().message.find("$finish"), std::string::npos);
  EXPECT_THROW(rtl.raw_cycle(false, make_chunk(Op::store, Dtype::fp32, 0, zeros, false, true), false),
               std::logic_error);
}

TEST(AceRtl, WatchdogStopsARunThatNeverCompletes) {
  core::Context::get().config().add_override("dut.watchdog_cycles=500");
  RtlDatapath rtl("dut");
  rtl.set_out_ready([](uint64_t) { return false; });
  rtl.submit(make_chunk(Op::store, Dtype::fp32, 0, std::vector<uint32_t>(rtl.geometry().lanes, 0), false, true));
  Completion x;
  EXPECT_FALSE(rtl.next(x));
  EXPECT_TRUE(rtl.failed());
  EXPECT_NE(rtl.failure().find("watchdog"), std::string::npos) << rtl.failure();
  EXPECT_EQ(rtl.cycle(), 500u);
}

TEST(AceCli, AceEquivCommandPassesAndReportsSpeed) {
  std::string cmd = std::string(FABRICVP_BIN) + " ace-equiv --transactions 400 --seed 5 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("0 mismatches"), std::string::npos) << out;
  EXPECT_NE(out.find("M RTL cycles/s"), std::string::npos) << out;
  EXPECT_NE(out.find("result       PASS"), std::string::npos) << out;
}
