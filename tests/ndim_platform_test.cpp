// N-dimensional NPU fabrics (topology ndim) from the command line: every
// algorithm on every dimension type against its closed form on an idle
// network (one chunk, memory and ALUs made fast), congestion between two
// collectives on the same links, data and timing-only runs giving the same
// times, bad platform input, training workloads run and deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "harness.h"

using namespace fabricvp;

namespace {

struct CliRun {
  test::Result r;
  nlohmann::json stats;
};

CliRun run(const test::TempDir& dir, const std::string& platform, const std::string& args,
           const std::string& sub = "out") {
  CliRun out;
  out.r = test::sh("run " + platform + " -q -o " + (dir.path / sub).string() + " " + args);
  if (out.r.code == 0) out.stats = test::load_json((dir.path / sub / "stats.json").string());
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST(NdimPlatform, EveryAlgorithmMatchesItsClosedFormOnAnIdleNetwork) {
  test::TempDir dir;
  const std::string p = dir.file("idle.yaml", test::kIdleNdimRing);
  const double m = 1048576, B = 100, a = 500, n = 4;  // bytes, bytes/ns, ns
  const double mB = m / B;
  struct Case {
    const char* type;
    const char* alg;
    double allreduce_ns;  // reduce-scatter and all-gather take half
  };
  const Case cases[] = {
      // Ring, 2 unidirectional rings: 2 (n - 1) steps of a/2n of the buffer.
      {"Ring", "ring", 2 * (n - 1) * (a + mB / (2 * n))},
      // Ring, direct: the segment for the NPU two hops away shares the + link with two others.
      {"Ring", "direct", 2 * (3 * mB / n + 2 * a)},
      // Ring, halving-doubling: distance 2 (two hops, m/2) then distance 1 (m/4).
      {"Ring", "halvingDoubling", 2 * ((2 * mB / 2 + 2 * a) + (mB / 4 + a))},
      // FullyConnected, direct: every segment on its own link at once.
      {"FullyConnected", "direct", 2 * (a + mB / n)},
      // FullyConnected, double binary tree: two levels up, two down, half the buffer each.
      {"FullyConnected", "doubleBinaryTree", 4 * (mB / 2 + a)},
      // Switch, direct: n - 1 segments leave through one port, arrive through one (store and forward).
      {"Switch", "direct", 2 * (mB + 2 * a)},
      // Switch, halving-doubling: log2 n steps, each through two links.
      {"Switch", "halvingDoubling", 2 * (2 * mB * (1 - 1 / n) + 2 * a * 2)},
      // Switch, ring: 2 (n - 1) steps through two links.
      {"Switch", "ring", 2 * (n - 1) * (2 * mB / n + 2 * a)},
  };
  for (const Case& c : cases)
    for (const char* kind : {"allreduce", "reducescatter", "allgather"}) {
      const bool ar = std::string(kind) == "allreduce";
      if (!ar && std::string(c.alg) == "doubleBinaryTree") continue;
      const std::string impl = std::string(c.alg);
      CliRun r = run(dir, p,
                     std::string("--bytes 1MiB --workload ") + kind + " -p sys.dim0.type=" + c.type +
                         " -p collective.allreduce_implementation=" + impl +
                         " -p collective.reducescatter_implementation=" + impl +
                         " -p collective.allgather_implementation=" + impl);
      ASSERT_EQ(r.r.code, 0) << r.r.out;
      EXPECT_TRUE(r.stats["workload"]["verified"].get<bool>()) << c.type << " " << c.alg << " " << kind;
      const double want = ar ? c.allreduce_ns : c.allreduce_ns / 2;
      const double got = r.stats["workload"]["simulated_ps"].get<double>() / 1000;
      // What is left is memory and ALU time of the reductions: a few ns.
      EXPECT_NEAR(got, want, 16.0) << c.type << " " << c.alg << " " << kind;
      EXPECT_GE(got, want - 0.01) << c.type << " " << c.alg << " " << kind;
    }
}

TEST(NdimPlatform, TwoCollectivesOnTheSameLinksShareThem) {
  test::TempDir dir;
  const std::string p = dir.file("idle.yaml", test::kIdleNdimRing);
  CliRun r = run(dir, p, "-c allreduce,bytes=1MiB -c allreduce,bytes=1MiB");
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  // Each link direction carries both collectives' messages back to back
  // (serialization s = 1 MiB / 8 / 100 GB/s > latency): the first ends after
  // 2 x 6 - 1 serializations, the second after 2 x 6.
  const double s = 1048576.0 / 8 / 100, a = 500;
  const double c0 = r.stats["workload"]["c0"]["simulated_ps"].get<double>() / 1000;
  const double c1 = r.stats["workload"]["c1"]["simulated_ps"].get<double>() / 1000;
  EXPECT_NEAR(c0, 11 * s + a, 16.0);
  EXPECT_NEAR(c1, 12 * s + a, 16.0);
  CliRun alone = run(dir, p, "--bytes 1MiB", "alone");
  EXPECT_NEAR(alone.stats["workload"]["simulated_ps"].get<double>() / 1000, 6 * (s + a), 16.0);
}

// ASTRA-sim's system files name `ring` for all-to-all too: each member's
// blocks travel around the ring, every member keeping its own and passing the
// rest on. On dim0 (a 4-NPU ring) a member's B bytes cost B/4 x (3 + 2 + 1)
// link bytes, against B/4 x (1 + 2 + 1) with direct sends routed the short way.
TEST(NdimPlatform, RingAllToAllPassesBlocksOnAndIsChecked) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  const uint64_t B = 64 * 1024;
  for (const char* impl : {"ring", "direct"}) {
    const std::string args =
        std::string("--workload alltoall --bytes 64KiB --group dim0 -p collective.alltoall_implementation=") + impl;
    CliRun data = run(dir, p, args, std::string("data_") + impl);
    CliRun timing = run(dir, p, args + " --timing-only", std::string("timing_") + impl);
    ASSERT_EQ(data.r.code, 0) << data.r.out;
    ASSERT_EQ(timing.r.code, 0) << timing.r.out;
    EXPECT_TRUE(data.stats["workload"]["verified"].get<bool>()) << impl;
    EXPECT_EQ(data.stats["workload"]["simulated_ps"], timing.stats["workload"]["simulated_ps"]) << impl;
    const uint64_t hops = std::string(impl) == "ring" ? 6 : 4;
    EXPECT_EQ(data.stats["workload"]["network_bytes"].get<uint64_t>(), 64 * B / 4 * hops) << impl;
  }
  // On every dimension (ring, fully connected, switch) at once.
  CliRun all = run(dir, p, "--workload alltoall --bytes 256KiB -p collective.alltoall_implementation=ring", "all");
  ASSERT_EQ(all.r.code, 0) << all.r.out;
  EXPECT_TRUE(all.stats["workload"]["verified"].get<bool>());
}

TEST(NdimPlatform, TimingOnlyGivesTheSameTimesAsData) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  for (const char* w : {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast"}) {
    CliRun data = run(dir, p, std::string("--bytes 256KiB --workload ") + w, "data");
    CliRun timing = run(dir, p, std::string("--bytes 256KiB --timing-only --workload ") + w, "timing");
    ASSERT_EQ(data.r.code, 0) << data.r.out;
    ASSERT_EQ(timing.r.code, 0) << timing.r.out;
    EXPECT_TRUE(data.stats["workload"]["verified"].get<bool>()) << w;
    EXPECT_EQ(data.stats["workload"]["simulated_ps"], timing.stats["workload"]["simulated_ps"]) << w;
    EXPECT_EQ(data.stats["workload"]["network_bytes"], timing.stats["workload"]["network_bytes"]) << w;
  }
}

TEST(NdimPlatform, BadPlatformInputIsRefusedClearly) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  struct Case {
    std::string args, want;
  };
  const Case cases[] = {
      {"-p sys.dim1.type=Torus", "sys.dim1.type"},
      {"-p collective.allreduce_implementation=ring,ring", "names 2 algorithms for 3 dimensions"},
      {"-p collective.allreduce_implementation=hierarchicalRing", "'hierarchicalRing' is not an algorithm"},
      {"-p collective.allreduce_implementation=halvingDoubling -p sys.dim0.npus=3",
       "halvingDoubling on dimension 0 of 3 NPUs"},
      {"-p collective.alltoall_implementation=halvingDoubling", "all-to-all runs ring or direct"},
      {"-p sys.dim0.latency_ns=0.5", "not a whole number of nanoseconds"},
      {"--group dim7", "'dim7' is not a dimension"},
      {"--iterations 2", "only a training workload"},
  };
  for (const Case& c : cases) {
    CliRun r = run(dir, p, "--bytes 64KiB " + c.args);
    EXPECT_EQ(r.r.code, 1) << c.args << "\n" << r.r.out;
    EXPECT_NE(r.r.out.find(c.want), std::string::npos) << c.args << "\n" << r.r.out;
  }
}

// The ACE at the endpoints of an N-dimensional fabric (seed 002's engine is
// not tied to the torus): every collective moves real bytes through its SRAM
// and datapath and is checked; the C++ datapath and timing-only give the
// same times; the ACE is not the NPU cores (its counters move, the times
// differ).
TEST(NdimPlatform, TheAceRunsEveryCollectiveOnNdimFabrics) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  for (const std::string w : {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast"}) {
    CliRun ace = run(dir, p, "--workload " + w + " --bytes 256KiB -p ace.model=tlm");
    ASSERT_EQ(ace.r.code, 0) << w << "\n" << ace.r.out;
    EXPECT_EQ(ace.stats["workload"]["verified"], true) << w;
    EXPECT_EQ(ace.stats["workload"]["engine"], "tlm") << w;
    EXPECT_GT(ace.stats["sys"]["npu0"]["ace"]["load_bytes"].get<uint64_t>(), 0u) << w;
    CliRun timing = run(dir, p, "--workload " + w + " --bytes 256KiB -p ace.model=tlm --timing-only");
    ASSERT_EQ(timing.r.code, 0) << w << "\n" << timing.r.out;
    EXPECT_EQ(ace.stats["workload"]["simulated_ps"], timing.stats["workload"]["simulated_ps"]) << w;
    CliRun cores = run(dir, p, "--workload " + w + " --bytes 256KiB");
    ASSERT_EQ(cores.r.code, 0) << w << "\n" << cores.r.out;
    EXPECT_NE(ace.stats["workload"]["simulated_ps"], cores.stats["workload"]["simulated_ps"]) << w;
  }
}

TEST(NdimPlatform, TrainingWorkloadRunsWithOutputsAndIsDeterministic) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  const std::string w = dir.file("w.txt",
                                 "HYBRID_DATA_MODEL\n3\n"
                                 "conv1 -1 1000 ALLGATHER 65536 800 REDUCESCATTER 65536 900 ALLREDUCE 1048576 10\n"
                                 "conv2 -1 2000 ALLGATHER 65536 1500 REDUCESCATTER 65536 1800 ALLREDUCE 4194304 10\n"
                                 "fc -1 500 ALLGATHER 65536 400 REDUCESCATTER 65536 300 ALLREDUCE 262144 10\n");
  CliRun a = run(dir, p, "--workload " + w + " --iterations 2", "a");
  CliRun b = run(dir, p, "--workload " + w + " --iterations 2", "b");
  ASSERT_EQ(a.r.code, 0) << a.r.out;
  ASSERT_EQ(b.r.code, 0) << b.r.out;
  const auto& s = a.stats["workload"];
  EXPECT_EQ(s["parallelism"], "HYBRID_DATA_MODEL");
  EXPECT_EQ(s["iterations"], 2);
  EXPECT_EQ(s["compute_ps"].get<uint64_t>(), 2u * (3500 + 2700 + 3000) * 1000);
  EXPECT_EQ(s["compute_ps"].get<uint64_t>() + s["exposed_comm_ps"].get<uint64_t>(), s["total_ps"].get<uint64_t>());
  EXPECT_GT(s["exposed_comm_ps"].get<uint64_t>(), 0u);
  EXPECT_EQ(a.stats["workload"], b.stats["workload"]);
  // collectives.csv: per iteration, 3 forward all-gathers and 2 input-gradient
  // reduce-scatters (none for layer 0) on each of the 16 dim0 groups, 3
  // weight-gradient all-reduces on each of the 4 dim1+dim2 groups.
  std::ifstream csv(dir.path / "a" / "collectives.csv");
  std::string line;
  size_t rows = 0;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("iteration,layer,name,pass,kind,bytes", 0), 0u);
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 2u * (16 * (3 + 2) + 4 * 3));
  std::ifstream links(dir.path / "a" / "links.csv");
  rows = 0;
  while (std::getline(links, line)) ++rows;
  EXPECT_EQ(rows, 1u + 2 * 288);
}

TEST(NdimPlatform, AstraNetworkAndSystemFilesConvertAndRun) {
  test::TempDir dir;
  const std::string net = dir.file("net.yml",
                                   "topology: [ Ring, FullyConnected, Switch ]\n"
                                   "npus_count: [ 4, 2, 2 ]\n"
                                   "bandwidth: [ 50, 50, 25 ]  # GB/s (2^30 bytes)\n"
                                   "latency: [ 500, 500, 700 ]  # ns\n");
  const std::string sys = dir.file("sys.json",
                                   "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10,"
                                   " \"active-chunks-per-dimension\": 2, \"preferred-dataset-splits\": 4,"
                                   " \"all-reduce-implementation\": [\"ring\", \"direct\", \"halvingDoubling\"],"
                                   " \"all-to-all-implementation\": [\"ring\"],"
                                   " \"collective-optimization\": \"localBWAware\", \"boost-mode\": 0}");
  const std::string out = (dir.path / "p.yaml").string();
  test::Result c = test::sh("convert astra --network " + net + " --system " + sys + " -o " + out);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("boost-mode: 0 (not modeled by fabricvp, ignored)"), std::string::npos) << c.out;
  CliRun r = run(dir, out, "--bytes 1MiB");
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  EXPECT_TRUE(r.stats["workload"]["verified"].get<bool>());
  EXPECT_EQ(r.stats["workload"]["chunks"], 4);
  EXPECT_EQ(r.stats["workload"]["phases"],
            "reduce-scatter ring dim0, reduce-scatter direct dim1, reduce-scatter halvingDoubling dim2 step 0, "
            "all-gather halvingDoubling dim2 step 0, all-gather direct dim1, all-gather ring dim0");
  EXPECT_GT(r.stats["sys"]["dim0"]["link0_1_0"]["a_to_b"]["bytes"].get<uint64_t>(), 0u);
  // ASTRA-sim's own example system files ask for all-to-all on rings too.
  CliRun a2a = run(dir, out, "--bytes 1MiB --workload alltoall", "a2a");
  ASSERT_EQ(a2a.r.code, 0) << a2a.r.out;
  EXPECT_TRUE(a2a.stats["workload"]["verified"].get<bool>());
  EXPECT_EQ(a2a.stats["workload"]["phases"], "all-to-all ring dim0, all-to-all ring dim1, all-to-all ring dim2");
  // ASTRA-sim's GB/s are 2^30 bytes/s.
  const std::string platform = slurp(out);
  EXPECT_NE(platform.find("GBps: 53.6870912"), std::string::npos) << platform;
  EXPECT_NE(platform.find("scheduling: lifo"), std::string::npos) << platform;
  // 1.0 JSON: links-count per NPU (a Ring's over its two directions).
  const std::string net1 = dir.file("net.json",
                                    "{\"topology-name\": \"Hierarchical\", \"topologies-per-dim\": [\"Ring\", "
                                    "\"Switch\"], \"units-count\": [4, 4], \"links-count\": [4, 1],"
                                    " \"link-bandwidth\": [200, 25], \"link-latency\": [90, 200]}");
  c = test::sh("convert astra --network " + net1 + " -o " + out);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(slurp(out).find("dim0: {type: Ring, npus: 4, links: 2, GBps: 200"), std::string::npos);
  // The 1.0 text system file.
  const std::string sys1 = dir.file("sys.txt",
                                    "scheduling-policy: FIFO\nendpoint-delay: 10\npreferred-dataset-splits: 8\n"
                                    "all-reduce-implementation: ring_ring\ncollective-optimization: baseline\n");
  r = run(dir, out, "--bytes 1MiB --system " + sys1, "txt");
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  EXPECT_EQ(r.stats["workload"]["chunks"], 8);
  EXPECT_NE(slurp((dir.path / "txt" / "config.yaml").string())
                .find("# " + sys1 +
                      ":3: preferred-dataset-splits: "
                      "collective.chunks=8"),
            std::string::npos);
  // A value the parameter it sets refuses: the error names the system file's line and key.
  const std::string big = dir.file("big.txt", "endpoint-delay: 10\npreferred-dataset-splits: 100000000\n");
  r = run(dir, out, "--bytes 1MiB --system " + big, "big");
  EXPECT_EQ(r.r.code, 1);
  EXPECT_NE(r.r.out.find(big + ":2: preferred-dataset-splits: key 'collective.chunks' (parameter collective.chunks): "
                               "value 100000000 out of range"),
            std::string::npos)
      << r.r.out;
  // Errors name the file and key.
  struct Case {
    std::string file, text, want;
  };
  const Case cases[] = {
      {"bad.yml", "topology: [ Ring, Torus ]\nnpus_count: [4, 4]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
       "bad.yml:1: topology 'Torus'"},
      {"bad.yml", "topology: [ Ring ]\nnpus_count: [4, 4]\nbandwidth: [1]\nlatency: [1]\n", "one entry per dimension"},
      {"bad.yml", "topology: [ Ring ]\nnpus_count: [4x]\nbandwidth: [1]\nlatency: [1]\n", "'4x' is not"},
      {"bad.txt", "scheduling-policy: EXPLICIT\n", "bad.txt:1: scheduling-policy 'EXPLICIT'"},
      {"bad.txt", "all-reduce-implementation: oneRing\n", "flattened"},
      {"bad.txt", "flux-capacitor: 1\n", "bad.txt:1: unknown system key 'flux-capacitor'"},
  };
  for (const Case& k : cases) {
    const std::string f = dir.file(k.file, k.text);
    const bool is_net = k.file.find(".yml") != std::string::npos;
    c = test::sh("convert astra --network " + (is_net ? f : net) + (is_net ? "" : " --system " + f) + " -o " + out);
    EXPECT_EQ(c.code, 1) << c.out;
    EXPECT_NE(c.out.find(k.want), std::string::npos) << c.out;
  }
}

TEST(NdimPlatform, ShippedWorkloadsRunAndTheValidationMatchesItsModel) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  for (const char* w : {"dlrm.yaml", "resnet50.yaml"}) {
    CliRun r = run(dir, p, std::string("--workload ") + FABRICVP_SOURCE_DIR + "/sw/workloads/" + w, w);
    ASSERT_EQ(r.r.code, 0) << r.r.out;
    const auto& s = r.stats["workload"];
    EXPECT_EQ(s["compute_ps"].get<uint64_t>() + s["exposed_comm_ps"].get<uint64_t>(), s["total_ps"].get<uint64_t>());
    EXPECT_GT(s["collectives"].get<uint64_t>(), 0u) << w;
  }
  test::Result e = test::sh("experiment astra-validate --quick -o " + (dir.path / "e").string());
  ASSERT_EQ(e.code, 0) << e.out;
  const nlohmann::json j = test::load_json((dir.path / "e" / "astra-validate.json").string());
  EXPECT_LT(j["max_difference_1chunk"].get<double>(), 0.001);
  EXPECT_EQ(j["points"].size(), 6u);
}

TEST(NdimPlatform, TrainingWithDataIsCheckedAndTakesTheSameTimes) {
  test::TempDir dir;
  const std::string w = dir.file("w.txt",
                                 "HYBRID_DATA_MODEL\n3\n"
                                 "conv1 -1 1000 ALLGATHER 65536 800 REDUCESCATTER 65536 900 ALLREDUCE 1048576 10\n"
                                 "conv2 -1 2000 ALLGATHER 65536 1500 REDUCESCATTER 65536 1800 ALLREDUCE 524288 10\n"
                                 "fc -1 500 ALLTOALL 65536 400 REDUCESCATTER 65536 300 ALLREDUCE 262144 10\n");
  const std::string torus = std::string(FABRICVP_PLATFORMS) +
                            "/ace-torus-4x4x4.yaml -p sys.local_npus=2 -p sys.vertical_npus=2 -p sys.horizontal_npus=2";
  for (const std::string& p : {std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml", torus}) {
    CliRun timing = run(dir, p, "--workload " + w + " --iterations 2", "timing");
    CliRun data = run(dir, p, "--workload " + w + " --iterations 2 --data", "data");
    ASSERT_EQ(timing.r.code, 0) << timing.r.out;
    ASSERT_EQ(data.r.code, 0) << data.r.out;
    EXPECT_EQ(data.stats["workload"]["mismatched_elements"], 0) << p;
    EXPECT_GT(data.stats["workload"]["collectives_checked"].get<uint64_t>(), 0u) << p;
    EXPECT_EQ(data.stats["workload"]["collectives_checked"], data.stats["workload"]["collectives"]) << p;
    EXPECT_EQ(data.stats["workload"]["total_ps"], timing.stats["workload"]["total_ps"]) << p;
    EXPECT_EQ(data.stats["workload"]["exposed_comm_ps"], timing.stats["workload"]["exposed_comm_ps"]) << p;
  }
  CliRun both = run(dir, std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml",
                    "--workload " + w + " --data --timing-only", "both");
  EXPECT_EQ(both.r.code, 1);
  EXPECT_NE(both.r.out.find("--timing-only: a training workload moves no payload already"), std::string::npos);
}

TEST(NdimPlatform, ModelParallelGroupInsideADimensionSplitsIt) {
  test::TempDir dir;
  // Megatron-style group of 8 on 4 x 4 x 4: the first dimension and half of the second.
  const std::string w = dir.file("w.txt",
                                 "HYBRID_TRANSFORMER model_parallel_NPU_group: 8\n2\n"
                                 "attn -1 1000 ALLREDUCE 65536 800 ALLREDUCE 65536 900 ALLREDUCE 262144 10\n"
                                 "mlp -1 2000 ALLREDUCE 65536 1500 ALLREDUCE 65536 1800 ALLREDUCE 524288 10\n");
  CliRun r = run(dir, std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml", "--workload " + w + " --data");
  ASSERT_EQ(r.r.code, 0) << r.r.out;
  EXPECT_EQ(r.stats["workload"]["mismatched_elements"], 0);
  std::ifstream csv(dir.path / "out" / "collectives.csv");
  std::string line;
  std::getline(csv, line);
  uint32_t fwd8 = 0, wg8 = 0;
  while (std::getline(csv, line)) {
    if (line.find(",fwd,ALLREDUCE,65536,65536,") != std::string::npos && line.find(",8,") != std::string::npos) ++fwd8;
    if (line.find(",wg,ALLREDUCE,") != std::string::npos && line.find(",8,") != std::string::npos) ++wg8;
  }
  EXPECT_EQ(fwd8, 2u * 8);  // 2 layers x 8 model-parallel groups of 8
  EXPECT_EQ(wg8, 2u * 8);   // 2 layers x 8 data-parallel groups of 8
}

// compute.timing roofline: a pass's flops run on the SMs the collectives
// leave (NPU cores: sms - comm_sms; ideal endpoint: all) at tensor_tflops x
// efficiency, its memory bytes at compute_share of the bandwidth; the longer
// one is the pass's time. A pass without flops or bytes keeps its compute_ns.
TEST(NdimPlatform, RooflineComputeTimesFollowTheResourcesLeftToCompute) {
  test::TempDir dir;
  const std::string w = dir.file("w.yaml",
                                 "workload:\n  parallelism: DATA\n  layers:\n"
                                 "    - name: mm\n"  // 1 GFLOP, 9 MB: compute bound
                                 "      fwd: {compute_ns: 1, flops: 1000000000, mem_bytes: 9000000}\n"
                                 "    - name: ew\n"  // 0.1 GFLOP, 36 MB: memory bound
                                 "      fwd: {compute_ns: 1, flops: 100000000, mem_bytes: 36000000}\n"
                                 "    - name: given\n"
                                 "      fwd: {compute_ns: 5000}\n");
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  const std::string roof =
      " -p sys.npu*.compute.timing=roofline -p sys.npu*.compute.tensor_tflops=100 -p sys.npu*.compute.efficiency=0.5"
      " -p sys.npu*.memory.GBps=900 -p sys.npu*.memory.comm_share=0.5 -p sys.npu*.memory.compute_share=0.5";
  auto layer_fwd = [](const CliRun& r, const char* layer) {
    for (const auto& [k, l] : r.stats["workload"].items())
      if (k.rfind("layer", 0) == 0 && l.is_object() && l["name"] == layer) return l["fwd_compute_ps"].get<uint64_t>();
    ADD_FAILURE() << "no layer " << layer;
    return uint64_t(0);
  };
  // NPU cores: 72 of 80 SMs -> 1e9 / (50e12 x 72 / 80) s = 22222.3 ns; 36 MB at 450 GB/s = 80 us.
  CliRun cores = run(dir, p, "--workload " + w + roof, "cores");
  ASSERT_EQ(cores.r.code, 0) << cores.r.out;
  EXPECT_EQ(layer_fwd(cores, "mm"), 22222223u);
  EXPECT_EQ(layer_fwd(cores, "ew"), 80000000u);
  EXPECT_EQ(layer_fwd(cores, "given"), 5000000u);
  EXPECT_EQ(cores.stats["sys"]["npu0"]["memory"]["compute_bytes"].get<uint64_t>(), 45000000u);
  // Ideal endpoint: every SM computes.
  CliRun ideal = run(dir, p, "--workload " + w + roof + " -p ace.model=ideal", "ideal");
  ASSERT_EQ(ideal.r.code, 0) << ideal.r.out;
  EXPECT_EQ(layer_fwd(ideal, "mm"), 20000000u);
  EXPECT_EQ(layer_fwd(ideal, "ew"), 80000000u);
  // timing: workload (the default) keeps the workload's times.
  CliRun given = run(dir, p, "--workload " + w, "given");
  ASSERT_EQ(given.r.code, 0) << given.r.out;
  EXPECT_EQ(layer_fwd(given, "mm"), 1000u);
  // Shares that add up to more than the memory are refused.
  CliRun bad = run(dir, p, "--workload " + w + roof + " -p sys.npu*.memory.compute_share=0.8", "bad");
  EXPECT_EQ(bad.r.code, 1);
  EXPECT_NE(bad.r.out.find("compute_share: 0.8 set aside for compute and comm_share 0.5"), std::string::npos)
      << bad.r.out;
}

// Seed 002's Ideal endpoint: collectives checked, no memory traffic, faster
// than the NPU cores through memory.
TEST(NdimPlatform, IdealEndpointMovesNoMemoryAndIsChecked) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  CliRun ideal = run(dir, p, "--bytes 1MiB -p ace.model=ideal", "ideal");
  CliRun cores = run(dir, p, "--bytes 1MiB", "cores");
  ASSERT_EQ(ideal.r.code, 0) << ideal.r.out;
  ASSERT_EQ(cores.r.code, 0) << cores.r.out;
  EXPECT_TRUE(ideal.stats["workload"]["verified"].get<bool>());
  EXPECT_EQ(ideal.stats["sys"]["npu0"]["memory"]["comm_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(cores.stats["sys"]["npu0"]["memory"]["comm_bytes"].get<uint64_t>(), 0u);
  EXPECT_LT(ideal.stats["workload"]["simulated_ps"].get<uint64_t>(),
            cores.stats["workload"]["simulated_ps"].get<uint64_t>());
  EXPECT_EQ(ideal.stats["workload"]["engine"], "ideal");
}

TEST(NdimPlatform, AceTrainingExperimentQuick) {
  test::TempDir dir;
  test::Result e = test::sh("experiment ace-training --quick -o " + (dir.path / "e").string());
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("ACE speedup"), std::string::npos) << e.out;
  const nlohmann::json j = test::load_json((dir.path / "e" / "ace-training.json").string());
  ASSERT_EQ(j["points"].size(), 4u);
  const auto& s = j["speedups"]["dlrm"];
  EXPECT_GT(s["ace_over_best_baseline"].get<double>(), 1.0);
  EXPECT_LE(s["ace_of_ideal"].get<double>(), 1.0);
}
