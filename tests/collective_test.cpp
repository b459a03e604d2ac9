// Every collective x data type at several sizes (including sizes that are not
// multiples of 320 B), run end to end: scheduled, simulated, checked bit-exactly
// on every chip against the host reference, and completed at exactly the
// predicted picosecond.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "harness.h"
#include "models/core/context.h"
#include "runtime/driver.h"
#include "systems/groq/collective_data.h"
#include "systems/groq/machine.h"
#include "systems/groq/programs.h"

using namespace fabricvp;

namespace {

nlohmann::json run_collective(const std::string& kind, uint64_t bytes, const std::string& dtype,
                              std::vector<std::string> overrides = {}, uint32_t root = 0) {
  systems::RunOptions o;
  o.platform = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
  o.workload = kind;
  o.bytes = bytes;
  core::parse_dtype(dtype, o.dtype);
  o.root = root;
  o.overrides = std::move(overrides);
  return test::run_stats(o);
}

void expect_checked(const nlohmann::json& j, uint64_t bytes) {
  const auto& w = j["workload"];
  EXPECT_TRUE(w["verified"].get<bool>());
  EXPECT_EQ(w["mismatched_elements"].get<uint64_t>(), 0u);
  EXPECT_EQ(w["bytes"].get<uint64_t>(), bytes);
  EXPECT_GT(w["simulated_ps"].get<uint64_t>(), 0u);
  EXPECT_EQ(w["simulated_ps"].get<uint64_t>(), w["predicted_ps"].get<uint64_t>());
  EXPECT_EQ(j["run"]["status"], "ok");
  EXPECT_EQ(j["run"]["hardware_errors"].get<uint64_t>(), 0u);
}

}  // namespace

class Collective : public ::testing::TestWithParam<std::tuple<std::string, std::string, uint64_t>> {};

TEST_P(Collective, VerifiedOnEveryChipAndCompletesAsPredicted) {
  auto [kind, dtype, bytes] = GetParam();
  nlohmann::json j = run_collective(kind, bytes, dtype);
  expect_checked(j, bytes);
  EXPECT_EQ(j["workload"]["kind"], kind);
  EXPECT_EQ(j["workload"]["dtype"], dtype);
}

// 32 B: one fp32 element per chip. 8032 B and 320032 B are not multiples of
// 320 and split into 8 equal pieces of whole elements for every type.
INSTANTIATE_TEST_SUITE_P(GroqNode, Collective,
                         ::testing::Combine(::testing::Values(std::string("allreduce"), std::string("allgather"),
                                                              std::string("reducescatter"), std::string("broadcast")),
                                            ::testing::Values(std::string("fp32"), std::string("bf16"),
                                                              std::string("fp16"), std::string("int32")),
                                            ::testing::Values(32u, 8032u, 320032u)),
                         [](const auto& test_info) {
                           return std::get<0>(test_info.param) + "_" + std::get<1>(test_info.param) + "_" +
                                  std::to_string(std::get<2>(test_info.param));
                         });

// One run per process (SystemC elaborates once): odd sizes, smaller nodes, other link rates.
struct Variant {
  const char* name;
  const char* kind;
  uint64_t bytes;
  const char* dtype;
  std::vector<std::string> overrides;
  uint32_t root;
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class CollectiveVariant : public ::testing::TestWithParam<Variant> {};

TEST_P(CollectiveVariant, VerifiedAndCompletesAsPredicted) {
  const Variant& v = GetParam();
  nlohmann::json j = run_collective(v.kind, v.bytes, v.dtype, v.overrides, v.root);
  expect_checked(j, v.bytes);
  EXPECT_EQ(j["workload"]["root"].get<uint64_t>(), v.root);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CollectiveVariant,
    ::testing::Values(Variant{"allreduce_one_element", "allreduce", 4, "fp32", {}, 0},
                      Variant{"allreduce_324B", "allreduce", 324, "fp32", {}, 0},
                      Variant{"allreduce_2564B", "allreduce", 2564, "fp16", {}, 0},
                      Variant{"allreduce_100004B", "allreduce", 100004, "bf16", {}, 0},
                      Variant{"broadcast_root5", "broadcast", 1000000, "bf16", {}, 5},
                      Variant{"allreduce_3_tsps", "allreduce", 123456, "fp16", {"sys.tsps_per_node=3"}, 0},
                      Variant{"allreduce_2_tsps", "allreduce", 96, "int32", {"sys.tsps_per_node=2"}, 0},
                      Variant{"allgather_5_tsps_2x30G",
                              "allgather",
                              120000,
                              "fp32",
                              {"sys.tsps_per_node=5", "sys.node0.link*.lanes=2", "sys.node0.link*.lane_gbps=30"},
                              0},
                      Variant{"broadcast_1GHz_long_cables",
                              "broadcast",
                              77777 * 4,
                              "int32",
                              {"sys.node0.tsp*.clock_mhz=1000", "sys.node0.link*.propagation_ps=10000"},
                              2}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

TEST(CollectiveMore, AllreduceKeepsEveryLinkBusy) {
  // 4 MiB: both phases stream 1/8 of the data over each of the 56 link directions.
  nlohmann::json j = run_collective("allreduce", 4u << 20, "fp32");
  expect_checked(j, 4u << 20);
  EXPECT_GT(j["workload"]["busbw_pct_of_peak"].get<double>(), 98.0);
  for (auto& [name, link] : j["sys"]["node0"].items()) {
    if (name.rfind("link", 0) != 0) continue;
    EXPECT_GT(link["a_to_b"]["utilization_pct"].get<double>(), 98.0) << name;
    EXPECT_GT(link["b_to_a"]["utilization_pct"].get<double>(), 98.0) << name;
  }
}

TEST(CollectiveMore, LaggingReductionGrowsTheStagingRing) {
  // One-vector chunks with a 200-cycle ADD cannot keep up with arrivals; the
  // scheduler must not let a ring slot be overwritten before it is reduced.
  nlohmann::json j =
      run_collective("reducescatter", 8 * 64 * 320, "fp32",
                     {"sched.chunk_vectors=1", "sched.staging_chunks=1", "sys.node0.tsp*.add_latency=200"});
  expect_checked(j, 8 * 64 * 320);
}
