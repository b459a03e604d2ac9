// Distributed matrix multiplication end to end (docs/compute.md): compiled,
// simulated, every element of C bit-exact against the host reference, and the
// completion exactly as the compiler predicted, on 1, 2, 8 and 16 TSPs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "harness.h"
#include "models/core/config.h"
#include "models/core/context.h"
#include "runtime/driver.h"
#include "sw/sched/matmul.h"

using namespace fabricvp;

namespace {

struct Case {
  std::string platform, shape, split, dtype;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.platform << " " << c.shape << " " << (c.split.empty() ? "1 TSP" : c.split) << " "
      << (c.dtype.empty() ? "fp16" : c.dtype);
}

nlohmann::json run_matmul(const Case& c, int expect_rc = 0) {
  systems::RunOptions o;
  o.platform = std::string(FABRICVP_PLATFORMS) + "/" + c.platform;
  o.workload = "matmul";
  o.kind_options["shape"] = c.shape;
  if (!c.split.empty()) o.kind_options["split"] = c.split;
  if (!c.dtype.empty()) {
    core::parse_dtype(c.dtype, o.dtype);
    o.given.insert("dtype");
  }
  return test::run_stats(o, expect_rc);
}

}  // namespace

class Matmul : public ::testing::TestWithParam<Case> {};

TEST_P(Matmul, VerifiedAndCompletesAsPredicted) {
  const Case c = GetParam();
  const nlohmann::json j = run_matmul(c);
  const auto& w = j["workload"];
  EXPECT_EQ(w["kind"], "matmul");
  EXPECT_TRUE(w["verified"].get<bool>());
  EXPECT_EQ(w["mismatched_elements"].get<uint64_t>(), 0u);
  sched::MatmulRequest r;
  sched::parse_shape(c.shape, r);
  EXPECT_EQ(w["checked_elements"].get<uint64_t>(), r.M * r.L);
  EXPECT_GT(w["simulated_ps"].get<uint64_t>(), 0u);
  EXPECT_EQ(w["simulated_ps"].get<uint64_t>(), w["predicted_ps"].get<uint64_t>());
  EXPECT_EQ(j["run"]["hardware_errors"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["run"]["schedule_violations"].get<uint64_t>(), 0u);
  if (!c.split.empty()) sched::parse_split(c.split, r);
  EXPECT_EQ(w["tsps"].get<uint64_t>(), uint64_t(r.col) * r.row);
  EXPECT_EQ(w["reduced_vectors"].get<uint64_t>() > 0, r.row > 1);
}

INSTANTIATE_TEST_SUITE_P(
    Chips, Matmul,
    ::testing::Values(Case{"groq-node.yaml", "64x320x640", "", ""},                             // 1 TSP, whole tiles
                      Case{"groq-node.yaml", "37x333x401", "", "int8"},                         // 1 TSP, ragged edges
                      Case{"groq-node.yaml", "50x500x1000", "col=2", "fp16"},                   // 2 TSPs, concatenated
                      Case{"groq-node.yaml", "48x1300x700", "row=2", "int8"},                   // 2 TSPs, reduced
                      Case{"groq-node.yaml", "40x1500x700", "col=2,row=4", "fp16"},             // 8 TSPs
                      Case{"groq-node.yaml", "24x1400x320", "row=8", "fp16"},                   // 8-way reduce-scatter
                      Case{"groq-dragonfly-264.yaml", "30x2700x650", "col=1,row=16", "fp16"},   // 2 nodes
                      Case{"groq-dragonfly-264.yaml", "50x2700x650", "col=1,row=13", "fp16"},   // 8 + 5: 40 pieces
                      Case{"groq-dragonfly-264.yaml", "20x2700x1000", "col=2,row=8", "int8"}),  // 16 TSPs
    [](const ::testing::TestParamInfo<Case>& i) {
      std::string n = i.param.platform.substr(0, i.param.platform.find('.')) + "_" + i.param.shape + "_" +
                      (i.param.split.empty() ? "single" : i.param.split) + "_" +
                      (i.param.dtype.empty() ? "fp16" : i.param.dtype);
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(MatmulInput, BadShapesSplitsAndTypesAreRefused) {
  auto refused = [](auto f, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "accepted";
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  sched::MatmulRequest r;
  refused([&] { sched::parse_shape("800x32576", r); }, "expected MxNxL");
  refused([&] { sched::parse_shape("800x0x10", r); }, "'0' is not a positive integer");
  refused([&] { sched::parse_shape("800xabcx10", r); }, "'abc' is not a positive integer");
  refused([&] { sched::parse_shape("800x10x10x", r); }, "expected MxNxL");
  refused([&] { sched::parse_split("col=8,rows=13", r); }, "got 'rows=13'");
  refused([&] { sched::parse_split("col=-1", r); }, "'-1' is not a positive integer");
  refused([&] { sched::parse_split("row=1e3", r); }, "'1e3' is not a positive integer");
  refused([&] { sched::parse_split("col=2,col=2", r); }, "'col=2,col=2': col given twice");
}

TEST(MatmulInput, RunsTheMachineCannotHoldAreRefusedWithTheReason) {
  auto error_of = [](const std::string& args) {
    const std::string out = "/tmp/fabricvp-mm-" + std::to_string(::getpid());
    const test::Result r = test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --workload matmul " +
                                    args + " -q --out " + out);
    std::filesystem::remove_all(out);
    EXPECT_EQ(r.code, 1) << r.out;  // an input error
    return r.out;
  };
  EXPECT_NE(error_of("--shape 800x32576x8192").find("needs 1943680 SRAM vectors (A 163200, B 1697280, C 83200"),
            std::string::npos);
  EXPECT_NE(error_of("--shape 8x320x320 --split col=3,row=3").find("needs 9 TSPs; the platform's job has 8"),
            std::string::npos);
  EXPECT_NE(error_of("--shape 8x320x320 --dtype fp32").find("multiplies fp16 (fp32 results) or int8"),
            std::string::npos);
  EXPECT_NE(error_of("--shape 8x320x320 --split col=2").find("B has only 1 column tile of 320"), std::string::npos);
  EXPECT_NE(error_of("--split col=2").find("needs --shape MxNxL"), std::string::npos);
  EXPECT_NE(error_of("--shape 8x320x320 --bytes 1MiB").find("--bytes: does not apply to a matrix multiplication"),
            std::string::npos);
  EXPECT_NE(error_of("--shape 1x20000000x320 -p sched.matmul_inputs=host").find("more than imem_instructions"),
            std::string::npos);
  EXPECT_NE(error_of("--shape 8x320x320 -p sched.staging_chunks=32")
                .find("this matmul run does not read sched.staging_chunks (it applies to collective)"),
            std::string::npos);
  const test::Result n = test::sh("run " + std::string(FABRICVP_PLATFORMS) +
                                  "/npu-3d-64.yaml --collective allreduce,dtype=int8 -q --out /tmp/fabricvp-mm-y");
  EXPECT_EQ(n.code, 1);
  EXPECT_NE(n.out.find("dtype 'int8' (fp32, bf16, fp16, int32)"), std::string::npos) << n.out;
  const test::Result c = test::sh("run " + std::string(FABRICVP_PLATFORMS) +
                                  "/groq-node.yaml --workload allreduce --dtype int8 -q --out /tmp/fabricvp-mm-x");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.out.find("--dtype int8: collectives reduce fp32, bf16, fp16 or int32"), std::string::npos) << c.out;
}

TEST(MatmulPlacement, RowSplitsThatFitANodeStayInOne) {
  // 8 groups of 3 row splits on the Dragonfly: two groups per node (6 of its
  // 8 TSPs), so every partial product crosses one direct cable, never a
  // global one; 9 row splits take two whole nodes per group.
  nlohmann::json j = run_matmul({"groq-dragonfly-264.yaml", "24x1300x2600", "col=8,row=3", "fp16"});
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_EQ(j["workload"]["max_hops"].get<uint64_t>(), 1u);
  j = run_matmul({"groq-dragonfly-264.yaml", "24x1500x700", "col=2,row=9", "fp16"});
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_GT(j["workload"]["max_hops"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["workload"]["simulated_ps"], j["workload"]["predicted_ps"]);
}

TEST(MatmulReduction, ExchangeBetweenNodesSpreadsOverOtherNodes) {
  // Two groups of 10 row splits: 8 + 2 TSPs in two nodes each, joined by one
  // global cable. Each partial product crossing between them goes in chunks
  // over detours through the other nodes (and the minor node's idle chips
  // relay its reduce-scatter): far faster than with one route per transfer
  // (sched.paths=1), and still checked and predicted exactly.
  Case c{"groq-dragonfly-264.yaml", "400x3200x1280", "col=2,row=10", "fp16"};
  const nlohmann::json spread = run_matmul(c);
  EXPECT_TRUE(spread["workload"]["verified"].get<bool>());
  EXPECT_EQ(spread["workload"]["simulated_ps"], spread["workload"]["predicted_ps"]);
  EXPECT_GE(spread["workload"]["max_hops"].get<uint64_t>(), 3u);
  systems::RunOptions o;
  o.platform = std::string(FABRICVP_PLATFORMS) + "/" + c.platform;
  o.workload = "matmul";
  o.kind_options["shape"] = c.shape;
  o.kind_options["split"] = c.split;
  o.overrides.push_back("sched.paths=1");
  const nlohmann::json minimal = test::run_stats(o);
  EXPECT_TRUE(minimal["workload"]["verified"].get<bool>());
  EXPECT_LT(spread["workload"]["simulated_ps"].get<double>(), 0.7 * minimal["workload"]["simulated_ps"].get<double>());
}

namespace {
nlohmann::json run_blocked(const std::string& platform, const std::string& shape, const std::string& split,
                           std::vector<std::string> overrides, std::vector<std::string> flags = {}, int rc = 0) {
  systems::RunOptions o;
  o.platform = std::string(FABRICVP_PLATFORMS) + "/" + platform;
  o.workload = "matmul";
  o.kind_options["shape"] = shape;
  if (!split.empty()) o.kind_options["split"] = split;
  for (const std::string& f : flags) o.kind_options[f] = "1";
  o.overrides = {"sched.matmul_inputs=host", "sched.matmul_outputs=host"};
  o.overrides.insert(o.overrides.end(), overrides.begin(), overrides.end());
  return test::run_stats(o, rc);
}
}  // namespace

TEST(MatmulBlocks, RowsInBlocksRepeatedByLoopAreCheckedAndPredicted) {
  // [1000 x 640] x [640 x 960] in blocks of 300 rows: 4 blocks of 250, each
  // streaming its rows of A and all of B again and writing its C back; the
  // chip runs one block's program repeated by LOOP. Every element of C is
  // read from host memory and checked bit for bit.
  const nlohmann::json one = run_blocked("groq-node.yaml", "1000x640x960", "", {});
  const nlohmann::json four = run_blocked("groq-node.yaml", "1000x640x960", "", {"sched.matmul_block_rows=300"});
  const auto& w = four["workload"];
  EXPECT_EQ(one["workload"]["blocks"].get<uint64_t>(), 1u);
  EXPECT_EQ(w["blocks"].get<uint64_t>(), 4u);
  EXPECT_EQ(w["block_rows"].get<uint64_t>(), 250u);
  EXPECT_TRUE(w["verified"].get<bool>());
  EXPECT_EQ(w["checked_elements"].get<uint64_t>(), 1000u * 960);
  EXPECT_EQ(w["simulated_ps"], w["predicted_ps"]);
  // A once (1000 rows x 4 K tiles), B once per block (4 x 3 x 320 vectors), C once.
  EXPECT_EQ(one["workload"]["host_bytes"].get<uint64_t>(), (1000u * 4 + 4 * 3 * 320) * 320);
  EXPECT_EQ(w["host_bytes"].get<uint64_t>(), (1000u * 4 + 4 * 4 * 3 * 320) * 320);
  EXPECT_EQ(w["host_out_bytes"].get<uint64_t>(), 1000u * 3 * 4 * 320);
  EXPECT_EQ(four["sys"]["node0"]["tsp0"]["pcie_payload_bytes"], w["host_bytes"]);
  // Blocks run one after the other: the last ends (blocks - 1) periods after the first.
  EXPECT_GT(w["simulated_ps"].get<uint64_t>(), 3 * w["block_period_ps"].get<uint64_t>());
  EXPECT_LT(w["simulated_ps"].get<uint64_t>(), 4 * w["block_period_ps"].get<uint64_t>());
  EXPECT_GT(w["simulated_ps"].get<uint64_t>(), one["workload"]["simulated_ps"].get<uint64_t>());
}

TEST(MatmulBlocks, CTooLargeForTheSramIsBlockedAutomatically) {
  // [20000 x 320] x [320 x 12800]: C alone would take 3.2 M SRAM vectors.
  const nlohmann::json j = run_blocked("groq-node.yaml", "20000x320x12800", "", {}, {"timing-only"});
  EXPECT_GT(j["workload"]["blocks"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["workload"]["simulated_ps"], j["workload"]["predicted_ps"]);
  EXPECT_EQ(j["workload"]["host_out_bytes"].get<uint64_t>(),
            j["workload"]["blocks"].get<uint64_t>() * j["workload"]["block_rows"].get<uint64_t>() * 40 * 4 * 320);
}

TEST(MatmulBlocks, WidestShareAloneTakesTheClustersTime) {
  // Column splits never communicate: the TSP with the widest share (2 of
  // B's 10 column tiles) finishes last, alone or among the 8.
  const nlohmann::json all = run_blocked("groq-node.yaml", "2000x640x3200", "col=8", {"sched.matmul_block_rows=700"});
  const nlohmann::json one =
      run_blocked("groq-node.yaml", "2000x640x3200", "col=8", {"sched.matmul_block_rows=700"}, {"widest-share"});
  EXPECT_TRUE(all["workload"]["verified"].get<bool>());
  EXPECT_TRUE(one["workload"]["verified"].get<bool>());
  EXPECT_EQ(one["workload"]["checked_elements"].get<uint64_t>(), 2000u * 640);
  EXPECT_EQ(one["workload"]["simulated_tsps"].get<uint64_t>(), 1u);
  EXPECT_EQ(one["workload"]["tsps"].get<uint64_t>(), 8u);
  EXPECT_EQ(one["workload"]["simulated_ps"], all["workload"]["simulated_ps"]);
  EXPECT_EQ(one["workload"]["simulated_ps"], one["workload"]["predicted_ps"]);
  EXPECT_DOUBLE_EQ(one["workload"]["tflops"].get<double>(), all["workload"]["tflops"].get<double>());
}

TEST(MatmulBlocks, RefusedWhereTheyCannotApply) {
  const std::string host = " -p sched.matmul_inputs=host -p sched.matmul_outputs=host";
  struct Case {
    std::string args, want;
  };
  for (const Case& c : {
           Case{"--shape 1000x640x960 -p sched.matmul_block_rows=300",
                "blocks of rows need -p sched.matmul_inputs=host -p sched.matmul_outputs=host"},
           Case{"--shape 100x640x960 --split col=2,row=2 --widest-share",
                "--widest-share: only column-wise splits never communicate"},
           Case{"--shape 100000x320x12800 -p sched.matmul_block_rows=90000" + host,
                "sched.matmul_block_rows=90000: a TSP holds at most"},
           Case{"--shape 2x320x60000000" + host, "one row of C over 187500 column tiles does not fit a TSP's SRAM"},
       }) {
    const test::Result r = test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --workload matmul " +
                                    c.args + " -q --out /tmp/fabricvp-mmb");
    EXPECT_EQ(r.code, 1) << c.args;
    EXPECT_NE(r.out.find(c.want), std::string::npos) << c.args << "\n" << r.out;
  }
}

TEST(MatmulExperiment, SingleChipUtilizationIsAtLeastEightyPercent) {
  const std::string dir = "/tmp/fabricvp-mm-exp-" + std::to_string(::getpid());
  const test::Result r = test::sh("experiment matmul-single --quick -o " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(dir + "/matmul-single.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["N"].size(), 2u);
  EXPECT_GE(j["min_utilization_pct"].get<double>(), 80.0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/matmul-single.png"));
  std::filesystem::remove_all(dir);
}

TEST(MatmulHost, InputsStreamedInRowOrderSendEachSliceOfAOnce) {
  // [64 x 500] x [500 x 700]: T = 4 K tiles (the last of 20 rows), J = 3 column tiles.
  auto run = [](const std::string& order) {
    systems::RunOptions o;
    o.platform = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
    o.workload = "matmul";
    o.kind_options["shape"] = "64x500x700";
    o.overrides = {"sched.matmul_inputs=host", "sched.matmul_order=" + order};
    return test::run_stats(o);
  };
  const nlohmann::json row = run("row"), col = run("col");
  for (const nlohmann::json* j : {&row, &col}) {
    EXPECT_TRUE((*j)["workload"]["verified"].get<bool>());
    EXPECT_EQ((*j)["workload"]["simulated_ps"], (*j)["workload"]["predicted_ps"]);
  }
  const uint64_t tiles = 3 * (3 * 320 + 40);  // per column tile: 3 whole K tiles (320 vectors) and one of 20 rows
  EXPECT_EQ(row["workload"]["host_bytes"].get<uint64_t>(), (4 * 64 + tiles) * 320);
  EXPECT_EQ(col["workload"]["host_bytes"].get<uint64_t>(), (3 * 4 * 64 + tiles) * 320);
  EXPECT_EQ(row["workload"]["inputs"], "host-row");
  EXPECT_GT(col["workload"]["simulated_ps"].get<uint64_t>(), row["workload"]["simulated_ps"].get<uint64_t>());
  EXPECT_GT(col["workload"]["host_GBps_needed_per_tsp"].get<double>(),
            row["workload"]["host_GBps_needed_per_tsp"].get<double>());
  // The chip's PCIe statistics count what the plan sent.
  EXPECT_EQ(row["sys"]["node0"]["tsp0"]["pcie_payload_bytes"], row["workload"]["host_bytes"]);
}

TEST(MatmulTimingOnly, SameTimesAsTheCheckedRunWithoutData) {
  // --timing-only keeps every LW, MXM and PCIe write's timing and hazard
  // checks but computes and moves no data: the same completion to the
  // picosecond, with SRAM inputs and a row-split reduction, and from the host.
  auto run = [](const std::string& shape, const std::string& split, std::vector<std::string> overrides,
                bool timing_only) {
    systems::RunOptions o;
    o.platform = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
    o.workload = "matmul";
    o.kind_options["shape"] = shape;
    if (!split.empty()) o.kind_options["split"] = split;
    if (timing_only) o.kind_options["timing-only"] = "1";
    o.overrides = std::move(overrides);
    return test::run_stats(o);
  };
  for (const auto& [shape, split, ov] : std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {"40x1500x700", "col=2,row=4", {}}, {"64x500x700", "", {"sched.matmul_inputs=host"}}}) {
    const nlohmann::json data = run(shape, split, ov, false), timed = run(shape, split, ov, true);
    EXPECT_TRUE(data["workload"]["verified"].get<bool>());
    EXPECT_FALSE(data["workload"]["timing_only"].get<bool>());
    EXPECT_TRUE(timed["workload"]["timing_only"].get<bool>());
    EXPECT_FALSE(timed["workload"]["verified"].get<bool>());
    EXPECT_EQ(timed["workload"]["checked_elements"].get<uint64_t>(), 0u);
    EXPECT_EQ(timed["workload"]["simulated_ps"], data["workload"]["simulated_ps"]) << shape;
    EXPECT_EQ(timed["workload"]["simulated_ps"], timed["workload"]["predicted_ps"]) << shape;
    EXPECT_EQ(timed["sys"]["node0"]["tsp0"]["mxm_subops"], data["sys"]["node0"]["tsp0"]["mxm_subops"]);
    EXPECT_EQ(timed["sys"]["node0"]["tsp0"]["pcie_payload_bytes"], data["sys"]["node0"]["tsp0"]["pcie_payload_bytes"]);
  }
  const test::Result c =
      test::sh("run " + std::string(FABRICVP_PLATFORMS) +
               "/groq-node.yaml --workload cholesky --n 640 --timing-only -q --out /tmp/fabricvp-mmt");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.out.find("--timing-only: on Groq TSPs times a matrix multiplication"), std::string::npos) << c.out;
}

TEST(MatmulExperiment, ClusterThroughputIsTheInputStreamsWhileTheyBind) {
  const std::string dir = "/tmp/fabricvp-mm-cl-" + std::to_string(::getpid());
  const test::Result r = test::sh("experiment matmul-cluster --quick -o " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(dir + "/matmul-cluster.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["points"].size(), 1u);
  const nlohmann::json& p = j["points"][0];
  EXPECT_EQ(p["tsps"].get<uint64_t>(), 100u);
  // 100 TSPs each stream all of [32000 x 32000] fp16 over 27.4 GB/s: the PCIe
  // links, not the MXMs, set the time (C's 41 MB go back at the end, 2 % more).
  EXPECT_GT(p["pcie_GBps_per_tsp"].get<double>(), 26.5);
  EXPECT_GT(p["needed_GBps_per_tsp"].get<double>(), 500.0);
  EXPECT_NEAR(p["tflops"].get<double>(), 32000 * 27.4e9 / 1e12, 0.05 * 32000 * 27.4e9 / 1e12);
  EXPECT_EQ(p["blocks"].get<uint64_t>(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(MatmulHost, ResultsWrittenBackOverPcieAreCheckedInHostMemory) {
  // C leaves each chip over its PCIe link as each part is final (HOSTW): the
  // check reads host memory, and the completion is C's last vector there.
  auto run = [](const std::string& split, const std::string& outputs) {
    systems::RunOptions o;
    o.platform = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
    o.workload = "matmul";
    o.kind_options["shape"] = "40x1500x700";
    o.kind_options["split"] = split;
    o.overrides = {"sched.matmul_outputs=" + outputs};
    return test::run_stats(o);
  };
  for (const std::string split : {"col=2", "col=2,row=4"}) {
    const nlohmann::json sram = run(split, "sram"), host = run(split, "host");
    const auto& w = host["workload"];
    EXPECT_TRUE(w["verified"].get<bool>()) << split;
    EXPECT_EQ(w["outputs"], "host");
    EXPECT_EQ(w["simulated_ps"], w["predicted_ps"]) << split;
    EXPECT_GT(w["simulated_ps"].get<uint64_t>(), sram["workload"]["simulated_ps"].get<uint64_t>());
    // Every element of C once: 40 rows x 3 column tiles x 4 vectors x 320 bytes.
    EXPECT_EQ(w["host_out_bytes"].get<uint64_t>(), 40u * 3 * 4 * 320) << split;
    uint64_t sent = 0;
    for (auto& [name, chip] : host["sys"]["node0"].items())
      if (chip.contains("pcie_out_payload_bytes")) sent += chip["pcie_out_payload_bytes"].get<uint64_t>();
    EXPECT_EQ(sent, w["host_out_bytes"].get<uint64_t>()) << split;
  }
}
