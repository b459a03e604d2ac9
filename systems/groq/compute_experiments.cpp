// Compute experiments of seed 000 (Groq), each made of simulation runs that
// complete at the compiler's predicted picosecond, and checked (C, L or the
// output bit-exact against the host reference). matmul-cluster's and bert's
// points are timed without data; a companion sweep (<name>-checked.yaml) runs
// some of them again with data, checked, and they must take the same times:
//   matmul-single  Fig 13: MXM utilization of [2304 x 4096] x [4096 x N] on one TSP.
//   matmul-scale   Fig 14: [800 x 32576] x [32576 x 8192] on 8 to 104 TSPs.
//   matmul-cluster Fig 15: [N x N] x [N x N] on 100, 200, 300 TSPs, column splits, inputs over PCIe.
//   cholesky       Fig 19: block-cyclic Cholesky on 1, 2, 4, 8 TSPs: speed-up and TFLOPS.
//   bert           Figs 17, 18: BERT-Large pipelined over 1, 4, 8, 16 TSPs, and the latency
//                  histogram of one inference on 4 TSPs launched again and again by the host runtime.
// docs/compute.md puts the results beside the paper's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "models/core/config.h"
#include "sw/sched/matmul.h"
#include "systems/experiment.h"

namespace fabricvp::groq {

namespace {

using systems::ExperimentOptions;

/// The points' workload statistics, each checked.
std::vector<nlohmann::json> checked_points(const systems::SweepResult& r, const char* name) {
  std::vector<nlohmann::json> out;
  for (const systems::Job& j : r.jobs) {
    const nlohmann::json& w = j.result["workload"];
    if (!w["verified"].get<bool>() || w["simulated_ps"] != w["predicted_ps"])
      throw core::ConfigError(fmt::format("{}: a point was not verified or missed its prediction ({})", name, j.dir));
    out.push_back(w);
  }
  return out;
}

/// Where an experiment's points are timed without data, its companion sweep
/// (sweeps/experiments/<name>.yaml) runs some of them again with data: each
/// must be verified against the host reference and must agree with the timed
/// point that has the same values of `same` (workload statistics; of several,
/// the last in the sweep) on every statistic of `equal`. Skipped with --quick
/// (the companions take minutes; the unit tests compare timed and checked
/// runs at small sizes). Returns one JSON row per companion.
nlohmann::json checked_companions(const ExperimentOptions& opt, const std::string& name,
                                  const systems::SweepResult& timed, const std::vector<std::string>& same,
                                  const std::vector<std::string>& equal) {
  nlohmann::json rows = nlohmann::json::array();
  if (opt.quick) return rows;
  ExperimentOptions co = opt;
  co.name = name;
  const systems::SweepResult r = systems::run_experiment_sweep(co);
  for (const systems::Job& j : r.jobs) {
    const nlohmann::json& w = j.result.at("workload");
    if (!w.value("verified", false))
      throw core::ConfigError(fmt::format("{}: a checked point was not verified ({})", name, j.dir));
    const systems::Job* twin = nullptr;
    for (const systems::Job& t : timed.jobs) {
      bool match = true;
      for (const std::string& k : same) match = match && t.result.at("workload").at(k) == w.at(k);
      if (match) twin = &t;
    }
    if (!twin) throw core::ConfigError(fmt::format("{}: no timed point matches {}", name, j.dir));
    const nlohmann::json& tw = twin->result.at("workload");
    nlohmann::json row = {{"dir", j.dir}, {"timed_dir", twin->dir}, {"verified", true}};
    for (const std::string& k : same) row[k] = w.at(k);
    for (const std::string& k : equal) {
      if (tw.at(k) != w.at(k))
        throw core::ConfigError(fmt::format("{}: {} is {} with data ({}) but {} timed without ({})", name, k,
                                            w.at(k).dump(), j.dir, tw.at(k).dump(), twin->dir));
      row[k] = w.at(k);
    }
    if (w.contains("inferences")) row["inferences"] = w.at("inferences");
    rows.push_back(row);
  }
  return rows;
}

/// Print what checked_companions found.
void print_companions(const nlohmann::json& rows, const char* what) {
  if (rows.empty()) {
    fmt::print("\n(--quick: the checked companions are not run)\n");
    return;
  }
  fmt::print("\nChecked with data ({}):\n", what);
  for (const nlohmann::json& row : rows)
    fmt::print("  {}: verified; the same times as {}\n", row["dir"].get<std::string>(),
               row["timed_dir"].get<std::string>());
}

int matmul_single(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<nlohmann::json> pts = checked_points(r, "matmul-single");
  nlohmann::json out = {{"experiment", "matmul-single"},
                        {"platform", "groq-node.yaml (one TSP)"},
                        {"operation", "[2304 x 4096] x [4096 x N], fp16 inputs, fp32 results"},
                        {"paper", "seed 000 Fig 13: at least 80 % utilization for every N"}};
  fmt::print("[2304 x 4096] x [4096 x N] on one TSP, fp16 (seed 000 Fig 13)\n");
  fmt::print("{:>6} {:>12} {:>10} {:>12} {:>16}\n", "N", "latency us", "TFLOPS", "MXM util %", "column tiles %");
  std::vector<double> ns, util, tiles, tflops;
  for (const nlohmann::json& w : pts) {
    sched::MatmulRequest q;
    sched::parse_shape(w["shape"].get<std::string>(), q);
    const double n = static_cast<double>(q.L);
    // Share of the 320-column tiles holding real columns: the padding the
    // compiler cannot avoid on one chip (an explanation, not the result).
    const double tile = 100.0 * n / (320.0 * std::ceil(n / 320.0));
    ns.push_back(n);
    util.push_back(w["mxm_utilization_pct"].get<double>());
    tiles.push_back(tile);
    tflops.push_back(w["tflops"].get<double>());
    fmt::print("{:>6} {:>12.2f} {:>10.1f} {:>12.1f} {:>16.1f}\n", q.L, w["simulated_ps"].get<double>() / 1e6,
               tflops.back(), util.back(), tile);
  }
  const double lo = *std::min_element(util.begin(), util.end());
  const double hi = *std::max_element(util.begin(), util.end());
  fmt::print(
      "\nMXM utilization {:.1f} % to {:.1f} % (seed 000 Fig 13: at least 80 %). The dips are the last, partly "
      "filled\n320-column tile of B; the 1.6 % never reached is the last 160-row K tile (4096 = 25.6 x 160), then "
      "the\nfirst weight load and the last results draining.\n",
      lo, hi);
  out["N"] = ns;
  out["mxm_utilization_pct"] = util;
  out["column_tile_fill_pct"] = tiles;
  out["tflops"] = tflops;
  out["min_utilization_pct"] = lo;
  systems::Chart chart{"[2304 x 4096] x [4096 x N] on one TSP, fp16 (seed 000 Fig 13)", "N", "MXM utilization (%)", ""};
  chart.series.push_back({"fabricvp (simulated)", ns, util});
  chart.series.push_back({"share of 320-column tiles filled", ns, tiles});
  chart.series.push_back({"paper: at least 80 %", {ns.front(), ns.back()}, {80.0, 80.0}});
  systems::save_result(opt, out, chart);
  return 0;
}

int matmul_scale(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<nlohmann::json> pts = checked_points(r, "matmul-scale");
  nlohmann::json out = {{"experiment", "matmul-scale"},
                        {"platform", "groq-dragonfly-264.yaml"},
                        {"operation", "[800 x 32576] x [32576 x 8192], fp16 inputs, fp32 results"},
                        {"decomposition", "8 column-wise weight splits x 1..13 row-wise splits"},
                        {"paper", "seed 000 Fig 14: latency falls as row-wise splits and TSPs are added"}};
  fmt::print("[800 x 32576] x [32576 x 8192], fp16, on the 256-TSP Dragonfly (seed 000 Fig 14)\n");
  fmt::print("{:>6} {:>8} {:>12} {:>12} {:>14} {:>10} {:>12}\n", "TSPs", "split", "latency us", "compute us",
             "reduction us", "TFLOPS", "MXM util %");
  std::vector<double> tsps, lat, comp, tfl, util;
  for (const nlohmann::json& w : pts) {
    tsps.push_back(w["tsps"].get<double>());
    lat.push_back(w["simulated_ps"].get<double>() / 1e6);
    comp.push_back(w["compute_ps"].get<double>() / 1e6);
    tfl.push_back(w["tflops"].get<double>());
    util.push_back(w["mxm_utilization_pct"].get<double>());
    fmt::print("{:>6} {:>8} {:>12.1f} {:>12.1f} {:>14.1f} {:>10.1f} {:>12.1f}\n", w["tsps"].get<uint64_t>(),
               fmt::format("{}x{}", w["col_splits"].get<uint64_t>(), w["row_splits"].get<uint64_t>()), lat.back(),
               comp.back(), lat.back() - comp.back(), tfl.back(), util.back());
  }
  const size_t best = static_cast<size_t>(std::min_element(lat.begin(), lat.end()) - lat.begin());
  fmt::print("\nlatency {:.1f} us on {} TSPs -> {:.1f} us on {} TSPs ({:.2f}x); the lowest is {:.1f} us on {} TSPs\n",
             lat.front(), tsps.front(), lat.back(), tsps.back(), lat.front() / lat.back(), lat[best], tsps[best]);
  out["tsps"] = tsps;
  out["latency_us"] = lat;
  out["compute_us"] = comp;
  out["tflops"] = tfl;
  out["mxm_utilization_pct"] = util;
  systems::Chart a{"[800 x 32576] x [32576 x 8192] vs TSPs: latency (seed 000 Fig 14 left)", "TSPs", "latency (us)",
                   ""};
  a.series.push_back({"end to end (simulated)", tsps, lat});
  a.series.push_back({"compute: last MXM result", tsps, comp});
  systems::Chart b{"[800 x 32576] x [32576 x 8192] vs TSPs: throughput (seed 000 Fig 14 right)", "TSPs",
                   "fp16 TFLOPS / MXM utilization (%)", ""};
  b.series.push_back({"TFLOPS", tsps, tfl});
  b.series.push_back({"MXM utilization (%)", tsps, util});
  systems::save_result(opt, out, {{"latency", a}, {"throughput", b}});
  return 0;
}

int matmul_cluster(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  nlohmann::json out = {{"experiment", "matmul-cluster"},
                        {"platform", "groq-dragonfly-10440.yaml cut to 5 racks (360 TSPs)"},
                        {"operation",
                         "[N x N] x [N x N] fp16, X column-wise splits, A and B streamed from the host "
                         "over PCIe Gen4 x16 in row order and C written back, timed without data (--timing-only), "
                         "the widest share simulated (--widest-share), A's rows in blocks where C does not fit"},
                        {"paper", "seed 000 Fig 15: fp16 TFLOPS vs N on 100, 200, 300 TSPs (numbers not in the text)"}};
  fmt::print("[N x N] x [N x N], fp16, column splits, inputs over PCIe (seed 000 Fig 15)\n");
  fmt::print("{:>6} {:>7} {:>7} {:>12} {:>10} {:>11} {:>15} {:>16}\n", "TSPs", "N", "blocks", "time ms", "TFLOPS",
             "MXM util %", "PCIe GB/s/TSP", "needed GB/s/TSP");
  std::map<uint64_t, std::vector<double>> ns, tf;
  nlohmann::json rows = nlohmann::json::array();
  for (const systems::Job& j : r.jobs) {
    const nlohmann::json& w = j.result["workload"];
    if (!w["timing_only"].get<bool>() || w["simulated_ps"] != w["predicted_ps"])
      throw core::ConfigError(fmt::format("matmul-cluster: a point missed its prediction ({})", j.dir));
    sched::MatmulRequest q;
    sched::parse_shape(w["shape"].get<std::string>(), q);
    const uint64_t x = w["tsps"].get<uint64_t>();
    // host_GBps counts the simulated TSPs' writes (the widest share's).
    const double per_tsp = w["host_GBps"].get<double>() / w["simulated_tsps"].get<double>();
    fmt::print("{:>6} {:>7} {:>7} {:>12.1f} {:>10.0f} {:>11.1f} {:>15.1f} {:>16.1f}\n", x, q.N,
               w["blocks"].get<uint64_t>(), w["simulated_ps"].get<double>() / 1e9, w["tflops"].get<double>(),
               w["mxm_utilization_pct"].get<double>(), per_tsp, w["host_GBps_needed_per_tsp"].get<double>());
    ns[x].push_back(static_cast<double>(q.N));
    tf[x].push_back(w["tflops"].get<double>());
    rows.push_back({{"tsps", x},
                    {"N", q.N},
                    {"blocks", w["blocks"]},
                    {"time_ms", w["simulated_ps"].get<double>() / 1e9},
                    {"tflops", w["tflops"]},
                    {"mxm_utilization_pct", w["mxm_utilization_pct"]},
                    {"pcie_GBps_per_tsp", per_tsp},
                    {"needed_GBps_per_tsp", w["host_GBps_needed_per_tsp"]}});
  }
  out["points"] = rows;
  out["checked"] = checked_companions(opt, "matmul-cluster-checked", r, {"shape", "tsps"},
                                      {"simulated_ps", "predicted_ps", "blocks", "host_GBps"});
  print_companions(out["checked"], "the widest share's C bit-exact against the host reference");
  fmt::print(
      "\nEvery TSP streams all of A once (2 N^2 bytes) through its 27.4 GB/s link while computing N / X columns: "
      "the\ncluster's TFLOPS are about N x 27.4 G whatever X while the MXMs wait. At N = 650,000 a TSP's C does "
      "not fit its\nSRAM: A's rows go in blocks and B (N x N / X) is streamed again for every block, so the link "
      "stays the limit\n(docs/compute.md; the seed compares with 432 V100s at about 2,800 fp64 TFLOPS on this "
      "size).\n");
  systems::Chart chart{"[N x N] x [N x N] on X TSPs, column splits, inputs over PCIe (seed 000 Fig 15)", "N",
                       "fp16 TFLOPS", ""};
  for (const auto& [x, n] : ns) chart.series.push_back({fmt::format("{} TSPs", x), n, tf[x]});
  systems::save_result(opt, out, chart);
  return 0;
}

int cholesky(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<nlohmann::json> pts = checked_points(r, "cholesky");
  nlohmann::json out = {
      {"experiment", "cholesky"},
      {"platform", "groq-node.yaml (1 to 8 TSPs)"},
      {"operation", "A = L L^T, A n x n binary32, block-cyclic 320 rows per TSP, L in fp16 on the MXM"},
      {"paper",
       "seed 000 Fig 19: speed-up 1.2x, 1.4x, 1.5x on 2, 4, 8 TSPs; 14.9 fp16 TFLOPS on 4 "
       "TSPs, 22.4 on 8"}};
  fmt::print("Cholesky A = L L^T on a GroqNode (seed 000 Fig 19)\n");
  fmt::print("{:>6} {:>5} {:>12} {:>9} {:>8} {:>11} {:>10}\n", "n", "TSPs", "time us", "speed-up", "TFLOPS",
             "MXM util %", "residual");
  // Speed-up over the same n on one TSP.
  std::map<uint64_t, double> one;
  for (const nlohmann::json& w : pts)
    if (w["tsps"].get<uint64_t>() == 1) one[w["n"].get<uint64_t>()] = w["simulated_ps"].get<double>();
  std::map<uint64_t, std::vector<double>> by_n_tsps, by_n_time, by_n_speedup, by_n_tflops;
  nlohmann::json rows = nlohmann::json::array();
  for (const nlohmann::json& w : pts) {
    const uint64_t n = w["n"].get<uint64_t>(), t = w["tsps"].get<uint64_t>();
    const double us = w["simulated_ps"].get<double>() / 1e6;
    const double sp = one.count(n) ? one[n] / w["simulated_ps"].get<double>() : 0.0;
    fmt::print("{:>6} {:>5} {:>12.1f} {:>9.2f} {:>8.2f} {:>11.2f} {:>10.2e}\n", n, t, us, sp, w["tflops"].get<double>(),
               w["mxm_utilization_pct"].get<double>(), w["residual"].get<double>());
    by_n_tsps[n].push_back(static_cast<double>(t));
    by_n_time[n].push_back(us);
    by_n_speedup[n].push_back(sp);
    by_n_tflops[n].push_back(w["tflops"].get<double>());
    rows.push_back({{"n", n},
                    {"tsps", t},
                    {"time_us", us},
                    {"speedup", sp},
                    {"tflops", w["tflops"]},
                    {"mxm_utilization_pct", w["mxm_utilization_pct"]},
                    {"residual", w["residual"]}});
  }
  out["points"] = rows;
  fmt::print("\npaper: 1.2x, 1.4x, 1.5x on 2, 4, 8 TSPs; 14.9 TFLOPS on 4, 22.4 on 8 (its n not given).\n");
  systems::Chart a{"Cholesky: speed-up over one TSP (seed 000 Fig 19)", "TSPs", "speed-up", ""};
  systems::Chart b{"Cholesky: execution time per n vs TSPs (seed 000 Fig 19 c)", "TSPs", "time (us)", ""};
  for (const auto& [n, ts] : by_n_tsps) {
    a.series.push_back({fmt::format("n = {}", n), ts, by_n_speedup[n]});
    b.series.push_back({fmt::format("n = {}", n), ts, by_n_time[n]});
  }
  a.series.push_back({"paper", {1, 2, 4, 8}, {1.0, 1.2, 1.4, 1.5}});
  systems::save_result(opt, out, {{"speedup", a}, {"time", b}});
  return 0;
}

/// The latencies of a launched BERT run (<dir>/bert_runs.csv), ps.
std::vector<double> run_latencies(const std::string& dir) {
  std::ifstream f(dir + "/bert_runs.csv");
  if (!f) throw core::ConfigError(fmt::format("bert: {}/bert_runs.csv is missing", dir));
  std::string line;
  std::getline(f, line);  // header
  std::vector<double> out;
  while (std::getline(f, line)) {
    const size_t a = line.find(','), b = line.find(',', a + 1);
    if (a == std::string::npos || b == std::string::npos)
      throw core::ConfigError(fmt::format("bert: {}/bert_runs.csv: malformed line '{}'", dir, line));
    out.push_back(std::stod(line.substr(a + 1, b - a - 1)));
  }
  return out;
}

int bert(const ExperimentOptions& opt) {
  // Fig 18: throughput on 1, 4, 8, 16 TSPs, six encoders each.
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  nlohmann::json out = {{"experiment", "bert"},
                        {"platform", "groq-dragonfly-264.yaml (Fig 18), groq-node.yaml (Fig 17)"},
                        {"model", "BERT-Large encoders: hidden 1024, 16 heads, ffn 4096, 384 positions, fp16 weights"},
                        {"paper",
                         "seed 000 Fig 18: realized throughput linear in the TSPs (6, 24, 48, 96 encoders on 1, 4, "
                         "8, 16); Fig 17: 99 % of 24,240 runs under 1,225 us, all by 1,300 us, the compiler's "
                         "estimate within 2 % of most"}};
  fmt::print("BERT-Large encoders pipelined over TSPs, six per TSP (seed 000 Fig 18), timed without data\n");
  fmt::print("{:>5} {:>9} {:>13} {:>13} {:>9} {:>11} {:>11}\n", "TSPs", "encoders", "latency us", "interval us",
             "TFLOPS", "normalized", "MXM util %");
  double one = 0;
  std::vector<double> xs, norm, ideal;
  nlohmann::json rows = nlohmann::json::array();
  for (const systems::Job& j : r.jobs) {
    const nlohmann::json& w = j.result["workload"];
    if (w["simulated_ps"] != w["predicted_ps"])
      throw core::ConfigError(fmt::format("bert: a point missed its prediction ({})", j.dir));
    const double t = w["tsps"].get<double>(), tf = w["tflops"].get<double>();
    if (t == 1) one = tf;
    const double n = one > 0 ? tf / one : 0.0;
    fmt::print("{:>5} {:>9} {:>13.1f} {:>13.1f} {:>9.1f} {:>11.2f} {:>11.1f}\n", w["tsps"].get<uint64_t>(),
               w["encoders"].get<uint64_t>(), w["latency_ps"].get<double>() / 1e6, w["interval_ps"].get<double>() / 1e6,
               tf, n, w["mxm_utilization_pct"].get<double>());
    xs.push_back(t);
    norm.push_back(n);
    ideal.push_back(t);
    rows.push_back({{"tsps", w["tsps"]},
                    {"encoders", w["encoders"]},
                    {"latency_us", w["latency_ps"].get<double>() / 1e6},
                    {"interval_us", w["interval_ps"].get<double>() / 1e6},
                    {"tflops", tf},
                    {"normalized", n},
                    {"mxm_utilization_pct", w["mxm_utilization_pct"]}});
  }
  out["throughput"] = rows;
  out["throughput_checked"] = checked_companions(opt, "bert-checked", r, {"encoders", "tsps", "inferences"},
                                                 {"simulated_ps", "predicted_ps", "latency_ps", "interval_ps"});
  print_companions(out["throughput_checked"], "every inference's output bit-exact against the host reference");
  systems::Chart a{"BERT-Large: realized throughput vs TSPs, six encoders per TSP (seed 000 Fig 18)", "TSPs",
                   "throughput / one TSP's", ""};
  a.series.push_back({"simulated", xs, norm});
  a.series.push_back({"linear (paper)", xs, ideal});

  // Fig 17: one inference on 4 TSPs launched by the host runtime, many times.
  systems::ExperimentOptions lo = opt;
  lo.name = "bert-latency";
  const systems::SweepResult lr = systems::run_experiment_sweep(lo);
  const systems::Job& lj = *std::max_element(lr.jobs.begin(), lr.jobs.end(), [](const auto& x, const auto& y) {
    return x.result["workload"]["inferences"].template get<uint64_t>() <
           y.result["workload"]["inferences"].template get<uint64_t>();
  });  // the most runs
  const nlohmann::json& lw = lj.result["workload"];
  std::vector<double> lat = run_latencies(lj.dir);
  const double pred = lw["predicted_latency_ps"].get<double>() / 1e6;
  std::sort(lat.begin(), lat.end());
  // 5 us bins, as the paper's histogram.
  std::map<int64_t, double> bins;
  for (double l : lat) bins[static_cast<int64_t>(std::floor(l / 1e6 / 5.0))] += 1;
  std::vector<double> bx, by;
  for (const auto& [b, n] : bins) bx.push_back(b * 5.0 + 2.5), by.push_back(n);
  fmt::print("\nOne BERT-Large inference on 4 TSPs launched {} times by the host runtime (seed 000 Fig 17)\n",
             lat.size());
  fmt::print(
      "  compiler's estimate {:.1f} us; latency min {:.1f}, mean {:.1f}, p99 {:.1f}, max {:.1f} us; {:.1f}% "
      "within 2% of the estimate\n",
      pred, lat.front() / 1e6, lw["latency_mean_ps"].get<double>() / 1e6, lw["latency_p99_ps"].get<double>() / 1e6,
      lat.back() / 1e6, lw["within_2pct"].get<double>());
  out["latency"] = {{"runs", lat.size()},
                    {"predicted_us", pred},
                    {"min_us", lat.front() / 1e6},
                    {"mean_us", lw["latency_mean_ps"].get<double>() / 1e6},
                    {"p99_us", lw["latency_p99_ps"].get<double>() / 1e6},
                    {"max_us", lat.back() / 1e6},
                    {"within_2pct", lw["within_2pct"]},
                    {"bins_us", bx},
                    {"counts", by}};
  // The same launches with data: each run's latency (its jitter draws are
  // the first ones of the same seed) equal to the timed run's.
  out["latency_checked"] =
      checked_companions(opt, "bert-latency-checked", lr, {"encoders", "tsps", "launched"}, {"predicted_latency_ps"});
  for (const nlohmann::json& row : out["latency_checked"]) {
    const std::vector<double> with = run_latencies(row["dir"].get<std::string>());
    const std::vector<double> without = run_latencies(row["timed_dir"].get<std::string>());
    if (with.empty() || with.size() != row["inferences"].get<uint64_t>() || with.size() > without.size() ||
        !std::equal(with.begin(), with.end(), without.begin()))
      throw core::ConfigError(fmt::format("bert: the launched runs of {} with data took other times than those of {}",
                                          row["dir"].get<std::string>(), row["timed_dir"].get<std::string>()));
  }
  print_companions(out["latency_checked"], "launched runs, outputs bit-exact, the same latencies run by run");
  systems::Chart b{"BERT-Large on 4 TSPs: latency of launched runs, 5 us bins (seed 000 Fig 17)", "latency (us)",
                   "runs", ""};
  b.series.push_back({"runs", bx, by});
  b.series.push_back({"compiler's estimate", {pred, pred}, {0.0, *std::max_element(by.begin(), by.end())}});
  fmt::print("\npaper: linear throughput scaling; latency 99% under 1,225 us, all by 1,300 us (docs/compute.md)\n");
  systems::save_result(opt, out, {{"throughput", a}, {"latency", b}});
  return 0;
}

const bool registered =
    systems::register_experiment({"matmul-single",
                                  "seed 000 Fig 13: MXM utilization of [2304 x 4096] x [4096 x N] on one TSP",
                                  matmul_single}) &&
    systems::register_experiment(
        {"matmul-scale", "seed 000 Fig 14: [800 x 32576] x [32576 x 8192] on 8 to 104 TSPs", matmul_scale}) &&
    systems::register_experiment({"matmul-cluster",
                                  "seed 000 Fig 15: [N x N] x [N x N] on 100, 200, 300 TSPs, column splits, inputs "
                                  "over PCIe (timed without data; N = 32,000 checked with data)",
                                  matmul_cluster}) &&
    systems::register_experiment(
        {"cholesky", "seed 000 Fig 19: block-cyclic Cholesky on 1, 2, 4, 8 TSPs: speed-up and TFLOPS", cholesky}) &&
    systems::register_experiment({"bert",
                                  "seed 000 Figs 17, 18: BERT-Large pipelined over 1, 4, 8, 16 TSPs, and the latency "
                                  "histogram of launched runs on 4 TSPs (timed without data; 1 and 4 TSPs and two "
                                  "launches checked with data)",
                                  bert});

}  // namespace

}  // namespace fabricvp::groq
