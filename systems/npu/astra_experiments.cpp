// astra-validate (seed 001 §V-A, V-B): collectives on ASTRA-SIM's published
// setups — 8 packages on a 1-D ring or all-to-all, 64 packages on a 1-D, 2-D
// and 3-D torus, Table IV's inter-package links (25 GB/s x 94 %, 200 cycles,
// 2 bidirectional rings) — simulated on ndim fabrics next to the closed-form
// bandwidth/latency model of each algorithm. One chunk on an idle network
// must match the model (what is left is the reductions' memory time);
// ASTRA-SIM-style chunking (16 chunks) shows what pipelining gains.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/core/output_file.h"
#include "systems/experiment.h"

namespace fs = std::filesystem;

namespace fabricvp::npusys {

namespace {

using systems::ExperimentOptions;
using systems::Job;
using systems::run_job;
using systems::run_jobs;
using systems::save_result;
using systems::size_name;

struct Setup {
  const char* name;         // seed 001's notation
  std::vector<uint32_t> n;  // NPUs per dimension
  bool alltoall;            // 1-D all-to-all topology (FullyConnected) instead of a ring
  uint32_t links;           // per neighbour (Ring) or peer (FullyConnected)
  const char* algorithm;    // per dimension
};

constexpr double kGBps = 25.0, kEff = 0.94, kLatNs = 200.0;

/// Closed form of an all-reduce, baseline order (all-reduce on every dimension
/// in turn), one chunk of m bytes, idle network.
double closed_form_ns(const Setup& s, double m) {
  const double B = kGBps * kEff;  // bytes per ns
  double t = 0;
  for (uint32_t n : s.n) {
    if (n < 2) continue;
    if (s.alltoall)  // direct: reduce-scatter + all-gather, every segment on its own link
      t += 2 * (kLatNs + m / n / B);
    else  // ring: 2 (n - 1) steps on 2 x links unidirectional rings
      t += 2.0 * (n - 1) * (kLatNs + m / (2.0 * s.links * n * B));
  }
  return t;
}

std::string platform(const Setup& s) {
  std::string y = fmt::format(
      "# astra-validate: seed 001 {} (Table IV inter-package links)\n"
      "sys:\n  description: \"seed 001 {}\"\n  topology: ndim\n  dims: {}\n",
      s.name, s.name, s.n.size());
  for (size_t d = 0; d < s.n.size(); ++d)
    y += fmt::format(
        "  dim{}: {{type: {}, npus: {}, links: {}, GBps: {}, latency_ns: {}, efficiency: {}, packet_bytes: 256}}\n", d,
        s.alltoall ? "FullyConnected" : "Ring", s.n[d], s.links, kGBps, kLatNs, kEff);
  // The reductions through memory are made fast: the study is about the network.
  y += "  npu*:\n    memory: {GBps: 1000000}\n    compute: {vector_tflops: 1000000}\n";
  y += fmt::format(
      "ace: {{model: none}}\ncollective:\n  algorithm: baseline\n  allreduce_implementation: {}\n"
      "  align_elems: 1\n",
      s.algorithm);
  return y;
}

int astra_validate(const ExperimentOptions& opt) {
  const std::vector<Setup> setups = {
      {"1x8 alltoall", {8}, true, 1, "direct"}, {"1x8x1 torus", {8}, false, 4, "ring"},
      {"1x64x1", {64}, false, 2, "ring"},       {"1x8x8", {8, 8}, false, 2, "ring"},
      {"2x8x4", {2, 8, 4}, false, 2, "ring"},   {"4x4x4", {4, 4, 4}, false, 2, "ring"},
  };
  std::vector<uint64_t> sizes = {1u << 20};
  if (!opt.quick) sizes = {64u << 10, 1u << 20, 16u << 20, 64u << 20};
  const uint32_t kChunks[2] = {1, 16};
  const fs::path dir = fs::path(opt.out_dir) / "astra-validate";
  fs::create_directories(dir);
  std::vector<Job> jobs;
  for (size_t i = 0; i < setups.size(); ++i) {
    const std::string file = (dir / fmt::format("setup{}.yaml", i)).string();
    core::write_file(file, platform(setups[i]), "platform file");
    for (uint64_t b : sizes)
      for (uint32_t c : kChunks)
        jobs.push_back(run_job(
            (dir / fmt::format("setup{}_{}_c{}", i, size_name(b), c)).string(),
            {file, "--bytes", std::to_string(b), "--timing-only", "-p", fmt::format("collective.chunks={}", c)}));
  }
  run_jobs(jobs, opt.jobs);
  fmt::print(
      "All-reduce on seed 001's setups (baseline order, timing only, idle network): closed form vs fabricvp\n"
      "{:<14} {:>8} {:>10} {:>14} {:>14} {:>8} {:>16} {:>9}\n",
      "setup", "size", "algorithm", "model us", "1 chunk us", "diff", "16 chunks us", "speedup");
  nlohmann::json out = {{"experiment", "astra-validate"},
                        {"links", {{"GBps", kGBps}, {"efficiency", kEff}, {"latency_ns", kLatNs}}},
                        {"model",
                         "ring: sum over dimensions of 2 (n - 1) (latency + m / (2 L n B)); direct (all-to-all "
                         "topology): 2 (latency + m / (n B)); B = GBps x efficiency, L links per neighbour"}};
  size_t k = 0;
  double worst = 0;
  for (const Setup& s : setups)
    for (uint64_t b : sizes) {
      const double model = closed_form_ns(s, static_cast<double>(b));
      const nlohmann::json& w1 = jobs[k++].result["workload"];
      const nlohmann::json& w16 = jobs[k++].result["workload"];
      const double t1 = w1["simulated_ps"].get<double>() / 1000, t16 = w16["simulated_ps"].get<double>() / 1000;
      const double diff = (t1 - model) / model;
      worst = std::max(worst, std::abs(diff));
      fmt::print("{:<14} {:>8} {:>10} {:>14.3f} {:>14.3f} {:>7.3f}% {:>16.3f} {:>8.2f}x\n", s.name, size_name(b),
                 s.algorithm, model / 1000, t1 / 1000, 100 * diff, t16 / 1000, t1 / t16);
      out["points"].push_back({{"setup", s.name},
                               {"dims", s.n},
                               {"bytes", b},
                               {"algorithm", s.algorithm},
                               {"model_ns", model},
                               {"simulated_1chunk_ns", t1},
                               {"simulated_16chunks_ns", t16},
                               {"difference", diff}});
    }
  fmt::print(
      "\nOne chunk: the simulation and the model differ by at most {:.3f}% (the reductions' memory time). With 16\n"
      "chunks, chunks pipeline within and across dimensions (what seed 001's Fig 10 shows); the model has none.\n",
      100 * worst);
  if (worst > 0.01) throw std::runtime_error("astra-validate: a one-chunk run differs from its closed form by > 1 %");
  out["max_difference_1chunk"] = worst;
  // The figure: what chunking buys on each setup (one chunk equals the closed form, checked above).
  systems::Chart chart{"All-reduce on seed 001's setups: 16 chunks vs 1 chunk (= the closed-form model)", "",
                       "speed-up of 16 chunks over 1", "size"};
  for (const Setup& st : setups) chart.categories.push_back(st.name);
  for (size_t b = 0; b < sizes.size(); ++b) {
    systems::Series se{size_name(sizes[b]), {}, {}};
    for (size_t i = 0; i < setups.size(); ++i) {
      const nlohmann::json& pt = out["points"][i * sizes.size() + b];
      se.x.push_back(static_cast<double>(i));
      se.y.push_back(pt["simulated_1chunk_ns"].get<double>() / pt["simulated_16chunks_ns"].get<double>());
    }
    chart.series.push_back(std::move(se));
  }
  chart.bars = true;
  save_result(opt, out, chart);
  return 0;
}

const bool registered = systems::register_experiment(
    {"astra-validate", "seed 001 §V: all-reduce on the 1-D/2-D/3-D setups vs the closed-form model of each algorithm",
     astra_validate});

}  // namespace

}  // namespace fabricvp::npusys
