// SiP-ML's studies (seed 003 §4, docs/sipml.md): op-graph training
// iterations on the optical and electrical fabrics (platforms/sipml-*.yaml),
// each point a real `fabricvp run`. Where a sweep gives several GPUs per
// model-parallel group (sipml.mp), a configuration's result is its best k,
// as the paper searches the parallelization for every network (§4.2); the
// global batch is fixed per configuration, so the fastest iteration is also
// the shortest time to accuracy.
//   sipml-bandwidth  Fig 5: iteration and time to accuracy vs per-GPU bandwidth B
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

/// Point i's MP degree: what its run reports (workload.mp_gpus); for a run that failed, its sipml.mp axis, else
/// the sweep's last `-p`/`--param sipml.mp=K` option, else 1.
uint32_t mp_of(const SweepResult& r, size_t i) {
  if (r.failed.empty() || r.failed[i].empty()) {
    const nlohmann::json& w = r.jobs[i].result["workload"];
    if (w.contains("mp_gpus")) return static_cast<uint32_t>(w["mp_gpus"].get<uint64_t>());
  }
  std::string k = systems::param_or(r.points[i], "sipml.mp", "");
  if (k.empty())
    for (size_t o = 0; o + 1 < r.spec.options.size(); ++o)
      if ((r.spec.options[o] == "-p" || r.spec.options[o] == "--param") &&
          r.spec.options[o + 1].rfind("sipml.mp=", 0) == 0)
        k = r.spec.options[o + 1].substr(9);
  if (k.empty()) return 1;
  if (k.size() > 6 || k.find_first_not_of("0123456789") != std::string::npos)
    throw core::ConfigError(fmt::format("{}: sipml.mp '{}' is not a whole number", r.spec.file, k));
  return static_cast<uint32_t>(std::stoul(k));
}

/// One configuration (every parameter but sipml.mp) and its best k.
struct Config {
  std::string fabric, workload;
  std::map<std::string, std::string> params;  // without sipml.mp
  std::map<uint32_t, double> iteration_ps;    // per k tried (failed: NaN)
  std::map<uint32_t, std::string> failed;     // per k: why
  size_t best = 0;                            // job index of the best k
  uint32_t k = 0;
  double iteration = kNaN, compute = kNaN, exposed = kNaN, tta_s = kNaN;
  uint64_t global_batch = 0;
  std::string tta_note;
  double samples_per_s() const { return global_batch / (iteration * 1e-12); }
};

std::vector<Config> best_over_k(const SweepResult& r) {
  std::vector<Config> out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < r.points.size(); ++i) {
    const SweepPoint& p = r.points[i];
    std::map<std::string, std::string> params;
    const uint32_t k = mp_of(r, i);
    for (const auto& [key, v] : p.params)
      if (key != "sipml.mp") params[key] = v;
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
    if (!r.failed.empty() && !r.failed[i].empty()) {
      c.iteration_ps[k] = kNaN;
      c.failed[k] = r.failed[i];
      continue;
    }
    const nlohmann::json& w = r.jobs[i].result["workload"];
    const double t = w["total_ps"].get<double>();
    c.iteration_ps[k] = t;
    if (std::isnan(c.iteration) || t < c.iteration) {
      c.best = i, c.k = k, c.iteration = t;
      c.compute = w["compute_ps"].get<double>();
      c.exposed = w["exposed_comm_ps"].get<double>();
      c.global_batch = w.value("global_batch", uint64_t(0));
      c.tta_s = w.contains("time_to_accuracy_s") ? w["time_to_accuracy_s"].get<double>() : kNaN;
      c.tta_note = w.value("accuracy_estimate", std::string());
    }
  }
  return out;  // a configuration every k of which failed keeps iteration NaN and its reasons (refused)
}

nlohmann::json config_json(const Config& c) {
  nlohmann::json j = {{"fabric", c.fabric},
                      {"workload", c.workload},
                      {"params", c.params},
                      {"best_mp", c.k},
                      {"iteration_ps", c.iteration},
                      {"compute_ps", c.compute},
                      {"exposed_comm_ps", c.exposed},
                      {"global_batch", c.global_batch},
                      {"samples_per_s", c.samples_per_s()}};
  for (const auto& [k, t] : c.iteration_ps) {
    j["iteration_ps_by_mp"][std::to_string(k)] = std::isnan(t) ? nlohmann::json(nullptr) : nlohmann::json(t);
    if (c.failed.count(k)) j["failed_by_mp"][std::to_string(k)] = c.failed.at(k);
  }
  if (std::isnan(c.iteration)) j["refused"] = c.failed.begin()->second;
  if (!std::isnan(c.tta_s)) j["time_to_accuracy_s"] = c.tta_s;
  j["accuracy_estimate"] = c.tta_note;
  return j;
}

double param_num(const Config& c, const std::string& key, double otherwise) {
  auto it = c.params.find(key);
  return it == c.params.end() || it->second == systems::kUnset ? otherwise : std::stod(it->second);
}

std::string ms(double ps) { return fmt::format("{:.3f}", ps / 1e9); }
std::string tta(const Config& c) { return std::isnan(c.tta_s) ? "-" : fmt::format("{:.3g}", c.tta_s / 3600); }

/// y of a configuration: time to accuracy in hours when every configuration
/// of the chart has one, else the iteration in ms.
bool all_have_tta(const std::vector<const Config*>& cs) {
  return std::all_of(cs.begin(), cs.end(), [](const Config* c) { return !std::isnan(c->tta_s); });
}

// ---- sipml-bandwidth (Fig 5) and sipml-scale (Fig 10): per workload, a line per fabric over x

int fabrics_over(const ExperimentOptions& opt, const char* x_key, double x_scale, const char* x_label,
                 const char* title) {
  const SweepResult r = systems::run_experiment_sweep(opt, true);
  const std::vector<Config> cs = best_over_k(r);
  nlohmann::json out = {{"experiment", opt.name}, {"sweep", r.spec.file}, {"configs", nlohmann::json::array()}};
  std::vector<std::string> workloads, fabrics;
  for (const Config& c : cs) {
    if (std::find(workloads.begin(), workloads.end(), c.workload) == workloads.end()) workloads.push_back(c.workload);
    if (std::find(fabrics.begin(), fabrics.end(), c.fabric) == fabrics.end()) fabrics.push_back(c.fabric);
    out["configs"].push_back(config_json(c));
  }
  std::vector<std::pair<std::string, Chart>> charts;
  for (const std::string& w : workloads) {
    std::vector<const Config*> of;
    for (const Config& c : cs)
      if (c.workload == w) of.push_back(&c);
    std::vector<const Config*> ran;
    for (const Config* c : of)
      if (!std::isnan(c->iteration)) ran.push_back(c);
    const bool by_tta = all_have_tta(ran);
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
                              : std::isnan(hit->iteration)
                                  ? std::string("refused")
                                  : fmt::format("{} (k={}) / {}", ms(hit->iteration), hit->k, tta(*hit)));
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
          s.y.push_back(by_tta ? c->tta_s / 3600 : c->iteration / 1e9);
        }
      if (!s.x.empty()) ch.series.push_back(std::move(s));
    }
    // DP on Elect-Flat for reference (k = 1 of the flat runs, where tried)
    systems::Series dp{"Elect-Flat, data parallel", {}, {}};
    for (const Config* c : of)
      if (c->fabric == "Elect-Flat" && c->iteration_ps.count(1) && !std::isnan(c->iteration_ps.at(1))) {
        const double t = c->iteration_ps.at(1);
        dp.x.push_back(param_num(*c, x_key, kNaN) * x_scale);
        dp.y.push_back(by_tta ? c->tta_s / 3600 * t / c->iteration : t / 1e9);
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
  // speed-up: samples per second, normalized by the smallest scale at the lowest latency
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
                        {"configs", nlohmann::json::array()}};
  fmt::print("\nTraining speed-up (samples/s, normalized by {:g} GPUs at {:g} us), Elect-Flat, {}\n", *gpus.begin(),
             *lats.begin() / 1000, ref->workload);
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
      if (!c || std::isnan(c->iteration)) {
        fmt::print(" {:>10}", "");
        continue;
      }
      const double su = c->samples_per_s() / ref->samples_per_s();
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
  const bool tta8 = std::all_of(cs.begin(), cs.end(), [](const Config& c) { return !std::isnan(c.tta_s); });
  auto y = [&](const Config& c, bool by_tta) { return by_tta ? c.tta_s / 3600 : c.iteration / 1e9; };
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
      if (std::isnan(c.iteration)) {
        fmt::print(" {:>14}", "refused");
        continue;
      }
      if (c.fabric == "SiP-OCS") {
        s.x.push_back(param_num(c, "sys.dim0.ocs0.switches", 16));
        s.y.push_back(y(c, tta8));
        fmt::print(" {:>14}", fmt::format("{} (k={})", ms(c.iteration), c.k));
      } else {
        flat.x = {*qs.begin(), *qs.rbegin()};
        flat.y = {y(c, tta8), y(c, tta8)};
        fmt::print(" {:>14}", fmt::format("{} (k={})", ms(c.iteration), c.k));
      }
    }
    fmt::print("\n");
    f8.series.push_back(std::move(s));
    if (!flat.x.empty()) f8.series.push_back(std::move(flat));
  }
  std::set<double> b9;
  for (const Config& c : c9) b9.insert(param_num(c, "sys.dim0.GBps", kNaN) * 8);
  const bool tta9 = std::all_of(c9.begin(), c9.end(), [](const Config& c) { return !std::isnan(c.tta_s); });
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
      if (param_num(c, "sys.dim0.GBps", kNaN) * 8 == b && c.fabric == "SiP-OCS" && !std::isnan(c.iteration)) {
        one.x = {*delays.begin(), *delays.rbegin()};
        one.y = {y(c, tta9), y(c, tta9)};
        one_cell = fmt::format("{} (k={})", ms(c.iteration), c.k);
      }
    for (const char* estimate : {"past", "schedule"}) {
      const std::string fabric = std::string("SiP-OCS dynamic") + (estimate == std::string("past") ? "" : ", schedule");
      systems::Series dyn{fmt::format("{:g}, dynamic ({})", b, estimate), {}, {}};
      std::map<double, std::string> cells;  // by delay
      for (const Config& c : c9) {
        if (param_num(c, "sys.dim0.GBps", kNaN) * 8 != b || c.fabric != fabric) continue;
        if (std::isnan(c.iteration)) continue;  // refused: in the JSON with its reason
        const double d = param_num(c, "sys.dim0.ocs0.reconfig_delay_us", 10000);
        dyn.x.push_back(d);
        dyn.y.push_back(y(c, tta9));
        cells[d] = fmt::format("{} (k={})", ms(c.iteration), c.k);
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
