// N-dimensional NPU fabrics (topology ndim) from the command line: every
// algorithm on every dimension type against its closed form on an idle
// network (one chunk, memory and ALUs made fast), congestion between two
// collectives on the same links, data and timing-only runs giving the same
// times, bad platform input, training workloads run and deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "harness.h"

using namespace fabricvp;

namespace {

// One dimension of 4 NPUs, 100 GB/s links, 500 ns latency; NPU memory and ALUs
// fast enough that the network alone sets the time.
const char* kIdle =
    "sys:\n"
    "  topology: ndim\n"
    "  dims: 1\n"
    "  dim0: {type: Ring, npus: 4, links: 1, GBps: 100, latency_ns: 500}\n"
    "  npu*:\n"
    "    memory: {GBps: 1000000}\n"
    "    compute: {vector_tflops: 1000000}\n"
    "ace: {model: none}\n"
    "collective: {chunks: 1, align_elems: 1}\n";

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

}  // namespace

TEST(NdimPlatform, EveryAlgorithmMatchesItsClosedFormOnAnIdleNetwork) {
  test::TempDir dir;
  const std::string p = dir.file("idle.yaml", kIdle);
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
  const std::string p = dir.file("idle.yaml", kIdle);
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
      {"-p collective.alltoall_implementation=ring", "all-to-all runs direct"},
      {"-p sys.dim0.latency_ns=0.5", "not a whole number of nanoseconds"},
      {"-p ace.model=tlm", "the ACE is built for seed 001's torus"},
      {"--group dim7", "'dim7' is not a dimension"},
      {"--iterations 2", "only a training workload"},
  };
  for (const Case& c : cases) {
    CliRun r = run(dir, p, "--bytes 64KiB " + c.args);
    EXPECT_EQ(r.r.code, 1) << c.args << "\n" << r.r.out;
    EXPECT_NE(r.r.out.find(c.want), std::string::npos) << c.args << "\n" << r.r.out;
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
