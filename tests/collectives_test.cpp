// The torus collective algorithms (sw/collectives/torus.h) without a
// simulation: for every collective on several torus shapes and
// communicators, the plans executed on host buffers by run_reference() give
// the closed-form result (int32 sums are order independent, so exact; fp32
// sums close to the double-precision sum), the plans' chunks cover the buffer
// with input() and output() inside span(), and make_plan() refuses sizes and
// roots the collective cannot have.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "models/core/dtype.h"
#include "sw/collectives/torus.h"

using namespace fabricvp;
using collectives::Communicator;
using collectives::kHorizontal;
using collectives::kLocal;
using collectives::kVertical;
using collectives::TorusShape;
using npu::CollectiveKind;

namespace {

constexpr CollectiveKind kKinds[] = {CollectiveKind::allreduce, CollectiveKind::reducescatter,
                                     CollectiveKind::allgather, CollectiveKind::alltoall, CollectiveKind::broadcast};

bool block_kind(CollectiveKind k) {
  return k == CollectiveKind::reducescatter || k == CollectiveKind::allgather || k == CollectiveKind::alltoall;
}

TorusShape shape(std::array<uint32_t, 3> size, std::array<uint32_t, 3> rings) {
  TorusShape s;
  s.size = size;
  s.rings = rings;
  return s;
}

using Plans = std::vector<std::shared_ptr<const npu::CollectivePlan>>;
using Buffers = std::vector<std::vector<uint8_t>>;

Plans plans_of(const Communicator& c, CollectiveKind k, core::Dtype dt, uint64_t elems, uint32_t root,
               const collectives::PlanOptions& o) {
  Plans p;
  for (uint32_t r = 0; r < c.size(); ++r) p.push_back(collectives::make_plan(c, k, dt, elems, root, o, c.npu_of(r)));
  return p;
}

Buffers inputs(const Communicator& c, core::Dtype dt, uint64_t elems, uint64_t seed) {
  Buffers b(c.size());
  const uint64_t bytes = elems * core::dtype_bytes(dt);
  for (uint32_t r = 0; r < c.size(); ++r) {
    b[r].resize(bytes);
    core::random_elements(dt, seed * 1000 + c.npu_of(r), b[r].data(), bytes, 0, c.size());
  }
  return b;
}

uint32_t i32(const std::vector<uint8_t>& b, uint64_t e) {
  uint32_t v;
  std::memcpy(&v, b.data() + e * 4, 4);
  return v;
}

/// Set of element indices of a span (ranges must be disjoint: checked).
std::set<uint64_t> elements(const npu::Span& s) {
  std::set<uint64_t> out;
  for (const auto& [a, b] : s.ranges) {
    EXPECT_LE(a, b);
    for (uint64_t e = a; e < b; ++e) EXPECT_TRUE(out.insert(e).second) << "element " << e << " twice in a span";
  }
  return out;
}

bool subset(const std::set<uint64_t>& a, const std::set<uint64_t>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

/// The result member `r` must hold in output_elements(), in closed form
/// (int32: wrapping sums, so independent of the order of additions).
uint32_t closed_form_int32(CollectiveKind k, uint32_t root, const Buffers& in, uint32_t r, uint64_t e) {
  const uint32_t N = static_cast<uint32_t>(in.size());
  const uint64_t block = in[0].size() / 4 / N;
  switch (k) {
    case CollectiveKind::allreduce:
    case CollectiveKind::reducescatter: {
      uint32_t sum = 0;
      for (uint32_t s = 0; s < N; ++s) sum += i32(in[s], e);
      return sum;
    }
    case CollectiveKind::allgather: return i32(in[e / block], e);  // block s comes from member s
    case CollectiveKind::alltoall: {
      const uint64_t s = e / block;  // block s of member r is block r of member s
      return i32(in[s], r * block + e % block);
    }
    case CollectiveKind::broadcast: return i32(in[root], e);
  }
  return 0;
}

std::string what(const Communicator& c, CollectiveKind k, core::Dtype dt, uint64_t elems,
                 const collectives::PlanOptions& o) {
  return std::string(npu::collective_name(k)) + " " + core::dtype_name(dt) + " of " + std::to_string(elems) +
         " elements on " + c.describe() + " (align " + std::to_string(o.align) + ", chunk " +
         std::to_string(o.chunk_bytes) + " B, " + o.algorithm + ")";
}

/// One collective on one communicator: int32 exactly against the closed
/// form, and against expected() for the data-movement kinds.
void check_int32(const Communicator& c, CollectiveKind k, uint64_t elems, uint32_t root,
                 const collectives::PlanOptions& o, uint64_t seed) {
  SCOPED_TRACE(what(c, k, core::Dtype::int32, elems, o));
  const Plans plans = plans_of(c, k, core::Dtype::int32, elems, root, o);
  const Buffers in = inputs(c, core::Dtype::int32, elems, seed);
  Buffers got = in;
  ASSERT_NO_THROW(collectives::run_reference(plans, got));
  const uint32_t N = c.size();
  uint64_t bad = 0;
  for (uint32_t r = 0; r < N; ++r) {
    const npu::Span out = collectives::output_elements(k, elems, N, r);
    ASSERT_EQ(out.elems(), k == CollectiveKind::reducescatter ? elems / N : elems);
    for (const auto& [a, b] : out.ranges)
      for (uint64_t e = a; e < b; ++e)
        if (i32(got[r], e) != closed_form_int32(k, root, in, r, e) && ++bad <= 3)
          ADD_FAILURE() << "rank " << r << " element " << e << ": got " << i32(got[r], e) << ", expected "
                        << closed_form_int32(k, root, in, r, e);
  }
  EXPECT_EQ(bad, 0u);
  Buffers want = in;
  const bool closed = collectives::expected(k, root, want);
  EXPECT_EQ(closed, !(k == CollectiveKind::allreduce || k == CollectiveKind::reducescatter));
  if (closed) {
    for (uint32_t r = 0; r < N; ++r) EXPECT_TRUE(want[r] == got[r]) << "rank " << r << " differs from expected()";
  }
}

/// fp32: the data-movement kinds bit-exactly equal expected(); the
/// reductions within 1e-5 of the double-precision sum (relative to the sum
/// of magnitudes, which bounds any order's rounding error).
void check_fp32(const Communicator& c, CollectiveKind k, uint64_t elems, uint32_t root,
                const collectives::PlanOptions& o, uint64_t seed) {
  SCOPED_TRACE(what(c, k, core::Dtype::fp32, elems, o));
  const Plans plans = plans_of(c, k, core::Dtype::fp32, elems, root, o);
  const Buffers in = inputs(c, core::Dtype::fp32, elems, seed);
  Buffers got = in;
  ASSERT_NO_THROW(collectives::run_reference(plans, got));
  const uint32_t N = c.size();
  {
    // The chunk-at-a-time checker agrees bit for bit with the whole-buffer
    // replay, and finds one flipped bit of the last member's output.
    collectives::CheckIo io;
    std::vector<std::pair<uint32_t, uint64_t>> wrong;
    io.input = [&](uint32_t r, uint64_t e, uint64_t n, uint8_t* dst) { std::memcpy(dst, in[r].data() + e * 4, n * 4); };
    io.result = [&](uint32_t r, uint64_t e, uint64_t n, uint8_t* dst) {
      std::memcpy(dst, got[r].data() + e * 4, n * 4);
    };
    io.mismatch = [&](uint32_t r, uint64_t e, const uint8_t*, const uint8_t*) { wrong.emplace_back(r, e); };
    auto rank_of = [&c](uint32_t npu) { return c.rank_of(npu); };
    EXPECT_EQ(collectives::check_collective(plans, rank_of, root, io), 0u);
    const uint64_t last = collectives::output_elements(k, elems, N, N - 1).ranges.back().second - 1;
    got[N - 1][last * 4 + 1] ^= 4;
    EXPECT_EQ(collectives::check_collective(plans, rank_of, root, io), 1u);
    EXPECT_EQ(wrong, (std::vector<std::pair<uint32_t, uint64_t>>{{N - 1, last}}));
    got[N - 1][last * 4 + 1] ^= 4;
  }
  Buffers want = in;
  if (collectives::expected(k, root, want)) {
    for (uint32_t r = 0; r < N; ++r) EXPECT_TRUE(want[r] == got[r]) << "rank " << r << " differs from expected()";
    return;
  }
  uint64_t bad = 0;
  for (uint32_t r = 0; r < N; ++r)
    for (const auto& [a, b] : collectives::output_elements(k, elems, N, r).ranges)
      for (uint64_t e = a; e < b; ++e) {
        double sum = 0, mag = 0;
        for (uint32_t s = 0; s < N; ++s) {
          const double x = core::element_value(core::Dtype::fp32, in[s].data() + e * 4);
          sum += x;
          mag += std::fabs(x);
        }
        const double v = core::element_value(core::Dtype::fp32, got[r].data() + e * 4);
        if (!(std::fabs(v - sum) <= 1e-5 * mag) && ++bad <= 3)
          ADD_FAILURE() << "rank " << r << " element " << e << ": got " << v << ", the sum is " << sum;
      }
  EXPECT_EQ(bad, 0u);
}

/// The chunks of every member's plan: span() within chunk_capacity(),
/// input() and output() inside span(); the spans partition the buffer; the
/// outputs together are what the member ends with and the inputs what it
/// contributes.
void check_chunks(const Communicator& c, CollectiveKind k, uint64_t elems, uint32_t root,
                  const collectives::PlanOptions& o) {
  SCOPED_TRACE(what(c, k, core::Dtype::fp32, elems, o));
  const Plans plans = plans_of(c, k, core::Dtype::fp32, elems, root, o);
  const uint32_t N = c.size();
  for (uint32_t r = 0; r < N; ++r) {
    const npu::CollectivePlan& p = *plans[r];
    EXPECT_EQ(p.kind(), k);
    EXPECT_EQ(p.elems(), elems);
    EXPECT_EQ(p.chunks(), plans[0]->chunks());
    EXPECT_EQ(p.phases(), plans[0]->phases());
    std::set<uint64_t> covered, outputs, ins;
    uint64_t largest = 0;
    for (uint32_t ch = 0; ch < p.chunks(); ++ch) {
      const auto cp = p.chunk(ch);
      const std::set<uint64_t> span = elements(cp->span()), in = elements(cp->input()), out = elements(cp->output());
      largest = std::max<uint64_t>(largest, cp->span().elems());
      EXPECT_LE(cp->span().elems(), p.chunk_capacity()) << "chunk " << ch;
      EXPECT_TRUE(subset(in, span)) << "chunk " << ch << ": input() outside span()";
      EXPECT_TRUE(subset(out, span)) << "chunk " << ch << ": output() outside span()";
      for (uint64_t e : span) EXPECT_TRUE(covered.insert(e).second) << "element " << e << " in two chunks";
      outputs.insert(out.begin(), out.end());
      ins.insert(in.begin(), in.end());
    }
    if (p.chunks() > 1 || block_kind(k)) {
      EXPECT_EQ(largest, p.chunk_capacity()) << "the capacity is the largest chunk";
    }
    EXPECT_EQ(covered.size(), elems);
    if (!covered.empty()) {
      EXPECT_EQ(*covered.begin(), 0u);
      EXPECT_EQ(*covered.rbegin(), elems - 1);
    }
    const std::set<uint64_t> all = elements(collectives::output_elements(k, elems, N, r));
    if (k == CollectiveKind::broadcast && r == root) {
      EXPECT_TRUE(outputs.empty()) << "the root's buffer does not change";
      EXPECT_EQ(ins, all);
    } else {
      EXPECT_EQ(outputs, all) << "rank " << r;
    }
    if (k == CollectiveKind::allgather) {
      EXPECT_EQ(ins, elements(collectives::output_elements(CollectiveKind::reducescatter, elems, N, r)))
          << "an allgather member contributes its own block";
    }
  }
}

struct Group {
  TorusShape shape;
  std::vector<uint32_t> dims;
  uint32_t block_elems;  ///< elements of a block (block kinds)
  uint64_t elems;        ///< allreduce, broadcast
  collectives::PlanOptions options;
};

collectives::PlanOptions opts(uint64_t chunk_bytes, uint32_t align, const std::string& algorithm = "enhanced") {
  collectives::PlanOptions o;
  o.chunk_bytes = chunk_bytes;
  o.align = align;
  o.algorithm = algorithm;
  return o;
}

/// The shapes and groups every kind runs on: the full 4x4x4 platform torus
/// (rings 2, 4, 4), and a 3x2x5 torus with 1, 2, 3 rings (a unidirectional
/// local ring, an odd ring count, non-power-of-two sizes); single- and
/// two-dimension groups in a non-default dimension order; element counts that
/// are not multiples of the align or of the chunk, in several chunks.
std::vector<Group> groups() {
  const TorusShape big = shape({4, 4, 4}, {2, 4, 4});
  const TorusShape odd = shape({3, 2, 5}, {1, 2, 3});
  return {
      {big, {kLocal, kVertical, kHorizontal}, 37, 1001, opts(1024, 4)},
      {big, {kVertical}, 301, 3001, opts(2048, 8)},
      {big, {kHorizontal, kLocal}, 75, 2053, opts(1024, 4, "baseline")},
      {big, {kHorizontal, kLocal}, 75, 2053, opts(1024, 4)},
      {odd, {kLocal, kVertical, kHorizontal}, 23, 997, opts(512, 2)},
      {odd, {kHorizontal}, 211, 1237, opts(1024, 8)},
      {odd, {kHorizontal, kLocal}, 41, 1500, opts(768, 4)},
      {odd, {kVertical, kHorizontal}, 19, 611, opts(16384, 64)},  // one chunk, segments smaller than align
      {odd, {kLocal}, 1, 2, opts(64, 4)},                         // fewer elements than members
  };
}

/// Two communicators of the group's partition (the first and the last).
std::vector<Communicator> some(const Group& g) {
  std::vector<Communicator> all = Communicator::partition(g.shape, g.dims);
  if (all.size() <= 2) return all;
  return {all.front(), all.back()};
}

uint64_t elems_of(const Group& g, const Communicator& c, CollectiveKind k) {
  return block_kind(k) ? uint64_t(g.block_elems) * c.size() : g.elems;
}

uint32_t root_of(const Communicator& c) { return c.size() > 1 ? c.size() * 2 / 3 : 0; }

}  // namespace

TEST(Collectives, Int32ReferenceMatchesTheClosedFormForEveryKind) {
  uint64_t seed = 1;
  for (const Group& g : groups())
    for (const Communicator& c : some(g))
      for (CollectiveKind k : kKinds) check_int32(c, k, elems_of(g, c, k), root_of(c), g.options, seed++);
}

TEST(Collectives, Fp32ReferenceIsCloseToTheExactSumAndMovesDataExactly) {
  uint64_t seed = 100;
  for (const Group& g : groups())
    for (const Communicator& c : some(g))
      for (CollectiveKind k : kKinds) check_fp32(c, k, elems_of(g, c, k), root_of(c), g.options, seed++);
}

TEST(Collectives, ChunksFitTheCapacityAndKeepInputAndOutputInTheirSpan) {
  for (const Group& g : groups())
    for (const Communicator& c : some(g))
      for (CollectiveKind k : kKinds) check_chunks(c, k, elems_of(g, c, k), root_of(c), g.options);
}

TEST(Collectives, SeveralChunksAndUnalignedCountsAreExercised) {
  // The groups above really cut the buffers into several chunks with a short last one.
  const std::vector<Group> gs = groups();
  const Group& g = gs[0];
  const Communicator c(g.shape, g.dims, 0);
  ASSERT_EQ(c.size(), 64u);
  const auto ar = collectives::make_plan(c, CollectiveKind::allreduce, core::Dtype::int32, g.elems, 0, g.options, 0);
  EXPECT_EQ(ar->chunks(), 4u);  // 1001 elements in chunks of 256
  EXPECT_EQ(ar->chunk(3)->span().elems(), 1001u - 3 * 256);
  const auto rs = collectives::make_plan(c, CollectiveKind::reducescatter, core::Dtype::int32,
                                         uint64_t(g.block_elems) * 64, 0, g.options, 0);
  EXPECT_GE(rs->chunks(), 2u);
  EXPECT_EQ(rs->describe(), "reduce-scatter local, reduce-scatter vertical, reduce-scatter horizontal");
  const Group& h = gs[2];
  const Communicator hl(h.shape, h.dims, 0);
  const auto b = collectives::make_plan(hl, CollectiveKind::allreduce, core::Dtype::int32, h.elems, 0, h.options, 0);
  EXPECT_EQ(b->describe(), "all-reduce horizontal, all-reduce local");
  const Group& e = gs[3];
  const auto en = collectives::make_plan(hl, CollectiveKind::allreduce, core::Dtype::int32, e.elems, 0, e.options, 0);
  EXPECT_EQ(en->describe(), "reduce-scatter horizontal, all-reduce local, all-gather horizontal");
  // Ranks run over the first spanned dimension fastest: horizontal, then local.
  EXPECT_EQ(hl.npu_of(1), h.shape.id({0, 0, 1}));
  EXPECT_EQ(hl.npu_of(4), h.shape.id({1, 0, 0}));
  EXPECT_EQ(hl.rank_of(h.shape.id({3, 0, 2})), 2u + 4u * 3u);
}

TEST(Collectives, MakePlanRefusesImpossibleSizesAndRoots) {
  const TorusShape t = shape({3, 2, 5}, {1, 2, 3});
  const Communicator all(t, {kLocal, kVertical, kHorizontal}, 0);  // 30 members
  const Communicator h(t, {kHorizontal}, 7);                       // 5 members
  const collectives::PlanOptions o = opts(4096, 4);
  for (CollectiveKind k : kKinds) {
    SCOPED_TRACE(npu::collective_name(k));
    if (block_kind(k)) {
      EXPECT_THROW(collectives::make_plan(all, k, core::Dtype::fp32, 30 * 7 + 1, 0, o, 0), core::ConfigError);
      EXPECT_THROW(collectives::make_plan(h, k, core::Dtype::int32, 12, 0, o, 7), core::ConfigError);
      EXPECT_NO_THROW(collectives::make_plan(h, k, core::Dtype::int32, 15, 0, o, 7));
    } else {
      EXPECT_NO_THROW(collectives::make_plan(all, k, core::Dtype::fp32, 30 * 7 + 1, 0, o, 0));
      EXPECT_NO_THROW(collectives::make_plan(h, k, core::Dtype::int32, 12, 4, o, 7));
    }
  }
  EXPECT_THROW(collectives::make_plan(h, CollectiveKind::broadcast, core::Dtype::fp32, 100, 5, o, 7),
               core::ConfigError);
  EXPECT_THROW(collectives::make_plan(all, CollectiveKind::broadcast, core::Dtype::fp32, 100, 30, o, 0),
               core::ConfigError);
  EXPECT_NO_THROW(collectives::make_plan(all, CollectiveKind::broadcast, core::Dtype::fp32, 100, 29, o, 0));
  try {
    collectives::make_plan(h, CollectiveKind::reducescatter, core::Dtype::fp32, 12, 0, o, 7);
    ADD_FAILURE() << "no error";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of the members"), std::string::npos) << e.what();
  }
}
