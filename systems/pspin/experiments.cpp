// Experiments of seed 004 (Flare on PsPIN-like switches), made of checked runs.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "systems/experiment.h"

namespace fabricvp::pspin {

namespace {

using systems::ExperimentOptions;
using systems::Job;

// flare-single: bandwidth vs cores for each kernel, in order and staggered,
// with the K / tau model beside each point (sweeps/experiments/flare-single.yaml).
int flare_single(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<std::string> clusters = systems::values_of(r.spec, "sys.switch0.clusters");
  const std::vector<std::string> algs = systems::values_of(r.spec, "flare.algorithm");
  const std::vector<std::string> stag = systems::values_of(r.spec, "flare.stagger");
  if (r.jobs.size() != clusters.size() * algs.size() * stag.size())
    throw core::ConfigError(
        fmt::format("{}: flare-single takes the axes clusters x algorithm x stagger only", r.spec.file));
  fmt::print(
      "Flare on one switch, 8 hosts, 256 KiB int32 sum, window 16 (clusters of 8 cores at 1 GHz)\n"
      "{:>5} {:>7} {:>9} {:>14} {:>11} {:>11} {:>8} {:>10} {:>12}\n",
      "cores", "kernel", "staggered", "completion us", "algbw GB/s", "model GB/s", "sim/mod", "tau cyc", "L2 peak B");
  nlohmann::json out = {
      {"experiment", "flare-single"},
      {"platform", "flare-switch.yaml"},
      {"definition",
       "model_GBps = K cores x clock / tau / hosts x block bytes (seed 004's switch bandwidth, tau = the measured mean "
       "cycles of the aggregation handler, waits included); algbw_GBps = vector bytes / completion time"}};
  systems::Chart chart{"Flare on one switch: allreduce bandwidth per host vs cores (seed 004)", "cores",
                       "bandwidth per host (GB/s)", "kernel"};
  size_t i = 0;
  std::vector<systems::Series> sim(algs.size() * stag.size()), mod(algs.size() * stag.size());
  for (const std::string& c : clusters)
    for (size_t a = 0; a < algs.size(); ++a)
      for (size_t s = 0; s < stag.size(); ++s, ++i) {
        const nlohmann::json& res = r.jobs[i].result;
        const nlohmann::json& w = res["workload"];
        if (!w["verified"].get<bool>()) throw std::runtime_error("unverified run in the flare-single experiment");
        const uint32_t cores = static_cast<uint32_t>(std::stoul(c)) * 8;
        const double sim_bw = w["algbw_GBps"].get<double>(), model = w["model_GBps"].get<double>();
        const uint64_t l2 = res["sys"]["switch0"]["l2_peak_bytes"].get<uint64_t>();
        const bool st = stag[s] == "true";
        fmt::print("{:>5} {:>7} {:>9} {:>14.1f} {:>11.3f} {:>11.3f} {:>8.2f} {:>10.0f} {:>12}\n", cores, algs[a],
                   st ? "yes" : "no", w["simulated_ps"].get<uint64_t>() / 1e6, sim_bw, model, sim_bw / model,
                   w["ph_cycles_mean"].get<double>(), l2);
        out["points"].push_back({{"cores", cores},
                                 {"algorithm", algs[a]},
                                 {"stagger", st},
                                 {"simulated_ps", w["simulated_ps"]},
                                 {"algbw_GBps", sim_bw},
                                 {"model_GBps", model},
                                 {"ph_cycles_mean", w["ph_cycles_mean"]},
                                 {"l2_peak_bytes", l2}});
        const std::string label = algs[a] + (st ? ", staggered" : "");
        sim[a * stag.size() + s].label = label;
        sim[a * stag.size() + s].x.push_back(cores);
        sim[a * stag.size() + s].y.push_back(sim_bw);
        mod[a * stag.size() + s].label = label + " (K / tau model)";
        mod[a * stag.size() + s].x.push_back(cores);
        mod[a * stag.size() + s].y.push_back(model);
      }
  fmt::print(
      "\nsim/mod near 1: the cores are the bottleneck, as the model assumes. In-order hosts make each block's\n"
      "handlers wait on its lock (tau grows); staggering removes most of it. With more than one cluster, a block's\n"
      "handlers also run on other clusters when its home cluster is full and pay remote L1 accesses. Below 1: the\n"
      "window leaves cores idle, or the tree's last contribution does most of a block's work. docs/flare.md.\n");
  for (auto& s : sim) chart.series.push_back(std::move(s));
  for (auto& s : mod) chart.series.push_back(std::move(s));
  chart.logx = true;
  for (const std::string& c : clusters) chart.xticks.emplace_back(std::stod(c) * 8, std::to_string(std::stoul(c) * 8));
  systems::save_result(opt, out, chart);
  return 0;
}

// flare-buffers: the input buffer (L2 packets) for ports in step or staggered, one cluster or hierarchical
// FCFS, against the input-buffer model (sweeps/experiments/flare-buffers.yaml, docs/flare.md).
int flare_buffers(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<std::string> clusters = systems::values_of(r.spec, "sys.switch0.clusters");
  const std::vector<std::string> cores = systems::values_of(r.spec, "sys.switch0.cores_per_cluster");
  const std::vector<std::string> stagger = systems::values_of(r.spec, "--stagger");
  const std::vector<std::string> service = systems::values_of(r.spec, "--define");
  if (clusters.size() != cores.size() || r.jobs.size() != clusters.size() * stagger.size() * service.size())
    throw core::ConfigError(
        fmt::format("{}: flare-buffers takes the axes (clusters, cores_per_cluster) zipped x --stagger x --define only",
                    r.spec.file));
  fmt::print(
      "A PsPIN switch's input buffer: 16 ports at 100 Gbit/s, 1 KiB packets back to back, 256 blocks of one packet "
      "per port,\na payload handler of constant service time tau (sw/handlers/kernels/service.c); measured and "
      "model (models/pspin/input_buffer.h)\n{:>10} {:>9} {:>5} {:>14} {:>12} {:>14} {:>12} {:>12} {:>11}\n",
      "switch", "ports", "tau", "L2 mean pkts", "model", "L2 peak pkts", "model", "wait ns", "model");
  nlohmann::json out = {
      {"experiment", "flare-buffers"},
      {"platform", "pspin-switch.yaml"},
      {"definition",
       "l2_mean_packets: time average of the packets in the L2 packet buffer (arrived, not yet fed back), first "
       "arrival to last feedback; wait_ns: mean wait of a packet for a free core; model_*: the input-buffer model "
       "with the measured tau"}};
  systems::Chart chart{"PsPIN switch input buffer per scheduling and port order (seed 004, Fig. 5)", "",
                       "packets in the L2 buffer, time average", "handler tau, simulated or model"};
  chart.bars = true;
  std::vector<systems::Series> sim(service.size()), mod(service.size());
  size_t i = 0;
  for (size_t c = 0; c < clusters.size(); ++c)
    for (size_t s = 0; s < stagger.size(); ++s)
      for (size_t v = 0; v < service.size(); ++v, ++i) {
        const nlohmann::json& res = r.jobs[i].result;
        const nlohmann::json& w = res["workload"];
        if (!w["verified"].get<bool>()) throw std::runtime_error("unverified run in the flare-buffers experiment");
        if (!w.value("model_applies", false))
          throw std::runtime_error(fmt::format(
              "flare-buffers point {}: the input-buffer model does not apply to the run (its summary says why)", i));
        const nlohmann::json& sw = res["sys"]["switch0"];
        const std::string layout =
            clusters[c] == "1" ? fmt::format("1 x {}", cores[c]) : fmt::format("{} x {}", clusters[c], cores[c]);
        const std::string ports = stagger[s] == "0" ? std::string("in step") : "stagger " + stagger[s];
        const double tau = w["ph_cycles_mean"].get<double>();
        const double mean = sw["l2_mean_packets"].get<double>(), mmean = w["model_l2_mean_packets"].get<double>();
        const uint64_t peak = sw["l2_peak_packets"].get<uint64_t>(), mpeak = w["model_l2_peak_packets"].get<uint64_t>();
        fmt::print("{:>10} {:>10} {:>5.0f} {:>14.1f} {:>12.1f} {:>14} {:>12} {:>12.1f} {:>11.1f}\n", layout, ports, tau,
                   mean, mmean, peak, mpeak, w["wait_ns"].get<double>(), w["model_wait_ns"].get<double>());
        out["points"].push_back({{"clusters", std::stoul(clusters[c])},
                                 {"cores_per_cluster", std::stoul(cores[c])},
                                 {"stagger", std::stoul(stagger[s])},
                                 {"ph_cycles_mean", tau},
                                 {"l2_mean_packets", mean},
                                 {"model_l2_mean_packets", mmean},
                                 {"l2_peak_packets", peak},
                                 {"model_l2_peak_packets", mpeak},
                                 {"wait_ns", w["wait_ns"]},
                                 {"model_wait_ns", w["model_wait_ns"]}});
        if (v == 0)
          chart.categories.push_back((clusters[c] == "1" ? std::string("FCFS, ") : std::string("hier. FCFS, ")) +
                                     ports);
        const double x = double(chart.categories.size() - 1);
        sim[v].label = fmt::format("tau {:.0f}", tau);
        mod[v].label = fmt::format("tau {:.0f} (model)", tau);
        sim[v].x.push_back(x);
        sim[v].y.push_back(mean);
        mod[v].x.push_back(x);
        mod[v].y.push_back(mmean);
      }
  fmt::print(
      "\nHierarchical FCFS sends a block's packets to its home cluster: ports in step deliver them together, and "
      "the cluster's\ncores take them in turns (each waits floor(j / cores) x tau); ports staggered by one block "
      "spread every step over the\nclusters and nothing waits while the cores keep up; staggered by a multiple of "
      "the clusters, they meet again.\ndocs/flare.md has the closed forms.\n");
  for (size_t v = 0; v < service.size(); ++v) {
    chart.series.push_back(std::move(sim[v]));
    chart.series.push_back(std::move(mod[v]));
  }
  systems::save_result(opt, out, chart);
  return 0;
}

// flare-scale: up to 512 cores at 400 Gbit/s ports: line rate or not, per kernel and data type
// (sweeps/experiments/flare-scale.yaml).
int flare_scale(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  const std::vector<std::string> clusters = systems::values_of(r.spec, "sys.switch0.clusters");
  const std::vector<std::string> algs = systems::values_of(r.spec, "flare.algorithm");
  const std::vector<std::string> dtypes = systems::values_of(r.spec, "--dtype");
  if (r.jobs.size() != clusters.size() * algs.size() * dtypes.size())
    throw core::ConfigError(
        fmt::format("{}: flare-scale takes the axes clusters x algorithm x dtype only", r.spec.file));
  // A host's line rate in vector bytes: 400 Gbit/s, of which 1024 of every 1068 bytes are the block's.
  const double line = 400.0 / 8 * 1024.0 / 1068.0;
  fmt::print(
      "Flare on one switch of clusters x 16 cores at 1 GHz (F extension), 8 hosts on 400 Gbit/s ports, staggered, "
      "256 KiB allreduce\nline rate per host: {:.1f} GB/s of vector data\n{:>5} {:>8} {:>6} {:>11} {:>10} {:>11} "
      "{:>8} {:>9}\n",
      line, "cores", "kernel", "dtype", "algbw GB/s", "of line", "model GB/s", "sim/mod", "tau cyc");
  nlohmann::json out = {{"experiment", "flare-scale"},
                        {"platform", "flare-switch.yaml"},
                        {"line_rate_GBps", line},
                        {"definition",
                         "line_rate_GBps = 400 Gbit/s x 1024 / 1068 (block bytes / packet bytes); model_GBps = K x "
                         "clock / tau / hosts x block bytes with the measured tau"}};
  systems::Chart chart{"Flare at 400 Gbit/s: bandwidth per host vs cores (seed 004)", "cores",
                       "bandwidth per host (GB/s)", "kernel, dtype"};
  std::vector<systems::Series> series(algs.size() * dtypes.size());
  systems::Series line_series{"line rate", {}, {}};
  size_t i = 0;
  for (const std::string& c : clusters) {
    const uint32_t cores = static_cast<uint32_t>(std::stoul(c)) * 16;
    line_series.x.push_back(cores);
    line_series.y.push_back(line);
    for (size_t a = 0; a < algs.size(); ++a)
      for (size_t d = 0; d < dtypes.size(); ++d, ++i) {
        const nlohmann::json& w = r.jobs[i].result["workload"];
        if (!w["verified"].get<bool>()) throw std::runtime_error("unverified run in the flare-scale experiment");
        const double bw = w["algbw_GBps"].get<double>(), model = w["model_GBps"].get<double>();
        fmt::print("{:>5} {:>8} {:>6} {:>11.3f} {:>9.1f}% {:>11.3f} {:>8.2f} {:>9.0f}\n", cores, algs[a], dtypes[d], bw,
                   100 * bw / line, model, bw / model, w["ph_cycles_mean"].get<double>());
        out["points"].push_back({{"cores", cores},
                                 {"algorithm", algs[a]},
                                 {"dtype", dtypes[d]},
                                 {"simulated_ps", w["simulated_ps"]},
                                 {"algbw_GBps", bw},
                                 {"line_fraction", bw / line},
                                 {"model_GBps", model},
                                 {"ph_cycles_mean", w["ph_cycles_mean"]}});
        systems::Series& se = series[a * dtypes.size() + d];
        se.label = algs[a] + ", " + dtypes[d];
        se.x.push_back(cores);
        se.y.push_back(bw);
      }
  }
  double best = 0;
  for (const auto& p : out["points"]) best = std::max(best, p["line_fraction"].get<double>());
  const double most = std::stod(clusters.back()) * 16;
  fmt::print(
      "\nBest: {:.1f} % of line rate. The model says what line rate takes: K x clock / tau / hosts x block "
      "bytes >= line rate,\ni.e. tau <= {:.0f} cycles per contribution with {:.0f} cores (measured: the tau "
      "column; lock waits and remote L1 accesses included). docs/flare.md.\n",
      100 * best, most * 1e9 * 1024.0 / 8 / (line * 1e9), most);
  for (auto& s : series) chart.series.push_back(std::move(s));
  chart.series.push_back(std::move(line_series));
  chart.logx = true;
  for (const std::string& c : clusters)
    chart.xticks.emplace_back(std::stod(c) * 16, std::to_string(std::stoul(c) * 16));
  systems::save_result(opt, out, chart);
  return 0;
}

// flare-fattree: in-network (dense kernels, and the sparse kernel on sparse gradients) against the host ring on
// the 64-host fat tree: time and bytes on the wire (sweeps/experiments/flare-fattree.yaml).
int flare_fattree(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  // Each point: its size, and its kernel (flare.algorithm, or "sparse D" with --sparse).
  std::vector<std::string> sizes, labels;
  for (const systems::SweepPoint& p : r.points) {
    sizes.push_back(systems::param_or(p, "--bytes", ""));
    const std::string d = systems::param_or(p, "--sparse", "");
    labels.push_back(d.empty() ? systems::param_or(p, "flare.algorithm", "") : "sparse " + d);
    if (sizes.back().empty() || labels.back().empty())
      throw core::ConfigError(
          fmt::format("{}: flare-fattree takes --bytes and flare.algorithm (or --sparse) at every point", r.spec.file));
  }
  fmt::print(
      "Flare on the 64-host fat tree (8 leaves of 8 hosts, 1 spine, 100 Gbit/s), fp32 sum, staggered\n"
      "{:>10} {:>13} {:>14} {:>11} {:>16} {:>16} {:>12}\n",
      "size", "kernel", "completion us", "algbw GB/s", "host links B", "leaf-spine B", "ring / this");
  nlohmann::json out = {
      {"experiment", "flare-fattree"},
      {"platform", "flare-fattree-64.yaml"},
      {"definition",
       "host links B = bytes sent by the hosts + bytes they received; leaf-spine B = bytes on the links between "
       "leaves and spine (both directions); ring / this = the ring's host-link bytes over this run's, at the same "
       "size; sparse D: a share D of each host's elements nonzero, reduced by the sparse kernel"}};
  systems::Chart chart{"Flare on the 64-host fat tree: traffic on the host links (seed 004)", "kernel",
                       "host-link bytes / (64 x vector bytes)", "size"};
  auto host_bytes = [](const nlohmann::json& w) {
    return w["wire_bytes_up"].get<double>() + w["wire_bytes_down"].get<double>();
  };
  std::vector<std::string> categories;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const nlohmann::json& w = r.jobs[i].result["workload"];
    if (!w["verified"].get<bool>()) throw std::runtime_error("unverified run in the flare-fattree experiment");
    double ring_bytes = 0;
    for (size_t j = 0; j < r.jobs.size(); ++j)
      if (sizes[j] == sizes[i] && labels[j] == "ring") ring_bytes = host_bytes(r.jobs[j].result["workload"]);
    const double host = host_bytes(w);
    fmt::print("{:>10} {:>13} {:>14.1f} {:>11.3f} {:>16.0f} {:>16} {:>12}\n", sizes[i], labels[i],
               w["simulated_ps"].get<uint64_t>() / 1e6, w["algbw_GBps"].get<double>(), host,
               w["wire_bytes_fabric"].get<uint64_t>(),
               ring_bytes > 0 ? fmt::format("{:.2f}", ring_bytes / host) : std::string("-"));
    nlohmann::json point = {{"bytes", sizes[i]},
                            {"kernel", labels[i]},
                            {"simulated_ps", w["simulated_ps"]},
                            {"algbw_GBps", w["algbw_GBps"]},
                            {"host_link_bytes", host},
                            {"fabric_bytes", w["wire_bytes_fabric"]}};
    if (ring_bytes > 0) point["ring_over_this"] = ring_bytes / host;
    out["points"].push_back(point);
    auto c = std::find(categories.begin(), categories.end(), labels[i]);
    if (c == categories.end()) c = categories.insert(categories.end(), labels[i]);
    auto se = std::find_if(chart.series.begin(), chart.series.end(),
                           [&](const systems::Series& x) { return x.label == sizes[i]; });
    if (se == chart.series.end()) se = chart.series.insert(chart.series.end(), systems::Series{sizes[i], {}, {}});
    se->x.push_back(static_cast<double>(c - categories.begin()));
    // the vector's bytes: algbw (GB/s = bytes/ns) x completion
    const double vector = w["algbw_GBps"].get<double>() * w["simulated_ps"].get<double>() / 1000.0;
    se->y.push_back(vector > 0 ? host / (64.0 * vector) : 0.0);
  }
  chart.categories = categories;
  chart.bars = true;
  fmt::print(
      "\nThe slides claim about 2x less traffic for in-network aggregation: 2 (n - 1) / n = {:.2f} for 64 "
      "hosts, measured above.\nSparse blocks carry (index, value) pairs: 8 bytes per nonzero element, and the "
      "result fills in (docs/flare.md).\nThe in-network runs are slower here: docs/flare.md (flare-scale) says "
      "why.\n",
      2.0 * 63 / 64);
  systems::save_result(opt, out, chart);
  return 0;
}

// flare-training: a training iteration whose all-reduces run on the Flare hosts, in the switches or on the host
// ring: compute, communication and exposed communication (sweeps/experiments/flare-training.yaml).
int flare_training(const ExperimentOptions& opt) {
  const systems::SweepResult r = systems::run_experiment_sweep(opt);
  fmt::print(
      "A training iteration on the Flare hosts (8 hosts, one switch of 32 cores with the F extension, 100 Gbit/s),\n"
      "bf16 gradients, every all-reduce checked\n"
      "{:>10} {:>9} {:>13} {:>12} {:>12} {:>12} {:>10} {:>14}\n",
      "workload", "kernel", "iteration ms", "compute ms", "comm ms", "exposed ms", "exposed %", "host links B");
  nlohmann::json out = {
      {"experiment", "flare-training"},
      {"platform", "flare-switch.yaml"},
      {"definition",
       "comm ms: time with at least one all-reduce in flight; exposed ms: time the last host waited for an all-reduce "
       "with no compute to run (docs/workloads.md); host links B: bytes sent and received by the hosts"}};
  systems::Chart chart{"A training iteration on Flare hosts: where the time goes (seed 004)", "kernel", "ms", "part"};
  systems::Series compute{"compute", {}, {}}, exposed{"exposed communication", {}, {}};
  std::vector<std::string> categories;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const nlohmann::json& w = r.jobs[i].result["workload"];
    if (!w["verified"].get<bool>()) throw std::runtime_error("unverified run in the flare-training experiment");
    const std::string workload = systems::param(r.points[i], "--workload");
    const std::string name = workload.substr(workload.find_last_of('/') + 1);
    const std::string alg = systems::param(r.points[i], "flare.algorithm");
    const double host = w["wire_bytes_up"].get<double>() + w["wire_bytes_down"].get<double>();
    fmt::print("{:>10} {:>9} {:>13.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>10.1f} {:>14.0f}\n",
               name.substr(0, name.find('.')), alg, w["iteration_ps"].get<double>() / 1e9,
               w["compute_ps"].get<double>() / 1e9, w["comm_busy_ps"].get<double>() / 1e9,
               w["exposed_comm_ps"].get<double>() / 1e9, w["exposed_comm_pct"].get<double>(), host);
    out["points"].push_back({{"workload", workload},
                             {"algorithm", alg},
                             {"iteration_ps", w["iteration_ps"]},
                             {"compute_ps", w["compute_ps"]},
                             {"comm_busy_ps", w["comm_busy_ps"]},
                             {"exposed_comm_ps", w["exposed_comm_ps"]},
                             {"host_link_bytes", host}});
    categories.push_back(alg);
    compute.x.push_back(static_cast<double>(i));
    compute.y.push_back(w["compute_ps"].get<double>() / 1e9);
    exposed.x.push_back(static_cast<double>(i));
    exposed.y.push_back(w["exposed_comm_ps"].get<double>() / 1e9);
  }
  chart.series = {compute, exposed};
  chart.categories = categories;
  chart.bars = true;
  fmt::print(
      "\nThe iteration is compute plus exposed communication; in-network aggregation moves 2 (n - 1) / n = 1.75x fewer "
      "bytes\nthan the ring, but these switches' cores aggregate far below line rate (docs/flare.md).\n");
  systems::save_result(opt, out, chart);
  return 0;
}

const bool training_registered = systems::register_experiment(
    {"flare-training",
     "seed 004: a ResNet-50 training iteration on Flare hosts, all-reduces in the switches or on the host ring",
     flare_training});

const bool fattree_registered = systems::register_experiment(
    {"flare-fattree", "seed 004: Flare on the 64-host fat tree against the host ring: time and bytes on the wire",
     flare_fattree});

const bool buffers_registered = systems::register_experiment(
    {"flare-buffers",
     "seed 004: a PsPIN switch's input buffer, ports in step or staggered, one cluster or hierarchical FCFS, with "
     "the input-buffer model",
     flare_buffers});

const bool scale_registered = systems::register_experiment(
    {"flare-scale", "seed 004: Flare on a switch of up to 512 cores at 400 Gbit/s: line rate per kernel and dtype",
     flare_scale});

const bool registered = systems::register_experiment(
    {"flare-single", "seed 004: Flare on one switch, bandwidth vs cores, kernel and staggering, with the K/tau model",
     flare_single});

}  // namespace

}  // namespace fabricvp::pspin
