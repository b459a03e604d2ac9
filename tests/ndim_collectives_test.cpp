// The N-dimensional fabric's collective algorithms (sw/collectives/ndim.h)
// without a simulation: every collective x algorithm x fabric shape x
// communicator, executed on host buffers with run_reference(), gives the
// closed-form result (int32 sums are exact whatever the order), and the
// chunk-at-a-time checker (check_collective) agrees with it; the fabric's
// ports and routes are consistent; impossible requests are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "models/core/dtype.h"
#include "sw/collectives/common.h"
#include "sw/collectives/ndim.h"

using namespace fabricvp;
using namespace fabricvp::collectives::ndim;
using npu::CollectiveKind;

namespace {

using Plans = std::vector<std::shared_ptr<const npu::CollectivePlan>>;
using Buffers = std::vector<std::vector<uint8_t>>;

Shape shape(std::vector<DimSpec> d) { return Shape(std::move(d)); }

std::vector<int32_t> as_ints(const std::vector<uint8_t>& b) {
  std::vector<int32_t> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

/// The timing-only shapes (ChunkPlan::shape, first_send_elems) agree with
/// the spans of every step of every member.
void check_shapes(const Plans& plans) {
  for (const auto& plan : plans)
    for (uint32_t c = 0; c < plan->chunks(); ++c) {
      const auto chunk = plan->chunk(c);
      for (uint32_t p = 0; p < plan->phases(); ++p)
        for (uint32_t q = 0; q < plan->rings(p); ++q) {
          const npu::RingRole role = plan->ring(p, q);
          if (role.sends_first) {
            ASSERT_EQ(chunk->first_send_elems(p, q), chunk->first_send(p, q).elems());
          }
          for (uint32_t t = 0; t < role.receives; ++t) {
            const npu::Step full = chunk->step(p, q, t), sh = chunk->shape(p, q, t);
            ASSERT_EQ(sh.elems, full.local.elems())
                << plan->describe() << " chunk " << c << " phase " << p << " ring " << q << " step " << t;
            ASSERT_TRUE(sh.local.empty());
            ASSERT_EQ(sh.reduce, full.reduce);
            ASSERT_EQ(sh.forward, full.forward);
            ASSERT_EQ(sh.forward_local, full.forward_local);
            ASSERT_EQ(sh.passthrough, full.passthrough);
          }
        }
    }
}

/// collectives::check_collective, fed the inputs and a result `out` that is
/// right (run_reference's): no wrong element; with one element of the last
/// member's output flipped: exactly that one, named by rank and element.
void expect_checker_agrees(const Communicator& c, const Plans& plans, const Buffers& in, Buffers out, uint32_t root) {
  const uint32_t N = c.size(), es = plans[0]->esize();
  std::vector<std::pair<uint32_t, uint64_t>> bad;
  collectives::CheckIo io;
  io.input = [&](uint32_t r, uint64_t e, uint64_t n, uint8_t* dst) { std::memcpy(dst, in[r].data() + e * es, n * es); };
  io.result = [&](uint32_t r, uint64_t e, uint64_t n, uint8_t* dst) {
    std::memcpy(dst, out[r].data() + e * es, n * es);
  };
  io.mismatch = [&](uint32_t r, uint64_t e, const uint8_t*, const uint8_t*) { bad.emplace_back(r, e); };
  auto rank_of = [&c](uint32_t npu) { return c.rank_of(npu); };
  ASSERT_EQ(collectives::check_collective(plans, rank_of, root, io), 0u) << plans[0]->describe();
  const npu::Span mine = collectives::output_elements(plans[0]->kind(), plans[0]->elems(), N, N - 1);
  if (mine.elems() == 0) return;
  const uint64_t e = mine.ranges.back().second - 1;
  out[N - 1][e * es] ^= 1;
  ASSERT_EQ(collectives::check_collective(plans, rank_of, root, io), 1u) << plans[0]->describe();
  EXPECT_EQ(bad, (std::vector<std::pair<uint32_t, uint64_t>>{{N - 1, e}}));
}

/// Run `kind` on every communicator of `dims` and compare with the closed form.
void check(const Shape& sh, const std::vector<uint32_t>& dims, CollectiveKind kind, const PlanOptions& o,
           uint64_t elems, uint32_t root = 0) {
  for (const Communicator& c : Communicator::partition(sh, dims)) {
    const uint32_t N = c.size();
    Plans plans;
    for (uint32_t r = 0; r < N; ++r)
      plans.push_back(make_plan(c, kind, core::Dtype::int32, elems, root, o, c.npu_of(r)));
    check_shapes(plans);
    Buffers in(N);
    for (uint32_t r = 0; r < N; ++r) {
      in[r].resize(elems * 4);
      for (uint64_t i = 0; i < elems; ++i) {
        const int32_t v = static_cast<int32_t>(1000 * (r + 1) + i * 7 % 13);
        std::memcpy(in[r].data() + i * 4, &v, 4);
      }
    }
    Buffers out = in;
    run_reference(c, plans, out);
    expect_checker_agrees(c, plans, in, out, root);
    {
      // fp32: the chunk-at-a-time checker replays the same order of additions bit for bit.
      Plans fp;
      for (uint32_t r = 0; r < N; ++r) fp.push_back(make_plan(c, kind, core::Dtype::fp32, elems, root, o, c.npu_of(r)));
      Buffers fin(N);
      for (uint32_t r = 0; r < N; ++r) {
        fin[r].resize(elems * 4);
        core::random_elements(core::Dtype::fp32, 77 + r, fin[r].data(), elems * 4, 0, N);
      }
      Buffers fout = fin;
      run_reference(c, fp, fout);
      expect_checker_agrees(c, fp, fin, fout, root);
    }
    Buffers want = in;
    const uint64_t block = elems / N;
    if (kind == CollectiveKind::allreduce || kind == CollectiveKind::reducescatter) {
      std::vector<int32_t> sum(elems, 0);
      for (uint32_t r = 0; r < N; ++r) {
        auto v = as_ints(in[r]);
        for (uint64_t i = 0; i < elems; ++i) sum[i] += v[i];
      }
      for (uint32_t r = 0; r < N; ++r) {
        if (kind == CollectiveKind::allreduce) {
          std::memcpy(want[r].data(), sum.data(), elems * 4);
        } else {
          // Only the member's own block is defined.
          auto got = as_ints(out[r]);
          for (uint64_t i = r * block; i < (r + 1) * block; ++i)
            ASSERT_EQ(got[i], sum[i]) << collectives::ndim::Shape(sh).describe() << " rank " << r << " elem " << i;
        }
      }
      if (kind == CollectiveKind::reducescatter) continue;
    } else {
      ASSERT_TRUE(collectives::expected(kind, root, want));
    }
    for (uint32_t r = 0; r < N; ++r)
      ASSERT_EQ(as_ints(out[r]), as_ints(want[r]))
          << sh.describe() << " " << npu::collective_name(kind) << " " << c.describe() << " rank " << r;
  }
}

const std::vector<std::vector<DimSpec>> kShapes = {
    {{DimType::ring, 4, 1}},
    {{DimType::ring, 5, 2}},
    {{DimType::fully_connected, 4, 1}},
    {{DimType::sw, 8, 1}},
    {{DimType::ring, 2, 1}, {DimType::sw, 4, 2}},
    {{DimType::ring, 4, 1}, {DimType::fully_connected, 2, 1}, {DimType::sw, 4, 1}},
};

}  // namespace

TEST(NdimCollectives, EveryCollectiveAndAlgorithmGivesTheClosedForm) {
  const Algorithm algs[] = {Algorithm::ring, Algorithm::direct, Algorithm::halving_doubling,
                            Algorithm::double_binary_tree};
  const CollectiveKind kinds[] = {CollectiveKind::allreduce, CollectiveKind::reducescatter, CollectiveKind::allgather,
                                  CollectiveKind::alltoall, CollectiveKind::broadcast};
  int runs = 0;
  for (const auto& dims : kShapes) {
    const Shape sh = shape(dims);
    std::vector<uint32_t> all;
    for (uint32_t d = 0; d < sh.ndims(); ++d) all.push_back(d);
    std::vector<std::vector<uint32_t>> groups = {all, {0}};
    if (sh.ndims() > 1) groups.push_back({sh.ndims() - 1, 0});
    for (Algorithm a : algs)
      for (CollectiveKind k : kinds)
        for (bool bw : {true, false})
          for (const auto& g : groups) {
            bool pow2 = true;
            for (uint32_t d : g) pow2 &= (sh.size(d) & (sh.size(d) - 1)) == 0;
            if (a == Algorithm::halving_doubling && !pow2) continue;
            if (a == Algorithm::double_binary_tree && k != CollectiveKind::allreduce) continue;
            if (k == CollectiveKind::alltoall && a != Algorithm::ring && a != Algorithm::direct) continue;
            if (a == Algorithm::double_binary_tree && bw && g.size() > 1) continue;  // needs RS on the first dims
            PlanOptions o;
            o.algorithms.assign(sh.ndims(), a);
            o.bandwidth_aware = bw;
            o.chunk_bytes = 4 * 40;
            uint32_t n = 1;
            for (uint32_t d : g) n *= sh.size(d);
            const uint64_t elems = n * 30;
            SCOPED_TRACE(sh.describe() + " " + algorithm_name(a) + " " + npu::collective_name(k) +
                         (bw ? " localBWAware" : " baseline"));
            check(sh, g, k, o, elems, k == CollectiveKind::broadcast ? n - 1 : 0);
            ++runs;
          }
  }
  EXPECT_GT(runs, 100);
}

TEST(NdimCollectives, ChunksFromPreferredSplitsCoverTheBuffer) {
  const Shape sh = shape({{DimType::ring, 4, 1}, {DimType::sw, 4, 1}});
  PlanOptions o;
  o.chunks = 7;
  check(sh, {0, 1}, CollectiveKind::allreduce, o, 16 * 100);
  auto p = make_plan(Communicator(sh, {0, 1}, 0), CollectiveKind::allreduce, core::Dtype::fp32, 1600, 0, o, 0);
  EXPECT_EQ(p->chunks(), 7u);
  EXPECT_EQ(p->phases(), 3u);  // reduce-scatter dim0, all-reduce dim1, all-gather dim0
  EXPECT_EQ(p->phase_dim(0), 0u);
  EXPECT_EQ(p->phase_dim(1), 1u);
}

TEST(NdimCollectives, PortsAndRoutesAreConsistent) {
  const Shape sh = shape({{DimType::ring, 6, 2}, {DimType::fully_connected, 3, 1}, {DimType::sw, 4, 2}});
  EXPECT_EQ(sh.ports(), 4u + 2u + 2u);
  // Ring: + lanes leave on the + side, a far destination goes the shorter way.
  EXPECT_EQ(sh.first_port(0, 1, 0), 0u);
  EXPECT_EQ(sh.first_port(0, 5, 0), 1u);
  EXPECT_EQ(sh.first_port(0, 2, 1), 2u);
  EXPECT_EQ(sh.first_port(0, 4, 1), 3u);
  // Arriving at npu1 on its - side port of link 0 (port 1), a message for npu2 goes on the + side (port 0).
  EXPECT_EQ(sh.route(1, 2, 1), 0u);
  EXPECT_EQ(sh.route(5, 4, 0), 1u);
  // FullyConnected: one port per peer.
  EXPECT_EQ(sh.first_port(0, 6, 0), 4u);
  EXPECT_EQ(sh.first_port(0, 12, 0), 5u);
  // Switch: one port per link.
  EXPECT_EQ(sh.first_port(0, 18, 1), 7u);
  EXPECT_THROW(sh.first_port(0, 7, 0), std::logic_error);  // two dimensions at once
}

TEST(NdimCollectives, RefusesWhatCannotBeDone) {
  const Shape sh = shape({{DimType::ring, 6, 1}, {DimType::sw, 4, 1}});
  PlanOptions o;
  o.algorithms = {Algorithm::halving_doubling, Algorithm::ring};
  EXPECT_THROW(make_plan(Communicator(sh, {0}, 0), CollectiveKind::allreduce, core::Dtype::fp32, 60, 0, o, 0),
               core::ConfigError);
  o.algorithms = {Algorithm::double_binary_tree, Algorithm::ring};
  EXPECT_THROW(make_plan(Communicator(sh, {0}, 0), CollectiveKind::reducescatter, core::Dtype::fp32, 60, 0, o, 0),
               core::ConfigError);
  o.algorithms = {};
  EXPECT_THROW(make_plan(Communicator(sh, {0, 1}, 0), CollectiveKind::allgather, core::Dtype::fp32, 25, 0, o, 0),
               core::ConfigError);
  Algorithm a;
  EXPECT_TRUE(parse_algorithm("halvingDoubling", a));
  EXPECT_EQ(a, Algorithm::halving_doubling);
  EXPECT_FALSE(parse_algorithm("hierarchicalRing", a));
  DimType t;
  EXPECT_TRUE(parse_dim_type("FullyConnected", t));
  EXPECT_FALSE(parse_dim_type("Torus", t));
}

TEST(NdimCollectives, SplitDimensionsRunEveryCollective) {
  // A Ring of 8 cut into 2 x 4 (a model-parallel group of 2 inside it), and a
  // Switch of 4 x Ring of 6 with the ring cut into 3 x 2.
  const Shape ring = shape({{DimType::ring, 8, 1}}).split(0, 2);
  const Shape mixed = shape({{DimType::sw, 4, 1}, {DimType::ring, 6, 2}}).split(1, 3);
  EXPECT_EQ(ring.nlogical(), 2u);
  EXPECT_EQ(ring.size(0), 2u);
  EXPECT_EQ(ring.size(1), 4u);
  EXPECT_EQ(ring.coord(5, 0), 1u);
  EXPECT_EQ(ring.coord(5, 1), 2u);
  EXPECT_EQ(ring.with(5, 1, 0), 1u);
  EXPECT_EQ(ring.describe(), "Ring(8 = 2 x 4)");
  EXPECT_EQ(mixed.describe(), "Switch(4)xRing(6 = 3 x 2, 2 links)");
  // The second part's ring neighbours are 2 positions apart on the physical ring.
  EXPECT_EQ(ring.lane_next(1, 1, 0), 3u);
  EXPECT_EQ(ring.lane_port(1, 1, 0), ring.first_port(1, 3, 0));
  EXPECT_THROW(ring.split(1, 3), core::ConfigError);
  const CollectiveKind kinds[] = {CollectiveKind::allreduce, CollectiveKind::reducescatter, CollectiveKind::allgather,
                                  CollectiveKind::alltoall, CollectiveKind::broadcast};
  for (const Shape* sh : {&ring, &mixed})
    for (Algorithm a : {Algorithm::ring, Algorithm::direct})
      for (CollectiveKind k : kinds) {
        std::vector<std::vector<uint32_t>> groups = {{0}, {1}};
        std::vector<uint32_t> all;
        for (uint32_t d = 0; d < sh->nlogical(); ++d) all.push_back(d);
        groups.push_back(all);
        for (const auto& g : groups) {
          PlanOptions o;
          o.algorithms.assign(sh->ndims(), a);
          o.chunk_bytes = 4 * 48;
          uint32_t n = 1;
          for (uint32_t d : g) n *= sh->size(d);
          SCOPED_TRACE(sh->describe() + " " + algorithm_name(a) + " " + npu::collective_name(k));
          check(*sh, g, k, o, n * 24, k == CollectiveKind::broadcast ? n - 1 : 0);
        }
      }
}
