// NPU + ACE platforms on the hierarchical torus: topology, checked all-reduces
// with the ACE (C++ and RTL datapath) and with NPU-core reductions, every
// collective alone and several at once on sub-groups (--collective), memory
// accounting of the baseline, parameter errors, determinism.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "harness.h"
#include "sw/collectives/torus.h"
#include "systems/npu/system.h"

using namespace fabricvp;

namespace {

const std::string kPlatform = std::string(FABRICVP_PLATFORMS) + "/ace-torus-4x4x4.yaml";
const std::string kSmall = "-p sys.local_npus=2 -p sys.vertical_npus=2 -p sys.horizontal_npus=2";

struct RunOut {
  test::Result r;
  nlohmann::json stats;
};

RunOut run(const std::string& args, const test::TempDir& dir, const std::string& sub = "out") {
  RunOut out;
  out.r = test::sh("run " + kPlatform + " -q -o " + dir / sub + " " + args);
  if (out.r.code == 0) out.stats = test::load_json(dir / (sub + "/stats.json"));
  return out;
}

}  // namespace

TEST(AcePlatform, TorusShapeRingsAndTableIvLinks) {
  auto& ctx = core::Context::get();
  ctx.config().load_file(kPlatform);
  npusys::System sys("sys");
  ASSERT_EQ(sys.npus.size(), 64u);
  ASSERT_EQ(sys.aces.size(), 64u);
  // Local: one full-duplex link per neighbour pair (2 unidirectional rings);
  // vertical and horizontal: two per pair (2 bidirectional rings).
  uint32_t per_dim[3] = {0, 0, 0};
  for (size_t k = 0; k < sys.links.size(); ++k) ++per_dim[sys.link_dim[k]];
  EXPECT_EQ(per_dim[collectives::kLocal], 64u);
  EXPECT_EQ(per_dim[collectives::kVertical], 128u);
  EXPECT_EQ(per_dim[collectives::kHorizontal], 128u);
  for (size_t k = 0; k < sys.links.size(); ++k) {
    const npu::FabricLink& l = *sys.links[k];
    const bool local = sys.link_dim[k] == collectives::kLocal;
    EXPECT_DOUBLE_EQ(l.GBps.get(), local ? 200.0 : 25.0);
    EXPECT_EQ(l.a_to_b.latency_ps(), local ? 90000u : 200000u);
    EXPECT_DOUBLE_EQ(l.payload_GBps(), local ? 188.0 : 23.5);
    // Link endpoints are neighbours along the link's dimension.
    EXPECT_EQ(sys.shape.step(l.a(), sys.link_dim[k], 1), l.b());
  }
  // NPU 5 = (1, 1, 0): rings of each dimension go both ways around.
  const collectives::TorusShape& s = sys.shape;
  EXPECT_EQ(s.id({1, 1, 0}), 5u);
  collectives::RingPos plus = collectives::ring_pos(s, 5, collectives::kVertical, 0),
                       minus = collectives::ring_pos(s, 5, collectives::kVertical, 1);
  EXPECT_EQ(plus.n, 4u);
  EXPECT_EQ(plus.next, s.id({1, 2, 0}));
  EXPECT_EQ(plus.prev, s.id({1, 0, 0}));
  EXPECT_EQ(minus.next, s.id({1, 0, 0}));
  EXPECT_EQ(minus.pos, 3u);
  // The enhanced all-reduce's first phase (reduce-scatter on the local rings):
  // the members of one local ring send disjoint segments at step 0 that
  // together are the chunk, and each receives 3 messages per ring.
  const collectives::Communicator comm(s, {collectives::kLocal, collectives::kVertical, collectives::kHorizontal}, 0);
  collectives::PlanOptions o;
  o.chunk_bytes = 4096 * 4;
  o.align = 64;
  uint64_t sent = 0;
  std::set<uint64_t> starts;
  for (uint32_t l = 0; l < 4; ++l) {
    auto plan =
        collectives::make_plan(comm, npu::CollectiveKind::allreduce, core::Dtype::fp32, 4096, 0, o, s.id({l, 0, 0}));
    ASSERT_EQ(plan->phases(), 4u);
    EXPECT_EQ(plan->describe(), "reduce-scatter local, all-reduce vertical, all-reduce horizontal, all-gather local");
    auto chunk = plan->chunk(0);
    EXPECT_EQ(chunk->span().elems(), 4096u);
    for (uint32_t q = 0; q < plan->rings(0); ++q) {
      EXPECT_EQ(plan->ring(0, q).receives, 3u);
      const npu::Span f = chunk->first_send(0, q);
      sent += f.elems();
      for (const auto& r : f.ranges) EXPECT_TRUE(starts.insert(r.first).second);
    }
  }
  EXPECT_EQ(sent, 4096u);
}

TEST(AcePlatform, AllreduceVerifiedWithAceAndWithNpuCores) {
  test::TempDir dir;
  struct Case {
    std::string model, dtype, bytes;
  };
  for (const Case& c : {Case{"tlm", "fp32", "64KiB"}, Case{"tlm", "bf16", "100002"}, Case{"none", "fp32", "64KiB"},
                        Case{"none", "int32", "36000"}, Case{"tlm", "fp16", "20000"}}) {
    RunOut r = run(kSmall + " -p ace.model=" + c.model + " --dtype " + c.dtype + " --bytes " + c.bytes, dir);
    ASSERT_EQ(r.r.code, 0) << c.model << " " << c.dtype << " " << c.bytes << "\n" << r.r.out;
    EXPECT_TRUE(r.stats["workload"]["verified"].get<bool>());
    EXPECT_EQ(r.stats["workload"]["mismatched_elements"], 0);
    EXPECT_GT(r.stats["workload"]["simulated_ps"].get<uint64_t>(), 0u);
    EXPECT_EQ(r.stats["run"]["status"], "ok");
  }
  // The full 64-NPU platform, default (ACE, C++ datapath).
  RunOut r = run("--bytes 256KiB", dir);
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  EXPECT_EQ(r.stats["workload"]["ranks"], 64);
  EXPECT_TRUE(r.stats["workload"]["verified"].get<bool>());
}

TEST(AcePlatform, RtlDatapathGivesTheSameResultsAndTiming) {
  test::TempDir dir;
  const std::string args = kSmall + " --dtype bf16 --bytes 24KiB -p collective.chunk_kib=4";
  RunOut t = run(args + " -p ace.model=tlm", dir, "tlm");
  RunOut r = run(args + " -p ace.model=rtl", dir, "rtl");
  ASSERT_EQ(t.r.code, 0) << t.r.out;
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  EXPECT_TRUE(t.stats["workload"]["verified"].get<bool>());
  EXPECT_TRUE(r.stats["workload"]["verified"].get<bool>());
  EXPECT_EQ(t.stats["workload"]["simulated_ps"], r.stats["workload"]["simulated_ps"]);
  EXPECT_EQ(r.stats["sys"]["npu0"]["ace"]["model"], "rtl");
  for (uint32_t i = 0; i < 8; ++i) {
    const std::string n = "npu" + std::to_string(i);
    const auto &a = t.stats["sys"][n], &b = r.stats["sys"][n];
    EXPECT_EQ(a["completion_ps"], b["completion_ps"]) << n;
    for (const char* k : {"beats", "add_beats", "dp_stall_cycles", "peak_sram_bytes", "alu_utilization"})
      EXPECT_EQ(a["ace"][k], b["ace"][k]) << n << " " << k;
    EXPECT_GT(b["ace"]["dp0_0"]["cycles"].get<uint64_t>(), 0u);  // the RTL really ran
  }
}

// Timing-only collectives run the ACE's bursts in closed form (no data, no
// datapath beats): every collective must take the same simulated time and
// leave the same ACE, SRAM and memory counters as with data.
TEST(AcePlatform, TimingOnlyGivesTheSameTimesAndCountersAsData) {
  test::TempDir dir;
  for (const char* coll : {"allreduce", "reducescatter", "allgather", "alltoall"}) {
    const std::string args = kSmall + " --dtype fp32 --bytes 40000 --workload " + coll;
    RunOut d = run(args, dir, std::string("data_") + coll);
    RunOut t = run(args + " --timing-only", dir, std::string("timing_") + coll);
    ASSERT_EQ(d.r.code, 0) << coll << "\n" << d.r.out;
    ASSERT_EQ(t.r.code, 0) << coll << "\n" << t.r.out;
    EXPECT_TRUE(d.stats["workload"]["verified"].get<bool>()) << coll;
    EXPECT_EQ(d.stats["workload"]["simulated_ps"], t.stats["workload"]["simulated_ps"]) << coll;
    for (uint32_t i = 0; i < 8; ++i) {
      const std::string n = "npu" + std::to_string(i);
      const auto &a = d.stats["sys"][n], &b = t.stats["sys"][n];
      EXPECT_EQ(a["completion_ps"], b["completion_ps"]) << coll << " " << n;
      for (const char* k : {"beats", "add_beats", "store_beats", "dp_stall_cycles", "peak_sram_bytes",
                            "sram_read_bytes", "sram_write_bytes", "alu_utilization"})
        EXPECT_EQ(a["ace"][k], b["ace"][k]) << coll << " " << n << " " << k;
      EXPECT_EQ(a["memory"], b["memory"]) << coll << " " << n;
    }
  }
}

TEST(AcePlatform, EnhancedAndBaselineAlgorithmsBothVerified) {
  test::TempDir dir;
  RunOut e = run("--bytes 256KiB -p collective.algorithm=enhanced", dir, "e");
  RunOut b = run("--bytes 256KiB -p collective.algorithm=baseline", dir, "b");
  ASSERT_EQ(e.r.code, 0) << e.r.out;
  ASSERT_EQ(b.r.code, 0) << b.r.out;
  EXPECT_TRUE(e.stats["workload"]["verified"].get<bool>());
  EXPECT_TRUE(b.stats["workload"]["verified"].get<bool>());
  EXPECT_EQ(e.stats["workload"]["phases"],
            "reduce-scatter local, all-reduce vertical, all-reduce horizontal, all-gather local");
  EXPECT_EQ(b.stats["workload"]["phases"], "all-reduce local, all-reduce vertical, all-reduce horizontal");
  // The enhanced algorithm sends 4x less over the inter-package links (seed 001 §V-C).
  const uint64_t B = 256 * 1024;
  // Per NPU: enhanced sends 2 x 3/4 B locally + 2 x 2 x 3/4 x B/4 across packages; baseline 2 x 3/4 B per dimension.
  EXPECT_EQ(e.stats["workload"]["network_bytes"].get<uint64_t>(), 64 * (3 * B / 2 + 3 * B / 4));
  EXPECT_EQ(b.stats["workload"]["network_bytes"].get<uint64_t>(), 64 * (3 * (3 * B / 2)));
}

TEST(AcePlatform, BaselineReducesThroughMemoryTwoReadsOneWritePerStep) {
  test::TempDir dir;
  const uint64_t B = 1 << 20;
  RunOut r = run("--bytes 1MiB -p ace.model=none", dir);
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  EXPECT_TRUE(r.stats["workload"]["verified"].get<bool>());
  uint64_t total = 0;
  for (uint32_t i = 0; i < 64; ++i) {
    const auto& n = r.stats["sys"]["npu" + std::to_string(i)];
    const auto& m = n["memory"];
    // Enhanced on 4x4x4: reduce-scatter local 3/4 B, then 3/4 of B/4 in each inter-package all-reduce.
    const uint64_t reduced = 3 * B / 4 + 2 * (3 * B / 16);
    EXPECT_EQ(n["reduced_bytes"].get<uint64_t>(), reduced);
    EXPECT_EQ(m["reduce_read_bytes"].get<uint64_t>(), 2 * reduced);
    EXPECT_EQ(m["reduce_write_bytes"].get<uint64_t>(), reduced);
    EXPECT_EQ(m["afi_rx_write_bytes"].get<uint64_t>(), n["bytes_received"].get<uint64_t>());
    EXPECT_EQ(m["afi_tx_read_bytes"].get<uint64_t>(), n["bytes_sent"].get<uint64_t>());
    EXPECT_EQ(m["ace_load_read_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(m["comm_bytes"].get<uint64_t>(),
              3 * reduced + n["bytes_received"].get<uint64_t>() + n["bytes_sent"].get<uint64_t>());
    total += m["comm_bytes"].get<uint64_t>();
  }
  EXPECT_EQ(r.stats["workload"]["npu_memory_bytes"].get<uint64_t>(), total);
  // With the ACE the NPU memory sees each byte once in and once out.
  RunOut a = run("--bytes 1MiB -p ace.model=tlm", dir, "ace");
  ASSERT_EQ(a.r.code, 0) << a.r.out;
  EXPECT_EQ(a.stats["workload"]["npu_memory_bytes"].get<uint64_t>(), 64 * 2 * B);
  EXPECT_LT(a.stats["workload"]["memory_bytes_per_network_byte"].get<double>(),
            r.stats["workload"]["memory_bytes_per_network_byte"].get<double>() / 3);
}

TEST(AcePlatform, BadParametersAreInputErrors) {
  test::TempDir dir;
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {
           Case{"-p ace.model=fpga", "is not one of: tlm, rtl, none"},
           Case{"-p collective.algorithm=fast", "is not one of: enhanced, baseline"},
           Case{"-p sys.npu*.ace.alu_lanes=12", "is not a multiple of the datapath slice width"},
           Case{"-p sys.npu*.ace.sram_kib=32", "it needs one per phase partition"},
           Case{"-p sys.npu*.ace.fsms=2", "FSMs for 4 phases"},
           Case{"-p collective.align_elems=16", "must be a multiple of alu_lanes"},
           Case{"-p sys.llink*.GBpz=3", "unknown key"},
           Case{"-p sys.local_npus=0", "out of range"},
           Case{"--workload p2p", "NPU platforms run allreduce, reducescatter, allgather, alltoall or broadcast"},
           Case{"--bytes 6", "multiple of 4 bytes"},
           Case{"--workload reducescatter --bytes 12", "must be a multiple of the members"},
           Case{"--workload broadcast --root 8", "root 8 is not a rank of a 8-member communicator"},
           Case{"--group local+up", "unknown dimension 'up'"},
           Case{"--collective allreduce,bytes=1Mi", "unknown unit 'Mi'"},
           Case{"--collective allreduce,size=4", "unknown key 'size'"},
           Case{"--collective gather", "unknown collective 'gather'"},
           Case{"-p sys.vertical_npus=1 -p sys.vlink*.GBps=3",
                "sys.vertical_npus is 1: a dimension of one NPU has no vertical links"},
       }) {
    test::Result r = test::sh("run " + kPlatform + " -q -o " + dir / "bad" + " " + kSmall + " " + c.args);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
}

TEST(AcePlatform, SameSeedGivesIdenticalStatistics) {
  test::TempDir dir;
  RunOut a = run(kSmall + " --bytes 48KiB --seed 7", dir, "a");
  RunOut b = run(kSmall + " --bytes 48KiB --seed 7", dir, "b");
  RunOut c = run(kSmall + " --bytes 48KiB --seed 8", dir, "c");
  ASSERT_EQ(a.r.code, 0);
  ASSERT_EQ(b.r.code, 0);
  ASSERT_EQ(c.r.code, 0);
  for (RunOut* r : {&a, &b, &c})
    for (const char* k : {"wall_s", "setup_wall_s", "load_wall_s", "sim_wall_s", "check_wall_s", "rtl_eval_s",
                          "sim_ns_per_wall_s", "peak_rss_mib"})
      r->stats["run"].erase(k);
  EXPECT_EQ(a.stats.dump(), b.stats.dump());
  EXPECT_NE(a.stats["run"]["seed"], c.stats["run"]["seed"]);
}

TEST(AcePlatform, ParamsAndTopologyDescribeTheTorus) {
  test::Result p = test::sh("params " + kPlatform + " -p ace.model=rtl");
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("ace.model"), std::string::npos);
  EXPECT_NE(p.out.find("-p ace.model=rtl"), std::string::npos) << "the override is named as the origin";
  EXPECT_NE(p.out.find("sys.npu63.ace.sram_kib"), std::string::npos);
  test::Result t = test::sh("topology " + kPlatform);
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("64 NPUs: 4 local x 4 vertical x 4 horizontal"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("vertical    128 links, 25.0 GB/s"), std::string::npos) << t.out;
  EXPECT_EQ(test::sh("topology " + kPlatform + " -p sys.local_npuz=2").code, 1);
}

TEST(AcePlatform, TraceHasLinkMessagesAndAceChunkSpans) {
  test::TempDir dir;
  test::Result r = test::sh("run " + kPlatform + " " + kSmall + " --bytes 64KiB --trace -q -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json t = test::load_json(dir / "o/trace.json");
  const nlohmann::json& ev = t.is_object() ? t["traceEvents"] : t;
  size_t link = 0, ace = 0;
  for (const auto& e : ev) {
    if (!e.contains("cat")) continue;
    link += e["cat"] == "link";
    ace += e["cat"] == "ace";
  }
  EXPECT_GT(link, 0u);
  EXPECT_GT(ace, 0u);
}

TEST(AcePlatform, NarrowSramPortSlowsTheAceAndIsReported) {
  test::TempDir dir;
  RunOut wide = run(kSmall + " --bytes 256KiB", dir, "wide");
  RunOut narrow = run(kSmall + " --bytes 256KiB -p 'sys.npu*.ace.sram_bytes_per_cycle=16'", dir, "narrow");
  ASSERT_EQ(wide.r.code, 0) << wide.r.out;
  ASSERT_EQ(narrow.r.code, 0) << narrow.r.out;
  EXPECT_TRUE(narrow.stats["workload"]["verified"].get<bool>());
  EXPECT_GT(narrow.stats["workload"]["simulated_ps"].get<uint64_t>(),
            wide.stats["workload"]["simulated_ps"].get<uint64_t>());
  const auto& a = narrow.stats["sys"]["npu0"]["ace"];
  EXPECT_GT(a["sram_port_busy_ps"].get<uint64_t>(), 0u);
  EXPECT_GT(a["sram_port_utilization"].get<double>(),
            wide.stats["sys"]["npu0"]["ace"]["sram_port_utilization"].get<double>());
}

TEST(AcePlatform, EveryCollectiveAloneVerifiedWithAceAndWithNpuCores) {
  test::TempDir dir;
  // 8 NPUs, group all; network bytes per NPU: (N-1)/N of the buffer B for a
  // reduce-scatter or all-gather, B/2 in each of the 4 phases of the
  // hierarchical all-reduce (an inter-package all-reduce of the B/2 an NPU
  // owns after the local reduce-scatter sends B/4 twice), B/2 per dimension
  // of 2 in an all-to-all; every non-root member receives B once in a broadcast.
  const uint64_t B = 24 * 1024;
  struct Case {
    std::string kind, dtype, extra, phases;
    uint64_t network_bytes;
  };
  const Case cases[] = {
      {"allreduce", "fp32", "", "reduce-scatter local, all-reduce vertical, all-reduce horizontal, all-gather local",
       16 * B},
      {"reducescatter", "bf16", "", "reduce-scatter local, reduce-scatter vertical, reduce-scatter horizontal", 7 * B},
      {"allgather", "int32", "", "all-gather local, all-gather vertical, all-gather horizontal", 7 * B},
      {"alltoall", "fp16", "", "all-to-all local, all-to-all vertical, all-to-all horizontal", 12 * B},
      {"broadcast", "fp32", " --root 5", "chain local, chain vertical, chain horizontal", 7 * B},
  };
  for (const char* model : {"tlm", "none"})
    for (const Case& c : cases) {
      SCOPED_TRACE(c.kind + " with ace.model=" + model);
      RunOut r = run(kSmall + " -p ace.model=" + model + " -p collective.chunk_kib=4 --workload " + c.kind +
                         " --dtype " + c.dtype + " --bytes 24KiB" + c.extra,
                     dir);
      ASSERT_EQ(r.r.code, 0) << r.r.out;
      const auto& w = r.stats["workload"];
      EXPECT_EQ(w["kind"], c.kind);
      EXPECT_EQ(w["dtype"], c.dtype);
      EXPECT_EQ(w["engine"], model);
      EXPECT_EQ(w["bytes"].get<uint64_t>(), B);
      EXPECT_EQ(w["ranks"], 8);
      EXPECT_EQ(w["phases"], c.phases);
      EXPECT_GT(w["chunks"].get<uint64_t>(), 1u);
      EXPECT_TRUE(w["verified"].get<bool>());
      EXPECT_EQ(w["mismatched_elements"], 0);
      EXPECT_GT(w["simulated_ps"].get<uint64_t>(), 0u);
      EXPECT_EQ(w["network_bytes"].get<uint64_t>(), c.network_bytes);
      if (c.kind == "broadcast") {
        EXPECT_EQ(w["root"], 5);
      }
    }
}

namespace {

// Five collectives at once on different sub-groups of the 2x2x2 torus, with
// their groups' communicator counts and network bytes (see above).
const std::string kConcurrent =
    " -p collective.chunk_kib=4 -c allreduce,bytes=64KiB,group=local"
    " -c reducescatter,bytes=32KiB,dtype=bf16,group=vertical+local -c allgather,bytes=16KiB,dtype=int32,group=h"
    " -c alltoall,bytes=32KiB,dtype=fp16 -c broadcast,bytes=20000,group=local+horizontal,root=3,at=2us";

void expect_concurrent_verified(const nlohmann::json& s) {
  const auto& w = s["workload"];
  EXPECT_EQ(w["collectives"], 5);
  EXPECT_TRUE(w["verified"].get<bool>());
  EXPECT_EQ(w["mismatched_elements"], 0);
  struct Want {
    const char *kind, *group, *dtype;
    uint64_t communicators, ranks, start_ps;
  };
  const Want want[] = {{"allreduce", "local", "fp32", 4, 2, 0},
                       {"reducescatter", "vertical+local", "bf16", 2, 4, 0},
                       {"allgather", "h", "int32", 4, 2, 0},
                       {"alltoall", "all", "fp16", 1, 8, 0},
                       {"broadcast", "local+horizontal", "fp32", 2, 4, 2000000}};
  uint64_t last = 0;
  for (size_t i = 0; i < 5; ++i) {
    const auto& c = w["c" + std::to_string(i)];
    SCOPED_TRACE("c" + std::to_string(i));
    EXPECT_EQ(c["kind"], want[i].kind);
    EXPECT_EQ(c["group"], want[i].group);
    EXPECT_EQ(c["dtype"], want[i].dtype);
    EXPECT_EQ(c["communicators"].get<uint64_t>(), want[i].communicators);
    EXPECT_EQ(c["ranks"].get<uint64_t>(), want[i].ranks);
    EXPECT_EQ(c["start_ps"].get<uint64_t>(), want[i].start_ps);
    EXPECT_TRUE(c["verified"].get<bool>());
    EXPECT_EQ(c["mismatched_elements"], 0);
    EXPECT_GT(c["simulated_ps"].get<uint64_t>(), want[i].start_ps);
    last = std::max(last, c["simulated_ps"].get<uint64_t>());
  }
  EXPECT_EQ(w["c4"]["root"], 3);
  EXPECT_EQ(w["simulated_ps"].get<uint64_t>(), last);
  // Every collective on every communicator of its group: allreduce B per NPU
  // on rings of 2, reducescatter 3/4 B, allgather 1/2 B, alltoall 3/2 B, and
  // 3 receivers of the broadcast per communicator.
  EXPECT_EQ(w["network_bytes"].get<uint64_t>(),
            8 * 65536 + 8 * 3 * 32768 / 4 + 8 * 16384 / 2 + 8 * 3 * 32768 / 2 + 2 * 3 * 20000);
}

}  // namespace

TEST(AcePlatform, ConcurrentCollectivesOnSubGroupsVerifiedAndRtlTimesMatch) {
  test::TempDir dir;
  RunOut t = run(kSmall + kConcurrent + " -p ace.model=tlm", dir, "tlm");
  RunOut r = run(kSmall + kConcurrent + " -p ace.model=rtl", dir, "rtl");
  ASSERT_EQ(t.r.code, 0) << t.r.out;
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  expect_concurrent_verified(t.stats);
  expect_concurrent_verified(r.stats);
  EXPECT_EQ(t.stats["workload"]["engine"], "tlm");
  EXPECT_EQ(r.stats["workload"]["engine"], "rtl");
  // The verilated datapath gives the same timing, collective by collective.
  EXPECT_EQ(t.stats["workload"]["simulated_ps"], r.stats["workload"]["simulated_ps"]);
  for (uint32_t i = 0; i < 5; ++i) {
    const std::string c = "c" + std::to_string(i);
    EXPECT_EQ(t.stats["workload"][c]["simulated_ps"], r.stats["workload"][c]["simulated_ps"]) << c;
  }
  for (uint32_t i = 0; i < 8; ++i) {
    const std::string n = "npu" + std::to_string(i);
    EXPECT_EQ(t.stats["sys"][n]["completion_ps"], r.stats["sys"][n]["completion_ps"]) << n;
    EXPECT_EQ(t.stats["sys"][n]["interrupts"], 5) << n << ": one completion interrupt per collective";
    EXPECT_EQ(t.stats["sys"][n]["ace"]["commands"], 5) << n;
    EXPECT_EQ(t.stats["sys"][n]["ace"]["add_beats"], r.stats["sys"][n]["ace"]["add_beats"]) << n;
    EXPECT_GT(r.stats["sys"][n]["ace"]["dp0_0"]["cycles"].get<uint64_t>(), 0u) << n << ": the RTL really ran";
  }
}

TEST(AcePlatform, ConcurrentCollectivesSameSeedGiveIdenticalStatistics) {
  test::TempDir dir;
  RunOut a = run(kSmall + kConcurrent + " --seed 11", dir, "a");
  RunOut b = run(kSmall + kConcurrent + " --seed 11", dir, "b");
  ASSERT_EQ(a.r.code, 0) << a.r.out;
  ASSERT_EQ(b.r.code, 0) << b.r.out;
  expect_concurrent_verified(a.stats);
  EXPECT_EQ(a.stats["run"]["seed"], 11);
  for (RunOut* r : {&a, &b})
    for (const char* k : {"wall_s", "setup_wall_s", "load_wall_s", "sim_wall_s", "check_wall_s", "sim_ns_per_wall_s",
                          "peak_rss_mib", "rtl_eval_s", "version"}) {
      EXPECT_TRUE(r->stats["run"].contains(k) || std::string(k) == "version") << k;
      r->stats["run"].erase(k);
    }
  EXPECT_GT(a.stats["sys"].size(), 8u);
  EXPECT_EQ(a.stats.dump(), b.stats.dump());
}
