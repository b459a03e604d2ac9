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

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/units.h"
#include "models/core/yaml_input.h"
#include "systems/experiment.h"

namespace fs = std::filesystem;

namespace fabricvp::npusys {

namespace {

using systems::ExperimentOptions;
using systems::Job;
using systems::save_result;
using systems::size_name;

// One setup as the run used it: read back from the point's effective
// configuration (config.yaml), so the closed form describes what ran.
struct Setup {
  std::string name;         // seed 001's notation (the platform's description)
  std::vector<uint32_t> n;  // NPUs per dimension
  bool alltoall = false;    // 1-D all-to-all topology (FullyConnected) instead of a ring
  uint32_t links = 1;       // per neighbour (Ring) or peer (FullyConnected)
  std::string algorithm;    // all-reduce implementation
  double GBps = 0, efficiency = 0, latency_ns = 0;
};

Setup setup_of(const std::string& point_dir) {
  const std::string file = (fs::path(point_dir) / "config.yaml").string();
  const YAML::Node c = core::load_yaml_document(core::read_input_file(file, "effective configuration"), file,
                                                "an effective configuration is one");
  auto get = [&](const std::string& k) {
    if (!c[k]) throw core::ConfigError(fmt::format("{}: no {}", file, k));
    return c[k];
  };
  Setup s;
  s.name = get("sys.description").as<std::string>();
  if (s.name.rfind("seed 001 ", 0) == 0) s.name = s.name.substr(9);
  s.algorithm = get("collective.allreduce_implementation").as<std::string>();
  const uint32_t dims = get("sys.dims").as<uint32_t>();
  for (uint32_t d = 0; d < dims; ++d) {
    const std::string p = fmt::format("sys.dim{}.", d);
    const std::string type = get(p + "type").as<std::string>();
    const uint32_t links = get(p + "links").as<uint32_t>();
    const double gbps = get(p + "GBps").as<double>(), eff = get(p + "efficiency").as<double>(),
                 lat = get(p + "latency_ns").as<double>();
    if (d == 0) {
      s.alltoall = type == "FullyConnected";
      s.links = links, s.GBps = gbps, s.efficiency = eff, s.latency_ns = lat;
    } else if ((type == "FullyConnected") != s.alltoall || links != s.links || gbps != s.GBps || eff != s.efficiency ||
               lat != s.latency_ns) {
      throw core::ConfigError(
          fmt::format("{}: the closed forms of astra-validate need one kind of link on every dimension", file));
    }
    if (type == "Switch")
      throw core::ConfigError(fmt::format("{}: astra-validate has no closed form for a Switch", file));
    s.n.push_back(get(p + "npus").as<uint32_t>());
  }
  if (s.algorithm != (s.alltoall ? "direct" : "ring"))
    throw core::ConfigError(
        fmt::format("{}: astra-validate's closed forms are ring on rings and direct on all-to-all", file));
  return s;
}

/// Closed form of an all-reduce, baseline order (all-reduce on every dimension
/// in turn), one chunk of m bytes, idle network.
double closed_form_ns(const Setup& s, double m) {
  const double B = s.GBps * s.efficiency;  // bytes per ns
  double t = 0;
  for (uint32_t n : s.n) {
    if (n < 2) continue;
    if (s.alltoall)  // direct: reduce-scatter + all-gather, every segment on its own link
      t += 2 * (s.latency_ns + m / n / B);
    else  // ring: 2 (n - 1) steps on 2 x links unidirectional rings
      t += 2.0 * (n - 1) * (s.latency_ns + m / (2.0 * s.links * n * B));
  }
  return t;
}

int astra_validate(const ExperimentOptions& opt) {
  // sweeps/experiments/astra-validate.yaml: setups (platforms/astra-validate/) x sizes x {1, 16} chunks.
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<Job>& jobs = r.jobs;
  if (systems::values_of(r.spec, "collective.chunks") != std::vector<std::string>{"1", "16"})
    throw core::ConfigError(fmt::format("{}: astra-validate compares collective.chunks 1 and 16", r.spec.file));
  std::vector<uint64_t> sizes;
  for (const std::string& b : systems::values_of(r.spec, "--bytes")) sizes.push_back(core::parse_bytes(b));
  std::vector<Setup> setups;
  for (size_t i = 0; i < jobs.size(); i += 2 * sizes.size()) setups.push_back(setup_of(jobs[i].dir));
  fmt::print(
      "All-reduce on seed 001's setups (baseline order, timing only, idle network): closed form vs fabricvp\n"
      "{:<14} {:>8} {:>10} {:>14} {:>14} {:>8} {:>16} {:>9}\n",
      "setup", "size", "algorithm", "model us", "1 chunk us", "diff", "16 chunks us", "speedup");
  const Setup& s0 = setups.at(0);
  nlohmann::json out = {{"experiment", "astra-validate"},
                        {"links", {{"GBps", s0.GBps}, {"efficiency", s0.efficiency}, {"latency_ns", s0.latency_ns}}},
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
