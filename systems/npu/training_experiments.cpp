// ace-training (seed 002 §V-VI): ResNet-50, GNMT and DLRM training iterations
// on the 64-NPU ACE torus with the four endpoint configurations of the paper.
// They differ only in who runs the collectives and which NPU resources that
// takes from the workload's kernels (compute.timing roofline: a pass's flops
// on the SMs left to it, its memory bytes at the bandwidth set aside for it):
//   Ideal            ace.model=ideal: messages handled in the endpoint delay,
//                    no memory traffic or SMs; compute keeps everything
//   BaselineCommOpt  NPU cores run the collectives with generous resources
//   BaselineCompOpt  NPU cores run them with few resources, compute keeps most
//   ACE              the ACE runs them; its DMA has a memory share, every SM
//                    computes
// Iteration time, compute and exposed communication per configuration, and
// the ACE's speedup over each baseline and the best one.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "systems/experiment.h"

namespace fs = std::filesystem;

namespace fabricvp::npusys {

namespace {

using systems::ExperimentOptions;
using systems::Job;
using systems::save_result;

// The four configurations are the zipped axis of sweeps/experiments/ace-training.yaml, in this order.
const char* const kConfigs[] = {"Ideal", "BaselineCommOpt", "BaselineCompOpt", "ACE"};

int ace_training(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<Job>& jobs = r.jobs;
  if (systems::values_of(r.spec, "ace.model") != std::vector<std::string>{"ideal", "none", "none", "tlm"})
    throw core::ConfigError(fmt::format(
        "{}: the ace-training study's zipped axis is Ideal, BaselineCommOpt, BaselineCompOpt, ACE (ace.model "
        "ideal, none, none, tlm)",
        r.spec.file));
  std::vector<std::string> workloads;
  for (const std::string& w : systems::values_of(r.spec, "--workload"))
    workloads.push_back(fs::path(w).stem().string());
  const char* const keys[] = {"ace.model", "sys.npu*.compute.comm_sms", "sys.npu*.memory.comm_share",
                              "sys.npu*.memory.compute_share"};
  nlohmann::json out = {{"experiment", "ace-training"},
                        {"platform", "ace-torus-4x4x4.yaml (64 NPUs, 4x4x4 torus)"},
                        {"compute", "roofline 125 TFLOPS x 0.5, 900 GB/s per NPU, 80 SMs"},
                        {"paper_speedup_over_best_baseline", {{"resnet50", 1.41}, {"gnmt", 1.12}, {"dlrm", 1.13}}}};
  for (size_t i = 0; i < 4; ++i)
    for (const char* k : keys) out["configs"][kConfigs[i]][k] = systems::param(r.points[i], k);
  fmt::print(
      "Training iteration on the 64-NPU ACE torus (timing only; compute from the roofline on what each\n"
      "configuration leaves the workload's kernels)\n\n");
  fmt::print("{:<10} {:<16} {:>13} {:>13} {:>13} {:>9}\n", "workload", "configuration", "iteration ms", "compute ms",
             "exposed ms", "vs Ideal");
  size_t k = 0;
  for (const std::string& w : workloads) {
    double t[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < 4; ++i) {
      const nlohmann::json& wl = jobs[k++].result["workload"];
      t[i] = wl["total_ps"].get<double>();
      const double comp = wl["compute_ps"].get<double>(), exp = wl["exposed_comm_ps"].get<double>();
      out["points"].push_back({{"workload", w},
                               {"config", kConfigs[i]},
                               {"iteration_ps", t[i]},
                               {"compute_ps", comp},
                               {"exposed_comm_ps", exp}});
      fmt::print("{:<10} {:<16} {:>13.3f} {:>13.3f} {:>13.3f} {:>8.1f}%\n", i == 0 ? w : "", kConfigs[i], t[i] / 1e9,
                 comp / 1e9, exp / 1e9, 100.0 * t[0] / t[i]);
    }
    const double best = std::min(t[1], t[2]);
    const nlohmann::json s = {{"ace_over_commopt", t[1] / t[3]},
                              {"ace_over_compopt", t[2] / t[3]},
                              {"ace_over_best_baseline", best / t[3]},
                              {"ace_of_ideal", t[0] / t[3]}};
    out["speedups"][w] = s;
    const nlohmann::json& paper = out["paper_speedup_over_best_baseline"];
    fmt::print(
        "{:<10} ACE speedup: {:.2f}x over BaselineCommOpt, {:.2f}x over BaselineCompOpt, {:.2f}x over the best{}\n\n",
        "", t[1] / t[3], t[2] / t[3], best / t[3],
        paper.contains(w) ? fmt::format(" (paper: {:.2f}x)", paper[w].get<double>()) : std::string());
    if (t[0] > std::min({t[1], t[2], t[3]}))
      throw std::runtime_error(fmt::format("ace-training: {}: Ideal is not the fastest configuration", w));
  }
  // The figure (seed 002 Fig 12's form): iteration time of each configuration, relative to Ideal.
  systems::Chart chart{"Training iteration on the 64-NPU torus, relative to Ideal (seed 002)", "",
                       "iteration time / Ideal's", "configuration"};
  chart.categories = workloads;
  for (size_t i = 0; i < 4; ++i) {
    systems::Series se{kConfigs[i], {}, {}};
    for (size_t wi = 0; wi < workloads.size(); ++wi) {
      se.x.push_back(static_cast<double>(wi));
      se.y.push_back(out["points"][wi * 4 + i]["iteration_ps"].get<double>() /
                     out["points"][wi * 4]["iteration_ps"].get<double>());
    }
    chart.series.push_back(std::move(se));
  }
  chart.bars = true;
  save_result(opt, out, chart);
  return 0;
}

const bool registered = systems::register_experiment(
    {"ace-training",
     "seed 002 §VI: ResNet-50 / GNMT / DLRM iterations with the ACE vs BaselineCommOpt / BaselineCompOpt vs Ideal",
     ace_training});

}  // namespace

}  // namespace fabricvp::npusys
