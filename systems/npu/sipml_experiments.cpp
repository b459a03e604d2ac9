// SiP-ML's studies (seed 003 §4, docs/sipml.md): op-graph training
// iterations on the optical and electrical fabrics (platforms/sipml-*.yaml),
// each point a real `fabricvp run`. Where a sweep gives several GPUs per
// model-parallel group (sipml.mp) or several global batches (sipml.batch)
// for one configuration, its result is its best run, as the paper searches
// the parallelization and the batch for every network (§4.1, §4.2): the
// shortest time to accuracy, or for batches beyond the time-to-accuracy
// table the most samples per second (`better` below).
//   sipml-bandwidth  Fig 5: iteration and time to accuracy vs per-GPU bandwidth B
//   sipml-batch      §4.1: time to accuracy vs the global batch; each fabric's best batch
//   sipml-latency    Table 1: speed-up vs fabric latency at 32, 128, 512 GPUs
//   sipml-ocs        Figs 8, 9: vs the number of OCSs; one-shot vs dynamic by reconfiguration delay
//   sipml-scale      Fig 10: vs the number of GPUs at 8 Tbit/s
//   sipml-traffic    Fig 7: the measured traffic matrix of the Transformer for k = 4, 8, 16
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "systems/experiment.h"
#include "systems/npu/sipml_choice.h"

namespace fs = std::filesystem;

namespace fabricvp::npusys {

namespace {

using systems::Chart;
using systems::ExperimentOptions;
using systems::SweepPoint;
using systems::SweepResult;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The fabric a point runs on, by its platform file (and the cluster's
/// server bandwidth).
std::string fabric_of(const SweepResult& r, const SweepPoint& p) {
  const std::string stem = fs::path(systems::param_or(p, "--platform", r.spec.platform)).stem().string();
  if (stem.find("flat") != std::string::npos) return "Elect-Flat";
  if (stem.find("cluster") != std::string::npos)
    return fmt::format("Elect-Cluster {}G", systems::param_or(p, "sys.dim0.cluster0.server_Gbps", "400"));
  if (stem.find("ocs") != std::string::npos) {
    if (systems::param_or(p, "sys.dim0.ocs0.schedule", "one_shot") != "dynamic") return "SiP-OCS";
    return systems::param_or(p, "sys.dim0.ocs0.estimate", "past") == "schedule" ? "SiP-OCS dynamic, schedule"
                                                                                : "SiP-OCS dynamic";
  }
  if (stem.find("ring") != std::string::npos) return "SiP-Ring";
  return stem;
}

std::string workload_of(const SweepResult& r, const SweepPoint& p) {
  std::string w = systems::param_or(p, "--workload", "");
  if (w.empty())
    for (size_t i = 0; i + 1 < r.spec.options.size(); ++i)
      if (r.spec.options[i] == "--workload") w = r.spec.options[i + 1];
  return fs::path(w).stem().string();
}

/// A parameter of point i: its axis value, else the sweep's last `-p`/`--param key=V` option, else "".
std::string param_of(const SweepResult& r, size_t i, const std::string& key) {
  std::string v = systems::param_or(r.points[i], key, "");
  if (v.empty() || v == systems::kUnset) {
    v.clear();
    for (size_t o = 0; o + 1 < r.spec.options.size(); ++o)
      if ((r.spec.options[o] == "-p" || r.spec.options[o] == "--param") &&
          r.spec.options[o + 1].rfind(key + "=", 0) == 0)
        v = r.spec.options[o + 1].substr(key.size() + 1);
  }
  if (!v.empty() && (v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos))
    throw core::ConfigError(fmt::format("{}: {} '{}' is not a whole number", r.spec.file, key, v));
  return v;
}

/// Point i's MP degree: what its run reports (workload.mp_gpus); for a run that failed, its sipml.mp (axis or
/// option), else 1.
uint32_t mp_of(const SweepResult& r, size_t i) {
  if (r.failed.empty() || r.failed[i].empty()) {
    const nlohmann::json& w = r.jobs[i].result["workload"];
    if (w.contains("mp_gpus")) return static_cast<uint32_t>(w["mp_gpus"].get<uint64_t>());
  }
  const std::string k = param_of(r, i, "sipml.mp");
  return k.empty() ? 1 : static_cast<uint32_t>(std::stoul(k));
}

/// One configuration (every parameter but sipml.mp and sipml.batch) and its
/// best run over the k and global batches the sweep tried.
struct Config {
  std::string fabric, workload;
  std::map<std::string, std::string> params;  // without sipml.mp (and sipml.batch when searched: the default)
  std::vector<Tried> tried;                   // in the sweep's order
  Tried best;                                 // iteration NaN: every run failed
  bool batches_searched = false;              // ran more than one global batch
  uint64_t first_batch = 0;                   // of the first run that did not fail
  /// The best run with k GPUs per group (NaN iteration: none ran).
  Tried best_with(uint32_t k) const {
    Tried b;
    for (const Tried& t : tried)
      if (t.k == k && better(t, b)) b = t;
    return b;
  }
};

/// The sweep's runs by configuration, each with its best run. With
/// `search_batch` false the global batch is part of a configuration (the best
/// over k at each batch).
std::vector<Config> best_over_k(const SweepResult& r, bool search_batch = true) {
  std::vector<Config> out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < r.points.size(); ++i) {
    const SweepPoint& p = r.points[i];
    std::map<std::string, std::string> params;
    for (const auto& [key, v] : p.params)
      if (key != "sipml.mp" && (key != "sipml.batch" || !search_batch)) params[key] = v;
    std::string id;
    for (const auto& [key, v] : params) id += key + "=" + v + ";";
    auto [it, fresh] = index.emplace(id, out.size());
    if (fresh) {
      out.emplace_back();
      out.back().fabric = fabric_of(r, p);
      out.back().workload = workload_of(r, p);
      out.back().params = params;
    }
    Config& c = out[it->second];
    Tried t;
    t.k = mp_of(r, i);
    t.job = i;
    if (!r.failed.empty() && !r.failed[i].empty()) {
      t.failed = r.failed[i];
      const std::string b = param_of(r, i, "sipml.batch");
      if (!b.empty()) t.batch = std::stoull(b);
    } else {
      const nlohmann::json& w = r.jobs[i].result["workload"];
      t.iteration = w["total_ps"].get<double>();
      t.compute = w["compute_ps"].get<double>();
      t.exposed = w["exposed_comm_ps"].get<double>();
      t.batch = w.value("global_batch", uint64_t(0));
      t.tta_s = w.contains("time_to_accuracy_s") ? w["time_to_accuracy_s"].get<double>() : kNaN;
      t.tta_note = w.value("accuracy_estimate", std::string());
    }
    if (t.failed.empty()) {
      if (c.first_batch && t.batch != c.first_batch) c.batches_searched = true;
      if (!c.first_batch) c.first_batch = t.batch;
    }
    if (better(t, c.best)) c.best = t;
    c.tried.push_back(std::move(t));
  }
  return out;  // a configuration every run of which failed keeps iteration NaN and its reasons (refused)
}

nlohmann::json tried_json(const Tried& t) {
  nlohmann::json j = {{"mp", t.k}, {"global_batch", t.batch}};
  if (!t.failed.empty()) {
    j["failed"] = t.failed;
    return j;
  }
  j["iteration_ps"] = t.iteration;
  j["samples_per_s"] = t.samples_per_s();
  if (!std::isnan(t.tta_s)) j["time_to_accuracy_s"] = t.tta_s;
  j["accuracy_estimate"] = t.tta_note;
  return j;
}

nlohmann::json config_json(const Config& c) {
  const Tried& b = c.best;
  nlohmann::json j = {{"fabric", c.fabric},
                      {"workload", c.workload},
                      {"params", c.params},
                      {"best_mp", b.k},
                      {"iteration_ps", b.iteration},
                      {"compute_ps", b.compute},
                      {"exposed_comm_ps", b.exposed},
                      {"global_batch", b.batch},
                      {"samples_per_s", b.samples_per_s()},
                      {"tried", nlohmann::json::array()}};
  for (const Tried& t : c.tried) j["tried"].push_back(tried_json(t));
  if (std::isnan(b.iteration)) j["refused"] = c.tried.front().failed;
  if (!std::isnan(b.tta_s)) j["time_to_accuracy_s"] = b.tta_s;
  j["accuracy_estimate"] = b.tta_note;
  return j;
}

double param_num(const Config& c, const std::string& key, double otherwise) {
  auto it = c.params.find(key);
  return it == c.params.end() || it->second == systems::kUnset ? otherwise : std::stod(it->second);
}

std::string ms(double ps) { return fmt::format("{:.3f}", ps / 1e9); }
/// The best run's time to accuracy in hours (or in units of `unit_s` seconds), "-" without an estimate.
std::string tta(const Config& c, double unit_s = 3600) {
  return std::isnan(c.best.tta_s) ? "-" : fmt::format("{:.3g}", c.best.tta_s / unit_s);
}
/// The best run's parallelization: "k=8", and its global batch where the sweep searched batches.
std::string choice(const Config& c) {
  return c.batches_searched ? fmt::format("k={}, batch {}", c.best.k, c.best.batch) : fmt::format("k={}", c.best.k);
}

/// The workloads and the fabrics of `cs`, in the order they first appear.
void names_of(const std::vector<Config>& cs, std::vector<std::string>& workloads, std::vector<std::string>& fabrics) {
  for (const Config& c : cs) {
    if (std::find(workloads.begin(), workloads.end(), c.workload) == workloads.end()) workloads.push_back(c.workload);
    if (std::find(fabrics.begin(), fabrics.end(), c.fabric) == fabrics.end()) fabrics.push_back(c.fabric);
  }
}

/// y of a configuration: time to accuracy in hours when every configuration
/// that ran (of `workload`, if given) has one, else the iteration in ms.
bool all_have_tta(const std::vector<Config>& cs, const std::string& workload = "") {
  return std::all_of(cs.begin(), cs.end(), [&](const Config& c) {
    return (!workload.empty() && c.workload != workload) || std::isnan(c.best.iteration) || !std::isnan(c.best.tta_s);
  });
}

// ---- sipml-bandwidth (Fig 5) and sipml-scale (Fig 10): per workload, a line per fabric over x

int fabrics_over(const ExperimentOptions& opt, const char* x_key, double x_scale, const char* x_label,
                 const char* title) {
  const SweepResult r = systems::run_experiment_sweep(opt, true);
  const std::vector<Config> cs = best_over_k(r);
  nlohmann::json out = {{"experiment", opt.name}, {"sweep", r.spec.file}, {"configs", nlohmann::json::array()}};
  std::vector<std::string> workloads, fabrics;
  names_of(cs, workloads, fabrics);
  for (const Config& c : cs) out["configs"].push_back(config_json(c));
  std::vector<std::pair<std::string, Chart>> charts;
  for (const std::string& w : workloads) {
    std::vector<const Config*> of;
    for (const Config& c : cs)
      if (c.workload == w) of.push_back(&c);
    std::vector<const Config*> ran;
    for (const Config* c : of)
      if (!std::isnan(c->best.iteration)) ran.push_back(c);
    const bool by_tta = all_have_tta(cs, w);
    fmt::print("\n{}: iteration ms (best k) / time to accuracy h, by {}\n", w, x_label);
    fmt::print("{:>10}", x_label);
    for (const std::string& f : fabrics) fmt::print(" {:>24}", f);
    fmt::print("\n");
    std::set<double> xs;
    for (const Config* c : of) xs.insert(param_num(*c, x_key, kNaN) * x_scale);
    for (double x : xs) {
      fmt::print("{:>10g}", x);
      for (const std::string& f : fabrics) {
        const Config* hit = nullptr;
        for (const Config* c : of)
          if (c->fabric == f && param_num(*c, x_key, kNaN) * x_scale == x) hit = c;
        fmt::print(" {:>24}", !hit ? std::string()
                              : std::isnan(hit->best.iteration)
                                  ? std::string("refused")
                                  : fmt::format("{} ({}) / {}", ms(hit->best.iteration), choice(*hit), tta(*hit)));
      }
      fmt::print("\n");
    }
    Chart ch{fmt::format("{}: {} (seed 003)", title, w), x_label,
             by_tta ? "time to accuracy (h)" : "iteration time (ms)", "fabric"};
    ch.logx = true;  // y linear: the times span less than a decade, where a log axis shows one tick
    for (const std::string& f : fabrics) {
      systems::Series s{f, {}, {}};
      for (const Config* c : ran)
        if (c->fabric == f) {
          s.x.push_back(param_num(*c, x_key, kNaN) * x_scale);
          s.y.push_back(by_tta ? c->best.tta_s / 3600 : c->best.iteration / 1e9);
        }
      if (!s.x.empty()) ch.series.push_back(std::move(s));
    }
    // DP on Elect-Flat for reference (k = 1 of the flat runs, where tried)
    systems::Series dp{"Elect-Flat, data parallel", {}, {}};
    for (const Config* c : of)
      if (c->fabric == "Elect-Flat") {
        const Tried t = c->best_with(1);
        if (std::isnan(t.iteration) || (by_tta && std::isnan(t.tta_s))) continue;
        dp.x.push_back(param_num(*c, x_key, kNaN) * x_scale);
        dp.y.push_back(by_tta ? t.tta_s / 3600 : t.iteration / 1e9);
      }
    if (!dp.x.empty()) ch.series.push_back(std::move(dp));
    std::vector<double> ticks(xs.begin(), xs.end());
    for (double x : ticks) ch.xticks.emplace_back(x, fmt::format("{:g}", x));
    charts.emplace_back(w, std::move(ch));
  }
  systems::save_result(opt, out, charts);
  return 0;
}

int sipml_bandwidth(const ExperimentOptions& opt) {
  return fabrics_over(opt, "sys.dim0.GBps", 8.0, "B (Gbit/s per GPU)", "Training time vs per-GPU bandwidth");
}

int sipml_scale(const ExperimentOptions& opt) {
  return fabrics_over(opt, "sys.dim0.npus", 1.0, "GPUs", "Training time vs scale at 8 Tbit/s");
}

// ---- sipml-latency (Table 1)

int sipml_latency(const ExperimentOptions& opt) {
  const SweepResult r = systems::run_experiment_sweep(opt, true);
  const std::vector<Config> cs = best_over_k(r);
  // speed-up normalized by the smallest scale at the lowest latency: in time to accuracy, as the paper's, where
  // every configuration has one; else in samples per second
  const bool by_tta = all_have_tta(cs);
  std::set<double> gpus, lats;
  for (const Config& c : cs) {
    gpus.insert(param_num(c, "sys.dim0.npus", kNaN));
    lats.insert(param_num(c, "sys.dim0.latency_ns", kNaN));
  }
  auto at = [&](double n, double l) -> const Config* {
    for (const Config& c : cs)
      if (param_num(c, "sys.dim0.npus", kNaN) == n && param_num(c, "sys.dim0.latency_ns", kNaN) == l) return &c;
    return nullptr;
  };
  const Config* ref = at(*gpus.begin(), *lats.begin());
  if (!ref) throw core::ConfigError(opt.name + ": no point at the smallest scale and latency");
  nlohmann::json out = {{"experiment", opt.name},
                        {"sweep", r.spec.file},
                        {"normalized_by", {{"gpus", *gpus.begin()}, {"latency_ns", *lats.begin()}}},
                        {"speedup_in", by_tta ? "time to accuracy" : "samples per second"},
                        {"configs", nlohmann::json::array()}};
  fmt::print("\nTraining speed-up ({}, normalized by {:g} GPUs at {:g} us), Elect-Flat, {}\n",
             by_tta ? "time to accuracy" : "samples/s", *gpus.begin(), *lats.begin() / 1000, ref->workload);
  fmt::print("{:>8}", "GPUs");
  for (double l : lats) fmt::print(" {:>10}", fmt::format("{:g} us", l / 1000));
  fmt::print("\n");
  Chart ch{"Speed-up vs fabric latency, Elect-Flat (seed 003 Table 1)", "fabric latency (us)",
           fmt::format("speed-up over {:g} GPUs at {:g} us", *gpus.begin(), *lats.begin() / 1000), "GPUs"};
  ch.logx = true;
  for (double n : gpus) {
    fmt::print("{:>8g}", n);
    systems::Series s{fmt::format("{:g}", n), {}, {}};
    for (double l : lats) {
      const Config* c = at(n, l);
      if (!c || std::isnan(c->best.iteration)) {
        fmt::print(" {:>10}", "");
        continue;
      }
      const double su = by_tta ? ref->best.tta_s / c->best.tta_s : c->best.samples_per_s() / ref->best.samples_per_s();
      nlohmann::json j = config_json(*c);
      j["speedup"] = su;
      out["configs"].push_back(j);
      fmt::print(" {:>10.2f}", su);
      s.x.push_back(l / 1000);
      s.y.push_back(su);
    }
    fmt::print("\n");
    ch.series.push_back(std::move(s));
  }
  for (double l : lats) ch.xticks.emplace_back(l / 1000, fmt::format("{:g}", l / 1000));
  systems::save_result(opt, out, ch);
  return 0;
}

// ---- sipml-ocs (Figs 8, 9)

int sipml_ocs(const ExperimentOptions& opt) {
  // Fig 8: one-shot SiP-OCS by number of switches, per B, Elect-Flat at the same B dashed
  const SweepResult r = systems::run_experiment_sweep(opt, true);
  const std::vector<Config> cs = best_over_k(r);
  // Fig 9: one-shot vs dynamic by reconfiguration delay, per B (sweeps/experiments/sipml-ocs-reconfig.yaml)
  ExperimentOptions o9 = opt;
  o9.name = "sipml-ocs-reconfig";
  const SweepResult r9 = systems::run_experiment_sweep(o9, true);
  const std::vector<Config> c9 = best_over_k(r9);
  nlohmann::json out = {{"experiment", opt.name},
                        {"sweeps", {r.spec.file, r9.spec.file}},
                        {"switches", nlohmann::json::array()},
                        {"reconfiguration", nlohmann::json::array()}};
  std::set<double> bs, qs, delays;
  for (const Config& c : cs) bs.insert(param_num(c, "sys.dim0.GBps", kNaN) * 8);
  for (const Config& c : cs)
    if (c.fabric == "SiP-OCS") qs.insert(param_num(c, "sys.dim0.ocs0.switches", 16));
  auto is_dynamic = [](const Config& c) { return c.fabric.rfind("SiP-OCS dynamic", 0) == 0; };
  for (const Config& c : c9)
    if (is_dynamic(c)) delays.insert(param_num(c, "sys.dim0.ocs0.reconfig_delay_us", 10000));
  const bool tta8 = all_have_tta(cs);
  auto y = [&](const Config& c, bool by_tta) { return by_tta ? c.best.tta_s / 3600 : c.best.iteration / 1e9; };
  Chart f8{"SiP-OCS one-shot: training time vs number of OCSs (seed 003 Fig 8)", "OCSs (degree)",
           tta8 ? "time to accuracy (h)" : "iteration time (ms)", "B (Gbit/s)"};
  fmt::print("\nOne-shot SiP-OCS, iteration ms (best k) by number of switches; Elect-Flat at the same B\n{:>8}", "B");
  for (double q : qs) fmt::print(" {:>14}", fmt::format("{:g} OCSs", q));
  fmt::print(" {:>14}\n", "Elect-Flat");
  for (double b : bs) {
    systems::Series s{fmt::format("{:g}", b), {}, {}}, flat{fmt::format("{:g}, Elect-Flat", b), {}, {}};
    fmt::print("{:>8g}", b);
    for (const Config& c : cs) {
      if (param_num(c, "sys.dim0.GBps", kNaN) * 8 != b) continue;
      nlohmann::json j = config_json(c);
      out["switches"].push_back(j);
      if (std::isnan(c.best.iteration)) {
        fmt::print(" {:>14}", "refused");
        continue;
      }
      if (c.fabric == "SiP-OCS") {
        s.x.push_back(param_num(c, "sys.dim0.ocs0.switches", 16));
        s.y.push_back(y(c, tta8));
        fmt::print(" {:>14}", fmt::format("{} ({})", ms(c.best.iteration), choice(c)));
      } else {
        flat.x = {*qs.begin(), *qs.rbegin()};
        flat.y = {y(c, tta8), y(c, tta8)};
        fmt::print(" {:>14}", fmt::format("{} ({})", ms(c.best.iteration), choice(c)));
      }
    }
    fmt::print("\n");
    f8.series.push_back(std::move(s));
    if (!flat.x.empty()) f8.series.push_back(std::move(flat));
  }
  std::set<double> b9;
  for (const Config& c : c9) b9.insert(param_num(c, "sys.dim0.GBps", kNaN) * 8);
  const bool tta9 = all_have_tta(c9);
  Chart f9{"SiP-OCS: dynamic vs one-shot by reconfiguration delay (seed 003 Fig 9)", "reconfiguration delay (us)",
           tta9 ? "time to accuracy (h)" : "iteration time (ms)", "B (Gbit/s)"};
  f9.logx = f9.logy = true;  // the past estimate's stalls reach 10x the one-shot time
  fmt::print(
      "\nSiP-OCS dynamic, planned from the past traffic or from the schedule: iteration ms (best k) by "
      "reconfiguration delay; one-shot at the same B\n{:>8} {:>9}",
      "B", "estimate");
  for (double d : delays) fmt::print(" {:>14}", fmt::format("{:g} us", d));
  fmt::print(" {:>14}\n", "one-shot");
  for (double b : b9) {
    systems::Series one{fmt::format("{:g}, one-shot", b), {}, {}};
    std::string one_cell;
    for (const Config& c : c9)
      if (param_num(c, "sys.dim0.GBps", kNaN) * 8 == b && c.fabric == "SiP-OCS" && !std::isnan(c.best.iteration)) {
        one.x = {*delays.begin(), *delays.rbegin()};
        one.y = {y(c, tta9), y(c, tta9)};
        one_cell = fmt::format("{} ({})", ms(c.best.iteration), choice(c));
      }
    for (const char* estimate : {"past", "schedule"}) {
      const std::string fabric = std::string("SiP-OCS dynamic") + (estimate == std::string("past") ? "" : ", schedule");
      systems::Series dyn{fmt::format("{:g}, dynamic ({})", b, estimate), {}, {}};
      std::map<double, std::string> cells;  // by delay
      for (const Config& c : c9) {
        if (param_num(c, "sys.dim0.GBps", kNaN) * 8 != b || c.fabric != fabric) continue;
        if (std::isnan(c.best.iteration)) continue;  // refused: in the JSON with its reason
        const double d = param_num(c, "sys.dim0.ocs0.reconfig_delay_us", 10000);
        dyn.x.push_back(d);
        dyn.y.push_back(y(c, tta9));
        cells[d] = fmt::format("{} ({})", ms(c.best.iteration), choice(c));
      }
      if (cells.empty()) continue;
      fmt::print("{:>8g} {:>9}", b, estimate);
      for (double d : delays) fmt::print(" {:>14}", cells.count(d) ? cells[d] : "refused");
      fmt::print(" {:>14}\n", one_cell.empty() ? "refused" : one_cell);
      f9.series.push_back(std::move(dyn));
    }
    if (!one.x.empty()) f9.series.push_back(std::move(one));
  }
  for (const Config& c : c9) out["reconfiguration"].push_back(config_json(c));
  for (double d : delays) f9.xticks.emplace_back(d, fmt::format("{:g}", d));
  systems::save_result(opt, out, {{"switches", f8}, {"reconfig", f9}});
  return 0;
}

// ---- sipml-batch (§4.1): time to accuracy vs the global batch, per fabric

int sipml_batch(const ExperimentOptions& opt) {
  const SweepResult r = systems::run_experiment_sweep(opt, true);
  const std::vector<Config> at_batch = best_over_k(r, false), best = best_over_k(r, true);
  nlohmann::json out = {{"experiment", opt.name},
                        {"sweep", r.spec.file},
                        {"points", nlohmann::json::array()},
                        {"best", nlohmann::json::array()}};
  for (const Config& c : at_batch) out["points"].push_back(config_json(c));
  for (const Config& c : best) out["best"].push_back(config_json(c));
  std::vector<std::string> workloads, fabrics;
  names_of(best, workloads, fabrics);
  std::vector<std::pair<std::string, Chart>> charts;
  for (const std::string& w : workloads) {
    auto cell = [](const Config& c) {
      if (std::isnan(c.best.iteration)) return std::string("refused");
      return fmt::format("{} min, {} ms (k={})", tta(c, 60), ms(c.best.iteration), c.best.k);
    };
    fmt::print("\n{}: time to accuracy (min), iteration (best k) by global batch\n{:>8}", w, "batch");
    for (const std::string& f : fabrics) fmt::print(" {:>28}", f);
    fmt::print("\n");
    std::set<uint64_t> batches;  // the sweep's sipml.batch values
    for (const Config& c : at_batch)
      if (c.workload == w) batches.insert(static_cast<uint64_t>(param_num(c, "sipml.batch", 0)));
    Chart ch{fmt::format("Time to accuracy vs global batch: {} (seed 003 §4.1)", w), "global batch (samples)",
             "time to accuracy (min)", "fabric"};
    ch.logx = true;  // y linear: within a decade
    for (uint64_t b : batches) {
      fmt::print("{:>8}", b);
      for (const std::string& f : fabrics) {
        const Config* hit = nullptr;
        for (const Config& c : at_batch)
          if (c.workload == w && c.fabric == f && param_num(c, "sipml.batch", kNaN) == static_cast<double>(b)) hit = &c;
        fmt::print(" {:>28}", hit ? cell(*hit) : std::string());
      }
      fmt::print("\n");
      ch.xticks.emplace_back(static_cast<double>(b), fmt::format("{}", b));
    }
    fmt::print("{:>8}", "best");
    for (const std::string& f : fabrics) {
      const Config* hit = nullptr;
      for (const Config& c : best)
        if (c.workload == w && c.fabric == f) hit = &c;
      fmt::print(" {:>28}", !hit || std::isnan(hit->best.iteration)
                                ? std::string("refused")
                                : fmt::format("{} min at {} (k={})", tta(*hit, 60), hit->best.batch, hit->best.k));
      systems::Series s{f, {}, {}};
      for (const Config& c : at_batch)
        if (c.workload == w && c.fabric == f && !std::isnan(c.best.tta_s)) {
          s.x.push_back(static_cast<double>(c.best.batch));
          s.y.push_back(c.best.tta_s / 60);
        }
      if (!s.x.empty()) ch.series.push_back(std::move(s));
    }
    fmt::print("\n");
    charts.emplace_back(w, std::move(ch));
  }
  systems::save_result(opt, out, charts);
  return 0;
}

// ---- sipml-traffic (Fig 7)

int sipml_traffic(const ExperimentOptions& opt) {
  const SweepResult r = systems::run_experiment_sweep(opt);
  nlohmann::json out = {{"experiment", opt.name}, {"sweep", r.spec.file}, {"points", nlohmann::json::array()}};
  Chart ch{"Measured traffic matrix of one Transformer iteration (seed 003 Fig 7)", "destination GPU", "source GPU",
           "bytes"};
  fmt::print("\nTraffic of one iteration ({}), per k\n{:>4} {:>7} {:>9} {:>10} {:>12} {:>13} {:>12}\n",
             workload_of(r, r.points[0]), "k", "delta", "pairs", "peers max", "GB total", "in MP groups",
             "iteration ms");
  for (size_t i = 0; i < r.points.size(); ++i) {
    const nlohmann::json& w = r.jobs[i].result["workload"];
    const uint32_t k = mp_of(r, i);
    const uint32_t n = static_cast<uint32_t>(w["mp_gpus"].get<uint64_t>() * w["dp_groups"].get<uint64_t>());
    std::vector<std::vector<double>> m(n, std::vector<double>(n, 0.0));
    std::ifstream f(fs::path(r.jobs[i].dir) / "traffic.csv");
    if (!f)
      throw core::ConfigError(fmt::format("{}: no traffic.csv (a platform with an optical plane?)", r.jobs[i].dir));
    std::string line;
    std::getline(f, line);  // header
    double total = 0, inside = 0;
    std::vector<uint32_t> peers(n, 0);
    uint64_t pairs = 0;
    while (std::getline(f, line)) {
      std::stringstream ss(line);
      std::string plane, a, b, msgs, bytes;
      std::getline(ss, plane, ',');
      std::getline(ss, a, ',');
      std::getline(ss, b, ',');
      std::getline(ss, msgs, ',');
      std::getline(ss, bytes, ',');
      const uint32_t s = static_cast<uint32_t>(std::stoul(a)), d = static_cast<uint32_t>(std::stoul(b));
      const double v = std::stod(bytes);
      if (s >= n || d >= n) throw core::ConfigError(fmt::format("{}: GPU {} or {} beyond {}", r.jobs[i].dir, s, d, n));
      m[s][d] += v;
      total += v;
      if (s / k == d / k) inside += v;
      ++peers[s];
      ++pairs;
    }
    const uint32_t most = *std::max_element(peers.begin(), peers.end());
    fmt::print("{:>4} {:>7} {:>9} {:>10} {:>12.3f} {:>12.1f}% {:>12}\n", k, w["delta"].get<uint64_t>(), pairs, most,
               total / 1e9, total > 0 ? 100 * inside / total : 0.0, ms(w["total_ps"].get<double>()));
    out["points"].push_back({{"mp", k},
                             {"delta", w["delta"]},
                             {"pairs", pairs},
                             {"max_peers", most},
                             {"bytes", total},
                             {"bytes_within_mp_groups", inside},
                             {"iteration_ps", w["total_ps"]},
                             {"matrix", m}});
    ch.heatmaps.push_back({fmt::format("k = {} (delta {})", k, w["delta"].get<uint64_t>()), std::move(m)});
  }
  systems::save_result(opt, out, ch);
  return 0;
}

const bool registered =
    systems::register_experiment({"sipml-bandwidth",
                                  "seed 003 Fig 5: training time vs per-GPU bandwidth on 1,024 "
                                  "GPUs, Elect-Flat / Elect-Cluster / SiP-OCS / SiP-Ring",
                                  sipml_bandwidth}) &&
    systems::register_experiment({"sipml-bandwidth-gpt",
                                  "seed 003 Fig 5's Megatron panel: GPT (18.4 B, k = 16) vs per-GPU bandwidth on "
                                  "1,024 GPUs, every fabric (about 20 minutes)",
                                  sipml_bandwidth}) &&
    systems::register_experiment({"sipml-batch",
                                  "seed 003 §4.1: time to accuracy vs the global batch on 1,024 GPUs at 8 Tbit/s, "
                                  "every fabric, and each fabric's best batch",
                                  sipml_batch}) &&
    systems::register_experiment(
        {"sipml-latency", "seed 003 Table 1: speed-up vs fabric latency at 32, 128, 512 GPUs", sipml_latency}) &&
    systems::register_experiment({"sipml-ocs",
                                  "seed 003 Figs 8, 9: SiP-OCS by number of switches, and "
                                  "dynamic vs one-shot by reconfiguration delay",
                                  sipml_ocs}) &&
    systems::register_experiment(
        {"sipml-scale", "seed 003 Fig 10: ResNet-50 and Transformer from 32 to 1,024 GPUs at 8 Tbit/s", sipml_scale}) &&
    systems::register_experiment(
        {"sipml-traffic", "seed 003 Fig 7: the Transformer's measured traffic matrix for k = 4, 8, 16", sipml_traffic});

}  // namespace

}  // namespace fabricvp::npusys
