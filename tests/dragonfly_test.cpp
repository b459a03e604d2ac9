// Dragonfly topologies, routes, spares and failures, the static schedule
// checker, and collectives on multi-node machines with real data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "harness.h"
#include "sw/sched/checker.h"
#include "sw/sched/collectives.h"
#include "sw/sched/routing.h"

using namespace fabricvp;

namespace {

const std::string kPlatforms = FABRICVP_PLATFORMS;

/// Elaborate a platform file with overrides (one per process).
struct Machine {
  explicit Machine(const std::string& file, std::vector<std::string> overrides = {}) {
    auto& ctx = core::Context::get();
    ctx.config().load_file(kPlatforms + "/" + file);
    for (const auto& o : overrides) ctx.config().add_override(o);
    params = std::make_unique<groq::CompilerParams>();
    sys = std::make_unique<groq::System>("sys");
    ctx.config().check_all_used(systems::parameter_names());
    m = groq::machine_of(*sys);
  }
  std::unique_ptr<groq::CompilerParams> params;
  std::unique_ptr<groq::System> sys;
  sched::Machine m;
};

uint32_t global_cables(const sched::Machine& m, const sched::Route& r) {
  uint32_t g = 0;
  for (const sched::Hop& h : r.hops) g += m.chips[h.chip].node != m.chips[m.chips[h.chip].ports[h.port].peer].node;
  return g;
}

nlohmann::json run(const std::string& file, const std::string& kind, uint64_t bytes, const std::string& dtype,
                   std::vector<std::string> overrides = {}, uint32_t root = 0, uint32_t peer = 1) {
  systems::RunOptions o;
  o.platform = kPlatforms + "/" + file;
  o.workload = kind;
  o.bytes = bytes;
  core::parse_dtype(dtype, o.dtype);
  o.root = root;
  o.peer = peer;
  o.overrides = std::move(overrides);
  return test::run_stats(o);
}

void expect_checked(const nlohmann::json& j) {
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_EQ(j["workload"]["simulated_ps"], j["workload"]["predicted_ps"]);
  EXPECT_EQ(j["run"]["schedule_violations"], 0);
  EXPECT_EQ(j["run"]["status"], "ok");
}

}  // namespace

TEST(Topology, Dragonfly264HasOneGlobalLinkPerNodePairAndThreeCableRoutes) {
  Machine x("groq-dragonfly-264.yaml");
  EXPECT_EQ(x.sys->chips.size(), 264u);
  EXPECT_EQ(x.sys->links.size(), 33u * 28 + 33u * 32 / 2);
  EXPECT_EQ(x.m.size(), 256u);  // one spare node
  for (const sched::ChipSpec& c : x.m.chips)
    for (const sched::PortSpec& p : c.ports) EXPECT_NE(p.peer, sched::kNoChip) << c.name;  // all 11 ports cabled
  sched::Router router(x.m);
  uint32_t worst = 0;
  for (uint32_t a = 0; a < x.m.size(); a += 7)
    for (uint32_t b = 0; b < x.m.size(); ++b) {
      if (a == b) continue;
      uint32_t d = router.distance(x.m.ranks[a], x.m.ranks[b]);
      ASSERT_EQ(d, router.distance(x.m.ranks[b], x.m.ranks[a]));  // symmetric
      sched::Route r = router.minimal(x.m.ranks[a], x.m.ranks[b]);
      ASSERT_EQ(r.hops.size(), d);
      ASSERT_LE(global_cables(x.m, r), 1u);
      worst = std::max(worst, d);
    }
  EXPECT_EQ(worst, 3u);  // seed 000 §2.2: three hops with minimal routing
}

TEST(Topology, MultiRackDragonflyRoutesCrossAtMostThreeGlobalCables) {
  // The 10,440-TSP structure (two rack links per node pair, one inter-rack link
  // per rack pair) at 5 racks: at most rack + inter-rack + rack cables, plus
  // the local hops inside nodes (seed 000 counts 5 hops; docs/collectives.md).
  Machine x("groq-dragonfly-10440.yaml", {"sys.racks=5"});
  EXPECT_EQ(x.m.size(), 5u * 72);
  sched::Router router(x.m);
  uint32_t worst = 0, worst_global = 0;
  for (uint32_t a = 0; a < x.m.size(); a += 5)
    for (uint32_t b = 0; b < x.m.size(); ++b) {
      if (a == b) continue;
      sched::Route r = router.minimal(x.m.ranks[a], x.m.ranks[b]);
      worst = std::max<uint32_t>(worst, static_cast<uint32_t>(r.hops.size()));
      worst_global = std::max(worst_global, global_cables(x.m, r));
    }
  EXPECT_LE(worst, 7u);
  EXPECT_LE(worst_global, 3u);
}

TEST(Topology, RingNodeUsesTripleCables) {
  Machine x("groq-node-ring.yaml");
  EXPECT_EQ(x.sys->links.size(), 8u * 3);
  sched::Router router(x.m);
  EXPECT_EQ(router.distance(0, 1), 1u);
  EXPECT_EQ(router.distance(0, 4), 4u);
  EXPECT_EQ(router.distance(0, 7), 1u);
}

TEST(Topology, FailedNodeIsReplacedBySpareAndRoutedAround) {
  Machine x("groq-dragonfly-264.yaml", {"sys.failed_nodes=node5"});
  ASSERT_EQ(x.m.size(), 256u);
  std::set<uint32_t> used(x.m.ranks.begin(), x.m.ranks.end());
  for (uint32_t t = 0; t < 8; ++t) {
    EXPECT_FALSE(used.count(5 * 8 + t));  // the failed node is out
    EXPECT_TRUE(used.count(32 * 8 + t));  // the spare is in
  }
  EXPECT_EQ(x.m.ranks[5 * 8], 32u * 8);  // ... in the failed node's place
  sched::Router router(x.m);
  for (uint32_t a = 0; a < x.m.size(); a += 9)
    for (uint32_t b = 0; b < x.m.size(); ++b) {
      if (a == b) continue;
      sched::Route r = router.minimal(x.m.ranks[a], x.m.ranks[b]);
      ASSERT_LE(r.hops.size(), 3u);
      for (const sched::Hop& h : r.hops) ASSERT_FALSE(x.m.chips[h.chip].failed);
    }
}

TEST(Topology, DeadCableIsAvoided) {
  Machine x("groq-dragonfly-264.yaml", {"sys.failed_links=glink0_1_0"});
  sched::Router router(x.m);
  sched::Route r = router.minimal(0, 8);  // node0.tsp0 -> node1.tsp0 used glink0_1_0, their only link
  EXPECT_EQ(global_cables(x.m, r), 2u);   // now through a third node
  for (const sched::Hop& h : r.hops) EXPECT_FALSE(x.m.chips[h.chip].ports[h.port].failed);
}

TEST(Topology, BadFailureNamesAreErrors) {
  auto& ctx = core::Context::get();
  ctx.config().load_file(kPlatforms + "/groq-dragonfly-264.yaml");
  ctx.config().add_override("sys.failed_nodes=node5,node40");
  groq::CompilerParams rp;
  try {
    groq::System sys("sys");
    FAIL();
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no node named 'node40'"), std::string::npos) << e.what();
  }
}

TEST(Topology, TwoFailedNodesExhaustOneSpare) {
  auto& ctx = core::Context::get();
  ctx.config().load_file(kPlatforms + "/groq-dragonfly-264.yaml");
  ctx.config().add_override("sys.failed_nodes=node1,node2");
  groq::CompilerParams rp;
  try {
    groq::System sys("sys");
    FAIL();
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("node node2 failed and no healthy spare is left"), std::string::npos)
        << e.what();
  }
}

TEST(Routing, SpreadingStartsAboveAFewKilobytes) {
  Machine x("groq-node.yaml");
  sched::Router router(x.m);
  std::vector<sched::Route> routes = router.candidates(0, 1, 7);
  ASSERT_EQ(routes.size(), 7u);  // the direct cable and the six 2-hop detours through the node
  EXPECT_EQ(routes[0].hops.size(), 1u);
  for (size_t i = 1; i < routes.size(); ++i) EXPECT_EQ(routes[i].hops.size(), 2u);
  auto used = [&](uint32_t n) {
    auto s = router.split(routes, n);
    return std::count_if(s.begin(), s.end(), [](uint32_t k) { return k > 0; });
  };
  EXPECT_EQ(used(1), 1);    // one vector: minimal only
  EXPECT_EQ(used(16), 1);   // 5 KB: still minimal (detours cost a hop)
  EXPECT_EQ(used(100), 7);  // 32 KB: everything
}

TEST(Checker, CatchesInjectedConflicts) {
  Machine x("groq-node.yaml", {"sys.tsps_per_node=3"});
  sched::Request req;
  req.bytes = 64 * 1024;
  sched::Plan p = sched::plan(x.m, req);
  ASSERT_TRUE(sched::check_schedule(x.m, p.programs).violations.empty());
  // (a) A RECV one cycle earlier than scheduled takes a vector that has not arrived.
  {
    auto progs = p.programs;
    bool done = false;
    for (auto& q : progs[1].queues)
      for (size_t i = 0; i + 1 < q.size() && !done; ++i)
        if (q[i].op == tsp::Op::WAIT && q[i + 1].op == tsp::Op::RECV) {
          --q[i].imm;
          done = true;
        }
    ASSERT_TRUE(done);
    auto rep = sched::check_schedule(x.m, progs);
    ASSERT_FALSE(rep.violations.empty());
    EXPECT_NE(rep.violations[0].what.find("before it arrives"), std::string::npos) << rep.violations[0].what;
  }
  // (b) A second SEND on a busy cable: two vectors in one slot, and vectors nobody takes.
  {
    auto progs = p.programs;
    tsp::Instr extra;
    extra.op = tsp::Op::SEND;
    extra.port = 0;
    extra.count = 64;
    progs[0].emit(30, extra);
    auto rep = sched::check_schedule(x.m, progs);
    bool slot = false, leftover = false;
    for (const auto& v : rep.violations) {
      slot |= v.what.find("two vectors in one slot") != std::string::npos;
      leftover |= v.what.find("that no RECV takes") != std::string::npos;
    }
    EXPECT_TRUE(slot);
    EXPECT_TRUE(leftover);
  }
  // (c) More ADD bursts at once than ALUs.
  {
    auto progs = p.programs;
    for (uint32_t q = 25; q < 30; ++q) {
      tsp::Instr add;
      add.op = tsp::Op::ADD;
      add.dtype = core::Dtype::fp32;
      add.count = 100;
      progs[2].emit(q, add);
    }
    auto rep = sched::check_schedule(x.m, progs);
    ASSERT_FALSE(rep.violations.empty());
    EXPECT_NE(rep.violations.back().what.find("ALU bursts at once"), std::string::npos);
  }
}

struct Case {
  const char* name;
  const char* kind;
  uint64_t bytes;
  const char* dtype;
  std::vector<std::string> overrides;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class SmallDragonfly : public ::testing::TestWithParam<Case> {};

TEST_P(SmallDragonfly, VerifiedOnEveryRankAndCompletesAsPredicted) {
  const Case& c = GetParam();
  const bool racks = !c.overrides.empty() && c.overrides[0].rfind("sys.racks", 0) == 0;
  nlohmann::json j = run(racks ? "groq-dragonfly-10440.yaml" : "groq-dragonfly-264.yaml", c.kind, c.bytes, c.dtype,
                         c.overrides, 3, 13);
  expect_checked(j);
}

const std::vector<std::string> kTwoNodes = {"sys.nodes_per_rack=2", "sys.spares=none"};
const std::vector<std::string> kThreeNodes = {"sys.nodes_per_rack=3", "sys.spares=none"};
const std::vector<std::string> kTwoRacks = {"sys.racks=2", "sys.nodes_per_rack=2"};

INSTANTIATE_TEST_SUITE_P(
    Collectives, SmallDragonfly,
    ::testing::Values(Case{"allreduce_2nodes_fp32", "allreduce", 100000, "fp32", kTwoNodes},
                      Case{"allreduce_3nodes_bf16", "allreduce", 77760, "bf16", kThreeNodes},
                      Case{"allreduce_2racks_fp16", "allreduce", 65536, "fp16", kTwoRacks},
                      Case{"allgather_3nodes_int32", "allgather", 24 * 1000, "int32", kThreeNodes},
                      Case{"reducescatter_3nodes_fp32", "reducescatter", 24 * 1000, "fp32", kThreeNodes},
                      Case{"reducescatter_2racks_int32", "reducescatter", 32 * 800, "int32", kTwoRacks},
                      Case{"broadcast_3nodes_fp16", "broadcast", 100000, "fp16", kThreeNodes},
                      Case{"alltoall_2nodes_fp32", "alltoall", 16 * 16 * 644, "fp32", kTwoNodes},
                      Case{"p2p_3nodes_bf16", "p2p", 200000, "bf16", kThreeNodes},
                      Case{"allreduce_spare_replaces_failed_node",
                           "allreduce",
                           40000,
                           "fp32",
                           {"sys.nodes_per_rack=4", "sys.spares=per_system", "sys.failed_nodes=node1"}},
                      Case{"allreduce_dead_global_cable",
                           "allreduce",
                           40000,
                           "int32",
                           {"sys.nodes_per_rack=3", "sys.spares=none", "sys.failed_links=glink0_2_3"}},
                      Case{"allreduce_tiny_pieces", "allreduce", 640, "fp32", kTwoRacks}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

TEST(RingNode, AllReduceVerified) { expect_checked(run("groq-node-ring.yaml", "allreduce", 100000, "fp32")); }

// 1 MiB = 3277 vectors: 86 us on one cable at 100 Gb/s.
constexpr uint64_t kOneCableMiBps = 3277ull * 26240;

TEST(P2p, SpreadsLargeTensorsOverSevenRoutesInsideANode) {
  nlohmann::json j = run("groq-node.yaml", "p2p", 1u << 20, "fp32", {}, 0, 5);
  expect_checked(j);
  EXPECT_EQ(j["workload"]["paths"], 7);
  EXPECT_LT(j["workload"]["simulated_ps"].get<uint64_t>() * 5, kOneCableMiBps);
}

TEST(P2p, MinimalRoutingUsesOneCable) {
  nlohmann::json j = run("groq-node.yaml", "p2p", 1u << 20, "fp32", {"sched.routing=minimal"}, 0, 5);
  expect_checked(j);
  EXPECT_EQ(j["workload"]["paths"], 1);
  EXPECT_GT(j["workload"]["simulated_ps"].get<uint64_t>(), kOneCableMiBps);
}
