// The command line as users run it: exit codes, error messages that name file,
// line and key, stats.json contents, determinism, traces.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness.h"

namespace fs = std::filesystem;
using namespace fabricvp;

namespace {

using test::Result;
using test::sh;
using test::TempDir;

const std::string kNode = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";

nlohmann::json load(const std::string& path) { return test::load_json(path); }

/// The statistics that differ between identical runs: host time and memory.
void drop_host_fields(nlohmann::json& j) {
  for (const char* k :
       {"wall_s", "setup_wall_s", "load_wall_s", "sim_wall_s", "check_wall_s", "sim_ns_per_wall_s", "peak_rss_mib"})
    j["run"].erase(k);
}

}  // namespace

TEST(Cli, StatsJsonHasTheManifestAndEveryModule) {
  TempDir t;
  Result r = sh("run " + kNode + " --workload allreduce --bytes 100KiB --dtype bf16 --seed 7 -q -o " + (t / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = load(t / "o/stats.json");
  for (const char* k : {"version", "config_hash", "seed", "wall_s", "sim_time_ps", "peak_rss_mib", "status"})
    EXPECT_TRUE(j["run"].contains(k)) << k;
  for (const char* k :
       {"kind", "bytes", "dtype", "verified", "predicted_ps", "simulated_ps", "algbw_GBps", "busbw_GBps"})
    EXPECT_TRUE(j["workload"].contains(k)) << k;
  EXPECT_EQ(j["run"]["seed"], 7);
  EXPECT_EQ(j["workload"]["bytes"], 102400);
  EXPECT_EQ(j["workload"]["dtype"], "bf16");
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_EQ(j["workload"]["predicted_ps"], j["workload"]["simulated_ps"]);
  double algbw = 102400.0 / (j["workload"]["simulated_ps"].get<double>() * 1e-12) / 1e9;
  EXPECT_NEAR(j["workload"]["algbw_GBps"].get<double>(), algbw, 1e-9);
  EXPECT_NEAR(j["workload"]["busbw_GBps"].get<double>(), algbw * 14 / 8, 1e-9);
  // every module's statistics, with kind and a schema entry
  const auto& tsp3 = j["sys"]["node0"]["tsp3"];
  EXPECT_EQ(tsp3["kind"], "tsp");
  EXPECT_GT(tsp3["vectors_sent"].get<uint64_t>(), 0u);
  EXPECT_EQ(tsp3["c2c2"]["kind"], "tsp.c2c");
  EXPECT_EQ(j["sys"]["node0"]["link2_5"]["kind"], "c2c.link");
  EXPECT_GT(j["sys"]["node0"]["link2_5"]["a_to_b"]["packets"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["schema"]["tsp.vectors_sent"]["unit"], "vectors");
  EXPECT_EQ(j["schema"]["c2c.link.a_to_b.busy_ps"]["unit"], "ps");
  EXPECT_EQ(j["schema"]["run.wall_s"]["unit"], "s");
  // the effective configuration and the programs are written next to it
  EXPECT_TRUE(fs::exists(t / "o/config.yaml"));
  EXPECT_TRUE(fs::exists(t / "o/programs/sys.node0.tsp7.s"));
}

TEST(Cli, SameSeedGivesIdenticalStatisticsApartFromWallClock) {
  TempDir t;
  std::string args = " --workload reducescatter --bytes 256KiB --dtype fp16 --seed 42 -q -o ";
  ASSERT_EQ(sh("run " + kNode + args + (t / "a")).code, 0);
  ASSERT_EQ(sh("run " + kNode + args + (t / "b")).code, 0);
  nlohmann::json a = load(t / "a/stats.json"), b = load(t / "b/stats.json");
  for (auto* j : {&a, &b}) drop_host_fields(*j);
  EXPECT_EQ(a, b);
  auto text = [](const std::string& p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(text(t / "a/config.yaml"), text(t / "b/config.yaml"));
  EXPECT_EQ(text(t / "a/programs/sys.node0.tsp4.s"), text(t / "b/programs/sys.node0.tsp4.s"));
}

TEST(Cli, UnknownKeyInPlatformFileNamesFileLineAndKey) {
  TempDir t;
  std::string plat = t.file("bad.yaml", "sys:\n  node0:\n    link*:\n      lane_gpbs: 30\n");
  Result r = sh("run " + plat + " -q -o " + (t / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bad.yaml:4:7: unknown key 'sys.node0.link*.lane_gpbs': it matches no parameter (did you "
                       "mean 'sys.node0.link*.lane_gbps'?)"),
            std::string::npos)
      << r.out;
}

TEST(Cli, WrongTypeAndMissingFileAndBadOverride) {
  TempDir t;
  std::string plat = t.file("bad.yaml", "sys:\n  tsps_per_node: eight\n");
  Result r = sh("run " + plat + " -q -o " + (t / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bad.yaml:2:3: key 'sys.tsps_per_node'"), std::string::npos) << r.out;
  r = sh("run " + (t / "missing.yaml") + " -q");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("missing.yaml"), std::string::npos) << r.out;
  r = sh("run " + kNode + " -p sys.node0.tsp*.clock=1000 -q -o " + (t / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("-p sys.node0.tsp*.clock=1000: unknown key"), std::string::npos) << r.out;
  r = sh("run " + kNode + " -p sys.tsps_per_node=9 -q -o " + (t / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("out of range [2, 8]"), std::string::npos) << r.out;
  r = sh("run " + kNode + " --bytes 10 --dtype fp32 -q -o " + (t / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("not a whole number of fp32 elements"), std::string::npos) << r.out;
}

TEST(Cli, OverridingAFileKeyOnTheCommandLineIsNotAnUnknownKey) {
  TempDir t;
  Result r = sh("run " + kNode + " -p sys.tsps_per_node=4 --bytes 4KiB -o " + (t / "o"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(4 TSPs, 6 links)"), std::string::npos) << r.out;
  std::ifstream f(t / "o/config.yaml");
  std::string cfg((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(cfg.find("sys.tsps_per_node: 4  # TSPs; "), std::string::npos);
  EXPECT_NE(cfg.find("[-p sys.tsps_per_node=4]"), std::string::npos);
}

TEST(Cli, EffectiveConfigurationRunsAsAPlatformFile) {
  TempDir t;
  ASSERT_EQ(sh("run " + kNode + " -p sys.node0.link*.lanes=2 --bytes 64KiB -q -o " + (t / "a")).code, 0);
  Result r = sh("run " + (t / "a/config.yaml") + " --bytes 64KiB -q -o " + (t / "b"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json a = load(t / "a/stats.json"), b = load(t / "b/stats.json");
  EXPECT_EQ(a["run"]["config_hash"], b["run"]["config_hash"]);
  EXPECT_EQ(a["workload"]["simulated_ps"], b["workload"]["simulated_ps"]);
}

TEST(Cli, WrongProgramFailsWithAHardwareError) {
  TempDir t;
  fs::create_directories(t.path / "progs");
  t.file("progs/sys.node0.tsp0.s", ".queue 0\nSEND p0, @0, 4\n");
  t.file("progs/sys.node0.tsp1.s", ".tsp sys.node0.tsp1\n.queue 11\nWAIT 300\nRECV p0, @0, 4\n");
  Result r = sh("run " + kNode + " --programs " + (t / "progs") + " -o " + (t / "o"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("sys.node0.tsp1.c2c0] hardware error at cycle 300"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RX underflow"), std::string::npos) << r.out;
  nlohmann::json j = load(t / "o/stats.json");
  EXPECT_EQ(j["run"]["status"], "hardware_error");
  EXPECT_EQ(j["run"]["hardware_errors"], 1);
}

TEST(Cli, HandWrittenProgramsRunToCompletion) {
  TempDir t;
  fs::create_directories(t.path / "progs");
  t.file("progs/sys.node0.tsp0.s", ".queue 0\nSEND p0, @0, 4\n");
  t.file("progs/sys.node0.tsp1.s", ".queue 11\nWAIT 445\nRECV p0, @0, 4\n");
  Result r = sh("run " + kNode + " --programs " + (t / "progs") + " -o " + (t / "o"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("last SRAM write at 800.943 ns"), std::string::npos) << r.out;  // T(650) + 3 x 26.24 ns
}

TEST(Cli, ProgramForAnotherChipIsRejected) {
  TempDir t;
  fs::create_directories(t.path / "progs");
  t.file("progs/sys.node0.tsp0.s", ".tsp sys.node0.tsp5\n.queue 0\nNOP\n");
  Result r = sh("run " + kNode + " --programs " + (t / "progs") + " -q -o " + (t / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("program is for 'sys.node0.tsp5' but was loaded on 'sys.node0.tsp0'"), std::string::npos)
      << r.out;
}

TEST(Cli, TraceIsValidChromeTraceJson) {
  TempDir t;
  ASSERT_EQ(sh("run " + kNode + " --bytes 32KiB --trace -q -o " + (t / "o")).code, 0);
  nlohmann::json tr = load(t / "o/trace.json");
  size_t spans = 0, bursts = 0;
  for (const auto& e : tr["traceEvents"]) {
    if (e["ph"] == "X") ++spans;
    if (e["ph"] == "X" && e["name"] == "burst") ++bursts;
  }
  EXPECT_GT(spans, 100u);
  EXPECT_EQ(bursts, 2u * 56);  // one burst per link direction in each phase
}

TEST(Cli, ParamsListsEveryParameterWithItsOrigin) {
  Result r = sh("params " + kNode + " -p sys.node0.tsp3.add_latency=20");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("sys.node0.tsp3.add_latency"), std::string::npos);
  EXPECT_NE(r.out.find("-p sys.node0.tsp3.add_latency=20"), std::string::npos);
  EXPECT_NE(r.out.find("groq-node.yaml:14"), std::string::npos) << r.out;  // clock_mhz from the file
  EXPECT_NE(r.out.find("sched.chunk_vectors"), std::string::npos);
}

TEST(Cli, AsmReportsFileAndLine) {
  TempDir t;
  Result r = sh("asm " + t.file("p.s", ".queue 0\nNOP\nSEND p1, [0,0,0,0]\n"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("p.s:3: SEND takes 3 operand(s), got 2"), std::string::npos) << r.out;
  r = sh("asm " + t.file("q.s", ".queue 2\nSEND p1, [0,0,0,0], 8\nADD.fp16 @0, @8, @16, 8\n"));
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("2 instructions in 1 queue(s)"), std::string::npos) << r.out;
}

TEST(Checker, CountsEveryDifferingElement) {
  // The result check must be able to fail: plant differences and count them.
  test::Bench b(test::node_yaml(2));
  std::vector<uint8_t> expected = test::pattern(9, 3);
  b.write_vec(0, 10, expected);
  std::vector<uint8_t> wrong = expected;
  wrong[4] ^= 1;               // element 1
  wrong[2 * 320 + 7] ^= 0x80;  // element 161
  b.write_vec(1, 10, wrong);
  std::vector<std::vector<sched::Region>> outputs = {{sched::Region{10, 3 * 320}}, {sched::Region{10, 3 * 320}}};
  auto same = [&](uint32_t, uint64_t pos, uint8_t* out, uint64_t len) { std::memcpy(out, expected.data() + pos, len); };
  groq::CheckResult r = groq::check_outputs(b.sys->host, {0, 1}, outputs, same, core::Dtype::fp32);
  EXPECT_EQ(r.mismatched, 2u);
  EXPECT_EQ(r.ranks_ok, 1u);
  EXPECT_EQ(r.ranks_checked, 2u);
  ASSERT_EQ(r.first.size(), 2u);
  EXPECT_EQ(r.first[0].rank, 1u);
  EXPECT_EQ(r.first[0].byte, 4u);
  EXPECT_EQ(r.first[1].byte, 644u);
  // Ranks map to chips: rank 0 on chip 1 sees the planted differences.
  EXPECT_EQ(groq::check_outputs(b.sys->host, {1, 0}, outputs, same, core::Dtype::fp32).first[0].rank, 0u);
}

TEST(Experiments, NonminimalFindsTheCrossoverBetween8And16KiB) {
  TempDir t;
  Result r = sh("experiment nonminimal --quick -o " + (t / "e"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = load(t / "e/nonminimal.json");
  EXPECT_EQ(j["crossover_bytes"], 16384);
  // Below it every configuration takes the direct cable only; above it they use all their routes.
  EXPECT_EQ(j["routes_used"]["nonminimal_6"][0], 1);
  EXPECT_EQ(j["routes_used"]["nonminimal_6"].back(), 7);
  EXPECT_LT(j["latency_us"]["nonminimal_6"].back().get<double>() * 4, j["latency_us"]["minimal"].back().get<double>());
}

TEST(Experiments, HopLatencyIsThreeHopsOf722Nanoseconds) {
  TempDir t;
  Result r = sh("experiment hop-latency -o " + (t / "e"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = load(t / "e/hop-latency.json");
  EXPECT_EQ(j["hops"], 3);
  EXPECT_NEAR(j["per_hop_ns"].get<double>(), 722.0, 5.0);
  EXPECT_NEAR(j["total_ns"].get<double>(), 2166.0, 15.0);
  EXPECT_NEAR(j["one_hop_in_node_ns"].get<double>(), 722.2, 0.1);
}

TEST(Experiments, BandwidthProfileHasPackagingCliffs) {
  TempDir t;
  Result r = sh("experiment bandwidth-profile --quick -o " + (t / "e"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = load(t / "e/bandwidth-profile.json");
  std::vector<double> bw = j["bisection_GBps_per_tsp"];
  std::vector<uint64_t> tsps = j["tsps"];
  ASSERT_GE(bw.size(), 8u);
  EXPECT_EQ(tsps[0], 8u);
  EXPECT_GT(bw[0], 45.0);  // inside a node
  size_t at264 = std::find(tsps.begin(), tsps.end(), 264u) - tsps.begin();
  ASSERT_LT(at264 + 1, tsps.size());
  EXPECT_GT(bw[at264], 20.0);  // one global cable per node pair
  EXPECT_LT(bw.back(), 15.0);  // racks: one cable per rack pair
  EXPECT_GT(bw[at264], bw[at264 + 1] * 1.4);
}

TEST(Experiments, AllreduceSweepIsVerifiedAndRisesWithSize) {
  TempDir t;
  Result r = sh("experiment allreduce-sweep --quick -o " + (t / "e"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = load(t / "e/allreduce-sweep.json");
  std::vector<double> bus = j["busbw_GBps"];
  for (size_t i = 1; i < bus.size(); ++i) EXPECT_GT(bus[i], bus[i - 1]);
  EXPECT_GT(bus.back(), 80.0);  // 1 MiB
}

const std::string kTwoNodeDragonfly =
    std::string(FABRICVP_PLATFORMS) + "/groq-dragonfly-264.yaml -p sys.nodes_per_rack=2 -p sys.spares=none";

TEST(Cli, DragonflyRunsAreDeterministic) {
  TempDir t;
  std::string args = " --workload allreduce --bytes 100000 --dtype bf16 --seed 7 -q -o ";
  ASSERT_EQ(sh("run " + kTwoNodeDragonfly + args + (t / "a")).code, 0);
  ASSERT_EQ(sh("run " + kTwoNodeDragonfly + args + (t / "b")).code, 0);
  nlohmann::json a = load(t / "a/stats.json"), b = load(t / "b/stats.json");
  for (auto* j : {&a, &b}) drop_host_fields(*j);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(a["workload"]["verified"].get<bool>());
}

TEST(Cli, HandBrokenDragonflyScheduleFailsInTheCheckerAndInTheModel) {
  TempDir t;
  ASSERT_EQ(sh("run " + kTwoNodeDragonfly + " --bytes 64KiB -q -o " + (t / "good")).code, 0);
  // Take one RECV on a chip of node 1 a cycle too early.
  const std::string prog = t / "good/programs/sys.node1.tsp3.s";
  std::ifstream in(prog);
  std::string text(std::istreambuf_iterator<char>(in), {}), out;
  std::istringstream lines(text);
  std::string line, prev;
  bool broken = false;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  for (size_t i = 0; i + 1 < all.size(); ++i)
    if (!broken && all[i].find("WAIT ") != std::string::npos && all[i + 1].find("RECV ") != std::string::npos) {
      const size_t at = all[i].find("WAIT ") + 5;
      all[i] = all[i].substr(0, at) + std::to_string(std::stoull(all[i].substr(at)) - 1);
      broken = true;
    }
  ASSERT_TRUE(broken);
  for (const auto& l : all) out += l + "\n";
  std::ofstream(prog) << out;
  Result r = sh("run " + kTwoNodeDragonfly + " --programs " + (t / "good/programs") + " -o " + (t / "bad"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("schedule check: sys.node1.tsp3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RX underflow"), std::string::npos) << r.out;
  EXPECT_EQ(load(t / "bad/stats.json")["run"]["status"], "hardware_error");
}

// With a progress line (a terminal, or FABRICVP_PROGRESS=1) the simulation
// runs in slices of simulated time; the same events run in the same order, so
// every statistic but the wall times is the same as in one sc_start().
// The progress line names the phase, its wall time and, while simulating a
// compiled collective (whose end the compiler predicts), the share done and an ETA.
TEST(Cli, ProgressLineShowsPhaseRateAndEta) {
  test::TempDir t;
  setenv("FABRICVP_PROGRESS", "1", 1);
  Result r = test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --bytes 128MiB -q -o " + (t / "a"));
  unsetenv("FABRICVP_PROGRESS");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\rsimulating "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" simulated ns per wall second, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" % done, ETA "), std::string::npos) << r.out;
  Result q = test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --bytes 128MiB -q -o " + (t / "b"));
  EXPECT_EQ(q.out.find('\r'), std::string::npos) << "not a terminal: no progress line\n" << q.out;
}

TEST(Cli, ProgressSlicesGiveTheSameStatistics) {
  test::TempDir t;
  const std::string args = std::string(FABRICVP_PLATFORMS) + "/ace-torus-4x4x4.yaml --bytes 1MiB -q -o ";
  setenv("FABRICVP_PROGRESS", "1", 1);
  Result a = test::sh("run " + args + (t / "a"));
  setenv("FABRICVP_PROGRESS", "0", 1);
  Result b = test::sh("run " + args + (t / "b"));
  unsetenv("FABRICVP_PROGRESS");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  nlohmann::json ja = test::load_json(t / "a/stats.json"), jb = test::load_json(t / "b/stats.json");
  for (nlohmann::json* j : {&ja, &jb})
    for (const char* k : {"wall_s", "setup_wall_s", "load_wall_s", "sim_wall_s", "check_wall_s", "peak_rss_mib",
                          "sim_ns_per_wall_s", "rtl_eval_s"})
      (*j)["run"].erase(k);
  EXPECT_EQ(ja, jb);
  EXPECT_GT(ja["workload"]["simulated_ps"].get<uint64_t>(), 0u);
}
