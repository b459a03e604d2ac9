// Experiment of seeds 001/002 (ACE on the NPU torus), made of checked runs.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "models/core/units.h"
#include "systems/experiment.h"

namespace fabricvp::npusys {

namespace {

using systems::ExperimentOptions;
using systems::Job;
using systems::save_result;
using systems::size_name;

// ACE (seed 002): 64-NPU 4x4x4 torus all-reduce with the ACE (tlm) and with
// NPU cores reducing through memory (none), per size: completion time,
// NPU-memory bytes per network byte and link utilization.
int ace_study(const ExperimentOptions& opt) {
  // Points: sweeps/experiments/ace.yaml (sizes x ace.model none, tlm; sizes outermost).
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<Job>& jobs = r.jobs;
  const std::vector<std::string> models = systems::values_of(r.spec, "ace.model");
  if (models != std::vector<std::string>{"none", "tlm"})
    throw core::ConfigError(fmt::format("{}: the ace study compares ace.model none and tlm", r.spec.file));
  std::vector<uint64_t> sizes;
  for (const std::string& b : systems::values_of(r.spec, "--bytes")) sizes.push_back(core::parse_bytes(b));
  fmt::print(
      "All-reduce on the 64-NPU 4x4x4 torus (enhanced 4-phase algorithm, fp32): NPU cores through memory "
      "(none) vs ACE (tlm)\n{:>8} {:>6} {:>14} {:>12} {:>12} {:>10} {:>12}\n",
      "size", "engine", "completion us", "algbw GB/s", "mem B/net B", "link util", "mem GB/s/NPU");
  nlohmann::json out = {{"experiment", "ace"},
                        {"platform", "ace-torus-4x4x4.yaml"},
                        {"definition",
                         "memory_bytes_per_network_byte = NPU-memory bytes moved for communication / payload bytes "
                         "sent on links; link_utilization = busy share of the completion time, mean over the link "
                         "directions in use"}};
  for (size_t i = 0; i < jobs.size(); i += 2) {
    nlohmann::json point = {{"bytes", sizes[i / 2]}};
    for (size_t k = 0; k < 2; ++k) {
      const nlohmann::json& w = jobs[i + k].result["workload"];
      if (!w["verified"].get<bool>()) throw std::runtime_error("unverified run in the ace experiment");
      fmt::print("{:>8} {:>6} {:>14.3f} {:>12.2f} {:>12.3f} {:>9.1f}% {:>12.1f}\n", size_name(sizes[i / 2]), models[k],
                 w["simulated_ps"].get<uint64_t>() / 1e6, w["algbw_GBps"].get<double>(),
                 w["memory_bytes_per_network_byte"].get<double>(), w["link_utilization"].get<double>(),
                 w["memory_GBps_per_npu"].get<double>());
      point[models[k]] = {{"simulated_ps", w["simulated_ps"]},
                          {"algbw_GBps", w["algbw_GBps"]},
                          {"memory_bytes_per_network_byte", w["memory_bytes_per_network_byte"]},
                          {"link_utilization_pct", w["link_utilization"]},
                          {"memory_GBps_per_npu", w["memory_GBps_per_npu"]},
                          {"network_GBps_per_npu", w["network_GBps_per_npu"]}};
    }
    const double mem_ratio = point["none"]["memory_bytes_per_network_byte"].get<double>() /
                             point["tlm"]["memory_bytes_per_network_byte"].get<double>();
    const double util_ratio =
        point["tlm"]["link_utilization_pct"].get<double>() / point["none"]["link_utilization_pct"].get<double>();
    const double speedup = point["none"]["simulated_ps"].get<double>() / point["tlm"]["simulated_ps"].get<double>();
    point["memory_ratio_none_over_ace"] = mem_ratio;
    point["utilization_ratio_ace_over_none"] = util_ratio;
    point["speedup_ace"] = speedup;
    fmt::print(
        "{:>8} {:>6} memory per network byte {:.2f}x less with ACE, link utilization {:.2f}x, completion "
        "{:.2f}x faster\n",
        "", "", mem_ratio, util_ratio, speedup);
    out["points"].push_back(point);
  }
  fmt::print(
      "\nSeed 002 (ACE) claims 3.5x less memory bandwidth for the same network bandwidth and 1.44x network\n"
      "utilization in training (compute sharing the memory); docs/ace.md compares.\n");
  systems::Chart chart{"All-reduce on the 64-NPU 4x4x4 torus: ACE vs NPU cores (seed 002)", "size (bytes)",
                       "algorithm bandwidth (GB/s)", "endpoint"};
  const std::vector<double> xs(sizes.begin(), sizes.end());
  for (const char* m : {"none", "tlm"}) {
    systems::Series se{m == std::string("tlm") ? "ACE (tlm)" : "NPU cores through memory (none)", xs, {}};
    for (const nlohmann::json& pt : out["points"]) se.y.push_back(pt[m]["algbw_GBps"].get<double>());
    chart.series.push_back(std::move(se));
  }
  chart.xticks = systems::size_ticks(xs);
  chart.logx = true;
  save_result(opt, out, chart);
  return 0;
}

const bool registered = systems::register_experiment(
    {"ace", "seed 002: all-reduce on the 64-NPU torus, ACE vs NPU cores (memory traffic, utilization)", ace_study});

}  // namespace

}  // namespace fabricvp::npusys
