// The NPU collective service (models/npu/npu.h) driven from C++ on a small
// torus (systems/npu/system.h), once with the ACE and once with the NPU
// cores: concurrent collectives of every kind on different sub-groups, each
// with its own buffer, one started later from the fabric's action queue and one chained
// from a completion callback; every member's result is checked against the
// host reference, every handle's times against its submission. One
// elaboration per TEST (SystemC elaborates once per process).
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "models/core/context.h"
#include "models/core/dtype.h"
#include "sw/collectives/torus.h"
#include "systems/kind.h"
#include "systems/npu/system.h"

using namespace fabricvp;
using collectives::Communicator;
using npu::CollectiveKind;

namespace {

const std::string kPlatform = std::string(FABRICVP_PLATFORMS) + "/ace-torus-4x4x4.yaml";

using Plans = std::vector<std::shared_ptr<const npu::CollectivePlan>>;

/// One collective issued on every communicator of its group.
struct Job {
  CollectiveKind kind = CollectiveKind::allreduce;
  core::Dtype dtype = core::Dtype::fp32;
  std::vector<uint32_t> dims;
  uint64_t elems = 0;
  uint32_t root = 0;
  uint64_t address = 0;
  uint64_t at_ps = 0;  ///< launched at this time (0: before sc_start)
  std::vector<Communicator> comms;
  std::vector<Plans> plans;                                 // [comm][rank]
  std::vector<std::vector<npu::CollectiveHandle>> handles;  // [comm][rank]
  uint64_t bytes() const { return elems * core::dtype_bytes(dtype); }
  uint64_t seed(uint32_t npu) const { return 7000 + address / 4096 + npu; }
};

Job job(CollectiveKind kind, core::Dtype dtype, std::vector<uint32_t> dims, uint64_t elems, uint32_t root,
        uint64_t address, uint64_t at_ps = 0) {
  Job j;
  j.kind = kind;
  j.dtype = dtype;
  j.dims = std::move(dims);
  j.elems = elems;
  j.root = root;
  j.address = address;
  j.at_ps = at_ps;
  return j;
}

void plan(Job& j, const npusys::System& sys, const collectives::PlanOptions& o) {
  j.comms = Communicator::partition(sys.shape, j.dims);
  for (const Communicator& c : j.comms) {
    Plans p;
    for (uint32_t r = 0; r < c.size(); ++r)
      p.push_back(collectives::make_plan(c, j.kind, j.dtype, j.elems, j.root, o, c.npu_of(r)));
    j.plans.push_back(std::move(p));
  }
  j.handles.assign(j.comms.size(), std::vector<npu::CollectiveHandle>());
  for (size_t c = 0; c < j.comms.size(); ++c) j.handles[c].resize(j.comms[c].size());
}

std::vector<uint8_t> input(const Job& j, uint32_t npu) {
  std::vector<uint8_t> b(j.bytes());
  core::random_elements(j.dtype, j.seed(npu), b.data(), b.size(), 0, j.comms[0].size());
  return b;
}

void fill(const Job& j, npusys::System& sys) {
  for (const Communicator& c : j.comms)
    for (uint32_t r = 0; r < c.size(); ++r) {
      const std::vector<uint8_t> b = input(j, c.npu_of(r));
      sys.npus[c.npu_of(r)]->memory.write(j.address, b.data(), b.size());
    }
}

void submit(Job& j, npusys::System& sys, const std::function<npu::CompletionFn(size_t, uint32_t)>& on_done = {}) {
  for (size_t c = 0; c < j.comms.size(); ++c)
    for (uint32_t r = 0; r < j.comms[c].size(); ++r)
      j.handles[c][r] = sys.npus[j.comms[c].npu_of(r)]->submit(
          npu::CollectiveRequest{j.plans[c][r], j.address, j.comms[c].id()}, on_done ? on_done(c, r) : nullptr);
}

/// Every member's output elements against `want` (by rank); returns the mismatches.
uint64_t compare(const Job& j, size_t c, const std::vector<std::vector<uint8_t>>& want, const npusys::System& sys) {
  const uint32_t es = core::dtype_bytes(j.dtype);
  const Communicator& comm = j.comms[c];
  uint64_t bad = 0;
  for (uint32_t r = 0; r < comm.size(); ++r) {
    std::vector<uint8_t> got(j.bytes());
    sys.npus[comm.npu_of(r)]->memory.read(j.address, got.data(), got.size());
    for (const auto& [a, b] : collectives::output_elements(j.kind, j.elems, comm.size(), r).ranges)
      for (uint64_t e = a; e < b; ++e)
        if (std::memcmp(got.data() + e * es, want[r].data() + e * es, es) != 0 && ++bad <= 3)
          ADD_FAILURE() << npu::collective_name(j.kind) << " on " << comm.describe() << ": rank " << r << " element "
                        << e << " is " << core::element_value(j.dtype, got.data() + e * es) << ", expected "
                        << core::element_value(j.dtype, want[r].data() + e * es);
  }
  return bad;
}

/// The host result of a job from regenerated inputs (`then`: a chained
/// collective applied to that result).
std::vector<std::vector<uint8_t>> reference(const Job& j, size_t c, const Job* then = nullptr) {
  std::vector<std::vector<uint8_t>> want;
  for (uint32_t r = 0; r < j.comms[c].size(); ++r) want.push_back(input(j, j.comms[c].npu_of(r)));
  if (!collectives::expected(j.kind, j.root, want)) collectives::run_reference(j.plans[c], want);
  if (then && !collectives::expected(then->kind, then->root, want)) collectives::run_reference(then->plans[c], want);
  return want;
}

/// Elaborate a 4x2x2 torus with `overrides`, run the concurrent workload,
/// check it; `ace`: whether the ACE executes the collectives.
void run_workload(const std::vector<std::string>& overrides, bool ace) {
  auto& ctx = core::Context::get();
  ctx.config().load_file(kPlatform);
  for (const char* o : {"sys.local_npus=4", "sys.vertical_npus=2", "sys.horizontal_npus=2", "collective.chunk_kib=4"})
    ctx.config().add_override(o);
  for (const std::string& o : overrides) ctx.config().add_override(o);
  npusys::System sys("sys");
  ctx.config().check_all_used(systems::parameter_names());
  ASSERT_EQ(sys.npus.size(), 16u);
  ASSERT_EQ(sys.aces.size(), ace ? 16u : 0u);
  collectives::PlanOptions po;
  po.algorithm = sys.choices.algorithm.get();
  po.chunk_bytes = uint64_t(sys.choices.chunk_kib.get()) * 1024;
  po.align = sys.choices.align_elems.get();

  using collectives::kHorizontal;
  using collectives::kLocal;
  using collectives::kVertical;
  const uint64_t MiB = 1 << 20;
  // An allreduce on every local ring, an allgather on every vertical ring, an
  // alltoall on the whole torus, a broadcast (root 5) on the horizontal x
  // local planes from 300 ns, a reducescatter on the vertical x horizontal
  // planes followed at each member by an allgather on the same communicator.
  Job ar = job(CollectiveKind::allreduce, core::Dtype::fp32, {kLocal}, 5003, 0, 0);
  Job ag = job(CollectiveKind::allgather, core::Dtype::int32, {kVertical}, 2 * 1600, 0, 1 * MiB);
  Job a2a = job(CollectiveKind::alltoall, core::Dtype::bf16, {kLocal, kVertical, kHorizontal}, 16 * 320, 0, 2 * MiB);
  Job bc = job(CollectiveKind::broadcast, core::Dtype::fp16, {kHorizontal, kLocal}, 7001, 5, 3 * MiB, 300000);
  Job rs = job(CollectiveKind::reducescatter, core::Dtype::fp32, {kVertical, kHorizontal}, 4 * 1100, 0, 4 * MiB);
  Job chained = job(CollectiveKind::allgather, core::Dtype::fp32, {kVertical, kHorizontal}, 4 * 1100, 0, 4 * MiB);
  for (Job* j : {&ar, &ag, &a2a, &bc, &rs, &chained}) plan(*j, sys, po);
  EXPECT_EQ(ar.comms.size(), 4u);
  EXPECT_EQ(ag.comms.size(), 8u);
  EXPECT_EQ(a2a.comms.size(), 1u);
  EXPECT_EQ(bc.comms.size(), 2u);
  EXPECT_EQ(rs.comms.size(), 4u);
  EXPECT_GT(ar.plans[0][0]->chunks(), 1u);
  EXPECT_GT(bc.plans[0][0]->chunks(), 1u);
  for (Job* j : {&ar, &ag, &a2a, &bc, &rs}) fill(*j, sys);

  // The chained allgather: submitted by each member when its reducescatter completes.
  std::vector<std::vector<uint64_t>> rs_done(rs.comms.size(), std::vector<uint64_t>(4, 0));
  uint32_t callbacks = 0;
  submit(ar, sys);
  submit(ag, sys);
  submit(rs, sys, [&](size_t c, uint32_t r) -> npu::CompletionFn {
    return [&, c, r](const npu::Collective& done) {
      ++callbacks;
      EXPECT_TRUE(done.done);
      EXPECT_EQ(done.completion_ps, npu::Npu::now()) << "the callback runs at the completion time";
      EXPECT_EQ(done.request.address, 4 * MiB);
      rs_done[c][r] = done.completion_ps;
      chained.handles[c][r] = sys.npus[rs.comms[c].npu_of(r)]->submit(
          npu::CollectiveRequest{chained.plans[c][r], chained.address, chained.comms[c].id()});
    };
  });
  submit(a2a, sys);
  sys.actions.at(bc.at_ps, [&] {
    EXPECT_EQ(npu::Npu::now(), bc.at_ps);
    submit(bc, sys);
  });
  for (size_t c = 0; c < ar.comms.size(); ++c)
    for (uint32_t r = 0; r < 4; ++r) EXPECT_FALSE(ar.handles[c][r]->done) << "done before the simulation ran";

  sc_core::sc_start();
  ASSERT_TRUE(ctx.hw_errors().empty()) << ctx.hw_errors()[0].where << ": " << ctx.hw_errors()[0].message;
  EXPECT_EQ(callbacks, 16u);

  // Handles: done, after their submission; the chained allgather after its reducescatter.
  std::vector<uint64_t> last(16, 0);
  std::vector<uint32_t> per_npu(16, 0);
  for (const Job* j : {&ar, &ag, &a2a, &bc, &rs, &chained})
    for (size_t c = 0; c < j->comms.size(); ++c)
      for (uint32_t r = 0; r < j->comms[c].size(); ++r) {
        SCOPED_TRACE(std::string(npu::collective_name(j->kind)) + " on " + j->comms[c].describe() + " rank " +
                     std::to_string(r));
        const npu::CollectiveHandle& h = j->handles[c][r];
        ASSERT_TRUE(h);
        EXPECT_TRUE(h->done);
        EXPECT_EQ(h->id.comm, j->comms[c].id());
        if (j == &chained) {
          EXPECT_EQ(h->submitted_ps, rs_done[c][r]);
          EXPECT_GT(h->completion_ps, rs_done[c][r]);
          EXPECT_EQ(h->id.seq, 1u) << "the second collective on its communicator";
        } else {
          EXPECT_EQ(h->submitted_ps, j->at_ps);
          EXPECT_EQ(h->id.seq, 0u);
        }
        // Every member finishes after it starts; a broadcast root when its data have left.
        EXPECT_GT(h->completion_ps, h->submitted_ps);
        const uint32_t n = j->comms[c].npu_of(r);
        last[n] = std::max(last[n], h->completion_ps);
        ++per_npu[n];
      }
  // The broadcast started while the others were in flight, and before any
  // chained allgather: the members agree on the order of the collectives
  // they share (with finite chunk resources, members that start two
  // collectives on different communicators in opposite orders can wait for
  // each other forever).
  EXPECT_LT(bc.at_ps, a2a.handles[0][0]->completion_ps);
  for (const auto& c : rs_done)
    for (uint64_t t : c) EXPECT_GT(t, bc.at_ps);

  // Results: the reductions in the reference's order of additions, the rest in closed form.
  uint64_t bad = 0;
  for (const Job* j : {&ar, &ag, &a2a, &bc})
    for (size_t c = 0; c < j->comms.size(); ++c) bad += compare(*j, c, reference(*j, c), sys);
  for (size_t c = 0; c < rs.comms.size(); ++c) bad += compare(chained, c, reference(rs, c, &chained), sys);
  EXPECT_EQ(bad, 0u);

  for (uint32_t i = 0; i < 16; ++i) {
    const npu::Npu& n = *sys.npus[i];
    EXPECT_EQ(per_npu[i], 6u);
    EXPECT_EQ(n.in_flight(), 0u) << n.name();
    EXPECT_EQ(n.completion.get(), last[i]) << n.name();
    EXPECT_EQ(n.interrupts.get(), ace ? 6u : 0u) << n.name() << ": one completion interrupt per collective";
    if (ace) {
      EXPECT_EQ(sys.aces[i]->commands.get(), 6u) << n.name();
      EXPECT_EQ(sys.aces[i]->interrupts.get(), 6u) << n.name();
      EXPECT_GT(sys.aces[i]->chunks_stored.get(), 6u) << n.name();
    }
  }
}

}  // namespace

TEST(CollectiveService, ConcurrentCollectivesOnSubGroupsWithTheAce) { run_workload({"ace.model=tlm"}, true); }

TEST(CollectiveService, ConcurrentCollectivesOnSubGroupsWithTheNpuCores) {
  // One unidirectional local ring and three vertical ones (odd ring counts).
  run_workload({"ace.model=none", "sys.local_rings=1", "sys.vertical_rings=3"}, false);
}
