// Experiments of seed 000 (Groq), each made of checked simulation runs:
//   nonminimal         Fig 10: latency of one tensor between two TSPs of a node
//                      vs size, minimal route only and with 1, 2, 4 and 6
//                      detours, and the size from which detours pay off.
//   hop-latency        §5.6: one vector across the 256-TSP system's longest
//                      (3-cable) route, per hop and in all; and a one-vector
//                      all-reduce over all 256 TSPs.
//   allreduce-sweep    Fig 16: realized 8-way all-reduce bandwidth vs size.
//   bandwidth-profile  Fig 2: bisection bandwidth per TSP vs system size, from
//                      the generated cabling, with the packaging cliffs.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "models/core/config.h"
#include "models/core/param.h"
#include "systems/experiment.h"

namespace fs = std::filesystem;

namespace fabricvp::groq {

namespace {

using systems::ExperimentOptions;
using systems::Job;
using systems::save_result;
using systems::size_name;

/// A sweep axis of whole numbers (sizes, path counts).
std::vector<uint64_t> numbers(const systems::SweepSpec& s, const std::string& key) {
  std::vector<uint64_t> out;
  for (const std::string& v : systems::values_of(s, key)) {
    uint64_t n = 0;
    if (!core::detail::parse_value(v, n))
      throw core::ConfigError(fmt::format("{}: axis {}: '{}' is not a whole number", s.file, key, v));
    out.push_back(n);
  }
  return out;
}

int nonminimal(const ExperimentOptions& opt) {
  // Points: sweeps/experiments/nonminimal.yaml (sizes x route counts, sizes outermost).
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<Job>& jobs = r.jobs;
  const std::vector<uint64_t> sizes = numbers(r.spec, "--bytes");
  std::vector<uint32_t> detours;
  for (uint64_t paths : numbers(r.spec, "sched.paths")) detours.push_back(static_cast<uint32_t>(paths - 1));
  nlohmann::json out = {{"experiment", "nonminimal"},
                        {"platform", "groq-node.yaml"},
                        {"transfer", "p2p rank 0 -> rank 1 (direct cable), fp32"},
                        {"sizes_bytes", sizes},
                        {"detours", detours}};
  fmt::print("Latency of one tensor from TSP 0 to TSP 1 of a GroqNode (us), minimal route and up to k detours\n");
  fmt::print("{:>10} {:>12}", "bytes", "minimal");
  for (size_t k = 1; k < detours.size(); ++k) fmt::print(" {:>11}", fmt::format("+{} nonmin", detours[k]));
  fmt::print("   routes used\n");
  std::vector<std::vector<double>> lat(detours.size());
  std::vector<std::vector<uint64_t>> used(detours.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    fmt::print("{:>10}", size_name(sizes[i]));
    std::string routes;
    for (size_t k = 0; k < detours.size(); ++k) {
      const nlohmann::json& w = jobs[i * detours.size() + k].result["workload"];
      if (!w["verified"].get<bool>() || w["simulated_ps"] != w["predicted_ps"])
        throw core::ConfigError("nonminimal: a point was not verified or missed its prediction");
      lat[k].push_back(w["simulated_ps"].get<double>() / 1e6);
      used[k].push_back(w["paths"].get<uint64_t>());
      fmt::print(k ? " {:>11.3f}" : " {:>12.3f}", lat[k].back());
      routes += fmt::format("{}{}", k ? "/" : "", used[k].back());
    }
    fmt::print("   {}\n", routes);
  }
  // Crossover: the smallest size at which some detour configuration is faster.
  uint64_t crossover = 0;
  for (size_t i = 0; i < sizes.size() && !crossover; ++i)
    for (size_t k = 1; k < detours.size(); ++k)
      if (lat[k][i] < lat[0][i]) crossover = sizes[i];
  for (size_t k = 0; k < detours.size(); ++k) {
    std::string key = k ? fmt::format("nonminimal_{}", detours[k]) : "minimal";
    out["latency_us"][key] = lat[k];
    out["routes_used"][key] = used[k];
  }
  out["crossover_bytes"] = crossover;
  double best = lat[0].back();
  for (size_t k = 1; k < detours.size(); ++k) best = std::min(best, lat[k].back());
  fmt::print(
      "\nnon-minimal routes first pay off at {} (seed 000 Fig 10: no benefit below ~8 kB); at {} the best "
      "is {:.1f}x faster than minimal\n",
      crossover ? size_name(crossover) : "never", size_name(sizes.back()), lat[0].back() / best);
  systems::Chart chart{"Tensor latency TSP 0 -> TSP 1 of a GroqNode (seed 000 Fig 10)", "tensor size (bytes)",
                       "latency (us)", "routes"};
  const std::vector<double> xs(sizes.begin(), sizes.end());
  for (size_t k = 0; k < detours.size(); ++k)
    chart.series.push_back({k ? fmt::format("minimal + {} non-minimal", detours[k]) : "minimal only", xs, lat[k]});
  chart.xticks = systems::size_ticks(xs);
  chart.logx = chart.logy = true;
  save_result(opt, out, chart);
  return 0;
}

int hop_latency(const ExperimentOptions& opt) {
  // sweeps/experiments/hop-latency.yaml: the 3-hop p2p on the Dragonfly
  // (rank 255 is 3 cables from rank 0 with the default cabling, checked
  // below), one hop in a node, the one-vector all-reduce.
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<Job>& jobs = r.jobs;
  if (systems::values_of(r.spec, "--workload") != std::vector<std::string>{"p2p", "p2p", "allreduce"})
    throw core::ConfigError(fmt::format(
        "{}: the hop-latency study runs the Dragonfly p2p, the one-hop p2p and the all-reduce, in that order",
        r.spec.file));
  const nlohmann::json& p2p = jobs[0].result["workload"];
  const nlohmann::json& one = jobs[1].result["workload"];
  const nlohmann::json& ar = jobs[2].result["workload"];
  for (const nlohmann::json* w : {&p2p, &one, &ar})
    if (!(*w)["verified"].get<bool>() || (*w)["simulated_ps"] != (*w)["predicted_ps"])
      throw core::ConfigError("hop-latency: a point was not verified or missed its prediction");
  const uint64_t hops = p2p["max_hops"].get<uint64_t>();
  const double total_ns = p2p["simulated_ps"].get<double>() / 1e3;
  const double per_hop = total_ns / static_cast<double>(hops);
  const double one_hop = one["simulated_ps"].get<double>() / 1e3;
  const double ar_ns = ar["simulated_ps"].get<double>() / 1e3;
  fmt::print("One 320-byte vector across the 256-TSP Dragonfly (groq-dragonfly-264, 1 spare node)\n");
  fmt::print("  longest minimal route       {} cables (local, global, local)\n", hops);
  fmt::print("  SEND issue -> in SRAM        {:.1f} ns = {:.1f} ns per hop (seed 000 §5.6: 722 ns per hop, 2,166 ns)\n",
             total_ns, per_hop);
  fmt::print("  one hop inside a node        {:.1f} ns\n", one_hop);
  fmt::print(
      "  one-vector all-reduce        {:.1f} ns over all 256 TSPs (reduce-scatter + all-gather: the network\n"
      "                               part is 2 x (1 + 3) hops, plus 7 + 31 dependent vector ADDs)\n",
      ar_ns);
  nlohmann::json out = {{"experiment", "hop-latency"},
                        {"platform", "groq-dragonfly-264.yaml"},
                        {"hops", hops},
                        {"per_hop_ns", per_hop},
                        {"total_ns", total_ns},
                        {"one_hop_in_node_ns", one_hop},
                        {"paper_per_hop_ns", 722},
                        {"paper_total_ns", 2166},
                        {"allreduce_one_vector_ns", ar_ns}};
  systems::Chart chart{"One 320-byte vector on the 256-TSP Dragonfly (seed 000 §5.6)", "", "ns", ""};
  chart.categories = {"1 hop in a node", fmt::format("{} hops, per hop", hops), fmt::format("{} hops", hops),
                      "all-reduce, 256 TSPs"};
  chart.series.push_back({"fabricvp", {0, 1, 2, 3}, {one_hop, per_hop, total_ns, ar_ns}});
  chart.series.push_back({"seed 000", {1, 2}, {722, 2166}});
  chart.bars = true;
  save_result(opt, out, chart);
  return 0;
}

int allreduce_sweep(const ExperimentOptions& opt) {
  // Points: sweeps/experiments/allreduce-sweep.yaml.
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<Job>& jobs = r.jobs;
  const std::vector<uint64_t> sizes = numbers(r.spec, "--bytes");
  fmt::print("Realized 8-way all-reduce on a GroqNode (fp32)\n{:>10} {:>14} {:>12} {:>12} {:>10}\n", "bytes",
             "completion us", "algbw GB/s", "busbw GB/s", "% of peak");
  nlohmann::json out = {{"experiment", "allreduce-sweep"}, {"platform", "groq-node.yaml"}, {"sizes_bytes", sizes}};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const nlohmann::json& w = jobs[i].result["workload"];
    if (!w["verified"].get<bool>() || w["simulated_ps"] != w["predicted_ps"])
      throw core::ConfigError("allreduce-sweep: a point was not verified or missed its prediction");
    fmt::print("{:>10} {:>14.3f} {:>12.2f} {:>12.2f} {:>9.1f}%\n", size_name(sizes[i]),
               w["simulated_ps"].get<double>() / 1e6, w["algbw_GBps"].get<double>(), w["busbw_GBps"].get<double>(),
               w["busbw_pct_of_peak"].get<double>());
    out["completion_us"].push_back(w["simulated_ps"].get<double>() / 1e6);
    out["algbw_GBps"].push_back(w["algbw_GBps"]);
    out["busbw_GBps"].push_back(w["busbw_GBps"]);
    out["busbw_pct_of_peak"].push_back(w["busbw_pct_of_peak"]);
  }
  systems::Chart chart{"8-way all-reduce on a GroqNode, fp32 (seed 000 Fig 16)", "size (bytes)", "GB/s", ""};
  const std::vector<double> xs(sizes.begin(), sizes.end());
  chart.series.push_back({"bus bandwidth", xs, out["busbw_GBps"].get<std::vector<double>>()});
  chart.series.push_back({"algorithm bandwidth", xs, out["algbw_GBps"].get<std::vector<double>>()});
  chart.xticks = systems::size_ticks(xs);
  chart.logx = true;
  save_result(opt, out, chart);
  return 0;
}

int bandwidth_profile(const ExperimentOptions& opt) {
  // Points: sweeps/experiments/bandwidth-profile.yaml (`fabricvp topology` of
  // each size). The largest elaborations are memory-heavy: one at a time.
  ExperimentOptions one = opt;
  one.jobs = 1;
  const systems::SweepResult r = systems::run_experiment_sweep(one);
  const std::vector<Job>& jobs = r.jobs;
  fmt::print(
      "Global (bisection) bandwidth per TSP vs system size, from the generated cabling\n{:>8} {:>10} {:>18} "
      "{:>16}\n",
      "TSPs", "cables", "bisection cables", "GB/s per TSP");
  nlohmann::json out = {{"experiment", "bandwidth-profile"},
                        {"definition",
                         "live cables across the packaging-aligned bisection (half the racks, nodes or TSPs) x one "
                         "direction's payload rate / TSPs on one side"}};
  for (const Job& j : jobs) {
    const nlohmann::json& t = j.result;
    fmt::print("{:>8} {:>10} {:>18} {:>16.2f}\n", t["chips"].get<uint64_t>(), t["cables"].get<uint64_t>(),
               t["bisection_cables"].get<uint64_t>(), t["bisection_GBps_per_tsp"].get<double>());
    out["tsps"].push_back(t["chips"]);
    out["bisection_GBps_per_tsp"].push_back(t["bisection_GBps_per_tsp"]);
  }
  fmt::print(
      "\nThe cliffs sit at the packaging boundaries of seed 000 Fig 2: one node (every TSP wired to every\n"
      "other), up to 33 nodes (every node pair one global cable), and racks (half the global ports leave\n"
      "the rack, one cable per rack pair).\n");
  systems::Chart chart{"Bisection bandwidth per TSP vs system size (seed 000 Fig 2)", "TSPs", "GB/s per TSP", ""};
  chart.series.push_back({"generated cabling", out["tsps"].get<std::vector<double>>(),
                          out["bisection_GBps_per_tsp"].get<std::vector<double>>()});
  chart.logx = true;
  for (double t : chart.series[0].x) chart.xticks.emplace_back(t, fmt::format("{}", static_cast<uint64_t>(t)));
  save_result(opt, out, chart);
  return 0;
}

const bool registered =
    systems::register_experiment(
        {"nonminimal", "seed 000 Fig 10: tensor latency in a node, minimal vs detours", nonminimal}) &&
    systems::register_experiment(
        {"hop-latency", "seed 000 §5.6: one vector over 3 hops of the 256-TSP Dragonfly", hop_latency}) &&
    systems::register_experiment(
        {"allreduce-sweep", "seed 000 Fig 16: 8-way all-reduce bandwidth vs size", allreduce_sweep}) &&
    systems::register_experiment(
        {"bandwidth-profile", "seed 000 Fig 2: bisection bandwidth per TSP vs system size", bandwidth_profile});

}  // namespace

}  // namespace fabricvp::groq
