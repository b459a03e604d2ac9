// Chakra execution traces (sw/training/chakra.h): written with the schema,
// read back, run from the command line on an NPU fabric with dependencies
// respected, compute and collectives overlapping where the graph allows, the
// exposed communication as defined; malformed traces refused with file and node.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "models/core/config.h"
#include "sw/training/chakra.h"

using namespace fabricvp;
using namespace fabricvp::training;

namespace {

GraphNode comp(uint64_t id, uint64_t us, std::vector<uint64_t> deps) {
  GraphNode n;
  n.id = id;
  n.name = "comp" + std::to_string(id);
  n.kind = GraphNode::comp;
  n.duration_ns = us * 1000;
  n.deps = std::move(deps);
  return n;
}

GraphNode coll(uint64_t id, Comm c, uint64_t bytes, std::vector<uint64_t> deps) {
  GraphNode n;
  n.id = id;
  n.name = "coll" + std::to_string(id);
  n.kind = GraphNode::coll;
  n.comm = c;
  n.bytes = bytes;
  n.deps = std::move(deps);
  return n;
}

GraphNode p2p(uint64_t id, GraphNode::Kind kind, uint32_t peer, uint64_t bytes, std::vector<uint64_t> deps) {
  GraphNode n;
  n.id = id;
  n.name = (kind == GraphNode::send ? "send" : "recv") + std::to_string(id);
  n.kind = kind;
  n.peer = peer;
  n.bytes = bytes;
  n.deps = std::move(deps);
  return n;
}

}  // namespace

TEST(Chakra, TracesRoundTripAndRunWithTheirDependencies) {
  test::TempDir dir;
  const std::string platform = dir.file("idle.yaml", test::kIdleNdimRing);
  // The collective alone.
  test::Result one = test::sh("run " + platform + " -q --timing-only --bytes 1MiB -o " + (dir.path / "one").string());
  ASSERT_EQ(one.code, 0) << one.out;
  const uint64_t T = test::load_json((dir.path / "one" / "stats.json").string())["workload"]["simulated_ps"];
  // comp 10 us -> all-reduce 1 MiB -> comp 5 us, and comp 3 us independent of the all-reduce
  // (runs while it is in flight): total 10 + T + 5, exposed T - 3.
  Graph g;
  g.nodes = {comp(1, 10, {}), coll(2, Comm::allreduce, 1 << 20, {1}), comp(3, 5, {2}), comp(4, 3, {1})};
  const std::string prefix = (dir.path / "trace").string();
  for (uint32_t i = 0; i < 4; ++i) write_chakra(prefix + "." + std::to_string(i) + ".et", g);
  std::vector<Graph> back = read_chakra(prefix + ".0.et", 4);
  ASSERT_EQ(back.size(), 4u);
  ASSERT_EQ(back[2].nodes.size(), 4u);
  EXPECT_EQ(back[2].nodes[1].comm, Comm::allreduce);
  EXPECT_EQ(back[2].nodes[1].bytes, 1u << 20);
  EXPECT_EQ(back[2].nodes[2].deps, std::vector<uint64_t>{2});
  EXPECT_EQ(back[2].nodes[0].duration_ns, 10000u);

  test::Result r = test::sh("run " + platform + " -q --workload " + prefix + ".0.et -o " + (dir.path / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json s = test::load_json((dir.path / "run" / "stats.json").string())["workload"];
  EXPECT_EQ(s["kind"], "chakra");
  EXPECT_EQ(s["nodes"], 16);
  EXPECT_EQ(s["total_ps"].get<uint64_t>(), 10000000 + T + 5000000);
  EXPECT_EQ(s["compute_ps"].get<uint64_t>(), 18000000u);
  EXPECT_EQ(s["exposed_comm_ps"].get<uint64_t>(), T - 3000000);
  EXPECT_EQ(s["comm_busy_ps"].get<uint64_t>(), T);
}

TEST(Chakra, MalformedTracesAreRefusedWithFileAndNode) {
  test::TempDir dir;
  const std::string platform = dir.file("idle.yaml", test::kIdleNdimRing);
  auto run = [&](const Graph& g) {
    const std::string prefix = (dir.path / "t").string();
    for (uint32_t i = 0; i < 4; ++i) write_chakra(prefix + "." + std::to_string(i) + ".et", g);
    return test::sh("run " + platform + " -q --workload " + prefix + ".0.et -o " + (dir.path / "o").string());
  };
  Graph missing_dep;
  missing_dep.nodes = {comp(1, 1, {7})};
  test::Result r = run(missing_dep);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("t.0.et: node 1 ('comp1') depends on node 7, which is not in the trace"), std::string::npos)
      << r.out;
  Graph cycle;
  cycle.nodes = {comp(1, 1, {2}), comp(2, 1, {1})};
  r = run(cycle);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("a cycle in the dependencies"), std::string::npos) << r.out;
  Graph dims;
  GraphNode c = coll(1, Comm::allreduce, 4096, {});
  c.involved_dim = {};
  dims.nodes = {c};
  r = run(dims);
  EXPECT_EQ(r.code, 0) << r.out;  // no involved_dim: every dimension
  // Compute that adds up past what the picosecond clock holds (it wrapped).
  Graph long_compute;
  long_compute.nodes = {comp(1, 4000000000000, {}), comp(2, 1000000000000, {1})};
  r = run(long_compute);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("t.0.et: node 2 ('comp2'): duration_micros 1000000000000: the trace's compute adds up to "
                       "more than"),
            std::string::npos)
      << r.out;
  // A truncated file.
  const std::string bad = dir.file("bad.0.et", std::string("\x05\x0a\x03", 3));
  for (uint32_t i = 1; i < 4; ++i) dir.file("bad." + std::to_string(i) + ".et", std::string("\x05\x0a\x03", 3));
  r = test::sh("run " + platform + " -q --workload " + bad + " -o " + (dir.path / "o").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bad.0.et: byte 0: GlobalMetadata 0 is not a valid Chakra GlobalMetadata"), std::string::npos)
      << r.out;
  r = test::sh("run " + platform + " -q --workload " + (dir.path / "none.0.et").string() + " -o " +
               (dir.path / "o").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("none.0.et: missing"), std::string::npos) << r.out;
}

TEST(Chakra, SendsAndReceivesCrossDimensionsInOrder) {
  test::TempDir dir;
  // Ring(4) x FullyConnected(2) x Switch(2), every link 100 GB/s and 500 ns; fast memory.
  const std::string platform =
      dir.file("p.yaml",
               "sys:\n  topology: ndim\n  dims: 3\n"
               "  dim0: {type: Ring, npus: 4, links: 1, GBps: 100, latency_ns: 500}\n"
               "  dim1: {type: FullyConnected, npus: 2, links: 1, GBps: 100, latency_ns: 500}\n"
               "  dim2: {type: Switch, npus: 2, links: 1, GBps: 100, latency_ns: 500}\n"
               "  npu*:\n    memory: {GBps: 1000000}\n    compute: {vector_tflops: 1000000}\n"
               "ace: {model: none}\ncollective: {chunks: 1, align_elems: 1}\n");
  // npu0 -> npu15 = (3, 1, 1): the ring the short way (one hop), the
  // FullyConnected link, up to the switch and down: four links, store and
  // forward; then 2 us of compute at npu15.
  const std::string prefix = (dir.path / "p2p").string();
  for (uint32_t i = 0; i < 16; ++i) {
    Graph g;
    if (i == 0) {
      GraphNode s;
      s.id = 1;
      s.name = "send";
      s.kind = GraphNode::send;
      s.peer = 15;
      s.bytes = 1 << 20;
      g.nodes = {s};
    } else if (i == 15) {
      GraphNode r;
      r.id = 1;
      r.name = "recv";
      r.kind = GraphNode::recv;
      r.peer = 0;
      r.bytes = 1 << 20;
      g.nodes = {r, comp(2, 2, {1})};
    }
    write_chakra(prefix + "." + std::to_string(i) + ".et", g);
  }
  test::Result r = test::sh("run " + platform + " -q --workload " + prefix + ".0.et -o " + (dir.path / "o").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json s = test::load_json((dir.path / "o" / "stats.json").string());
  const double hop_ns = 1048576.0 / 100 + 500;
  const double total_ns = s["workload"]["total_ps"].get<double>() / 1000;
  EXPECT_NEAR(total_ns, 4 * hop_ns + 2000, 8.0);
  EXPECT_EQ(s["workload"]["p2p_transfers"], 1);
  EXPECT_EQ(s["workload"]["critical_npu"], 15);
  // The NPUs on the way passed it on: npu3 (ring -> FullyConnected), npu7 (-> switch).
  EXPECT_EQ(s["sys"]["npu3"]["forwarded"], 1);
  EXPECT_EQ(s["sys"]["npu7"]["forwarded"], 1);
  EXPECT_EQ(s["sys"]["dim2"]["switch7_0"]["messages"], 1);  // the switch of npu7 and npu15
  // --data: the bytes npu15 receives are the ones npu0 sent (checked), at the same times.
  r = test::sh("run " + platform + " -q --data --workload " + prefix + ".0.et -o " + (dir.path / "d").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json d = test::load_json((dir.path / "d" / "stats.json").string());
  EXPECT_EQ(d["workload"]["p2p_checked"], 1);
  EXPECT_EQ(d["workload"]["mismatched_elements"], 0);
  EXPECT_EQ(d["workload"]["total_ps"], s["workload"]["total_ps"]);
  // The last dimension an OCS plane instead: its circuits are planned for the transfer's hop on it (npu7 ->
  // npu15, one circuit switch crossing at the full 100 GB/s: one link where the packet switch took two).
  r = test::sh("run " + platform + " -q --data -p sys.dim2.fabric=ocs --workload " + prefix + ".0.et -o " +
               (dir.path / "ocs").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json o = test::load_json((dir.path / "ocs" / "stats.json").string());
  EXPECT_EQ(o["workload"]["mismatched_elements"], 0);
  EXPECT_NEAR(o["workload"]["total_ps"].get<double>() / 1000, 3 * hop_ns + 2000, 8.0);
  EXPECT_EQ(o["sys"]["dim2"]["ocs7"]["pairs"], 1) << o["sys"]["dim2"].dump();
}

TEST(Chakra, AWaitingTransferIsServedFirstByAPlaneThatPlansFromTheSchedule) {
  // 4 GPUs on SiP-OCS of 2 switches (degree 2), re-planned from the schedule. npu0 sends 1 MiB to npu3, waits for
  // its 64-byte answer, then sends 64 MiB to npu1 and to npu2: two pairs ahead, larger than the waiting one, fill
  // the degree; the waiting transfer must still get its circuit (it used to wait for ever: found by review).
  test::TempDir dir;
  const std::string prefix = (dir.path / "w").string();
  const std::vector<Graph> g = {
      Graph{"",
            {p2p(0, GraphNode::send, 3, 1 << 20, {}), p2p(1, GraphNode::recv, 3, 64, {}),
             p2p(2, GraphNode::send, 1, 64 << 20, {1}), p2p(3, GraphNode::send, 2, 64 << 20, {1})}},
      Graph{"", {p2p(0, GraphNode::recv, 0, 64 << 20, {})}}, Graph{"", {p2p(0, GraphNode::recv, 0, 64 << 20, {})}},
      Graph{"", {p2p(0, GraphNode::recv, 0, 1 << 20, {}), p2p(1, GraphNode::send, 0, 64, {0})}}};
  for (uint32_t i = 0; i < 4; ++i) write_chakra(prefix + "." + std::to_string(i) + ".et", g[i]);
  for (const char* estimate : {"past", "schedule"}) {
    const test::Result r = test::sh(std::string("run ") + FABRICVP_PLATFORMS + "/sipml-ocs-64.yaml -q --data -p " +
                                    "sys.dim0.npus=4 -p sys.dim0.ocs0.switches=2 -p sys.dim0.ocs0.schedule=dynamic " +
                                    "-p sys.dim0.ocs0.reconfig_delay_us=1 -p sys.dim0.ocs0.estimate=" + estimate +
                                    " --workload " + prefix + ".0.et -o " + (dir.path / estimate).string());
    ASSERT_EQ(r.code, 0) << estimate << "\n" << r.out;
    const nlohmann::json s = test::load_json((dir.path / estimate / "stats.json").string());
    EXPECT_EQ(s["workload"]["p2p_checked"], 4) << estimate;
    EXPECT_EQ(s["workload"]["mismatched_elements"], 0) << estimate;
  }
}
