// Statistics, summary and files of a training workload (docs/workloads.md):
// per iteration and in total the compute, the communication and the exposed
// communication of the NPU that finished last; per layer the same; every
// collective in collectives.csv, every link direction in links.csv, every
// optical plane's GPU pairs in traffic.csv (the measured traffic matrix).
#include <filesystem>
#include <optional>

#include "models/core/units.h"
#include "systems/npu/scenario.h"

namespace fabricvp::npusys {

using core::human_time;

namespace {

/// The NPU that finished last (the iteration time is its).
uint32_t critical_npu(const TrainingRun& t, uint32_t npus) {
  uint32_t best = 0;
  for (uint32_t n = 1; n < npus; ++n)
    if (t.times(n).end > t.times(best).end) best = n;
  return best;
}

/// Iterations to accuracy at the run's global batch (op graphs naming a table).
std::optional<optical::AccuracyEstimate> accuracy_of(const TrainingRun& t, size_t npus, uint64_t& global,
                                                     std::string& why) {
  global = t.placement() ? t.local_batch() * (npus / t.placement()->k) : 0;
  if (!t.accuracy_table()) return std::nullopt;
  return optical::iterations_to_accuracy(*t.accuracy_table(), t.accuracy_model(), global, why);
}

double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * static_cast<double>(part) / whole : 0.0; }

}  // namespace

void NpuScenario::report_training() {
  const TrainingRun& t = *m_train;
  const training::Workload& w = t.workload();
  const uint32_t crit = critical_npu(t, static_cast<uint32_t>(m_sys->npus.size()));
  const training::NpuTimes& tm = t.times(crit);
  auto num = [&](const char* group, const std::string& leaf, const char* unit, const char* desc, uint64_t v) {
    m_extra_num.emplace_back(nullptr, group, m_names.emplace_back(leaf).c_str(), unit, desc);
    m_extra_num.back().set(v);
  };
  auto str = [&](const char* group, const std::string& leaf, const char* desc, const std::string& v) {
    m_extra_str.emplace_back(nullptr, group, m_names.emplace_back(leaf).c_str(), "", desc);
    m_extra_str.back().set(v);
  };
  auto dbl = [&](const char* group, const std::string& leaf, const char* unit, const char* desc, double v) {
    m_extra_dbl.emplace_back(nullptr, group, m_names.emplace_back(leaf).c_str(), unit, desc);
    m_extra_dbl.back().set(v);
  };
  if (t.is_graph()) {
    str("workload", "kind", "what ran", t.is_opgraph() ? "opgraph" : "chakra");
    str("workload", "file",
        t.is_opgraph() ? "the op graph (SiP-ML's hybrid parallelism, sipml.*)"
                       : "the Chakra traces' prefix (<prefix>.<npu>.et)",
        w.file);
    if (const optical::Placement* p = t.placement()) {
      num("workload", "mp_gpus", "GPUs", "k: GPUs per model-parallel group", p->k);
      num("workload", "dp_groups", "groups", "l: data-parallel replicas", m_sys->npus.size() / p->k);
      num("workload", "local_batch", "samples", "samples each DP group runs per iteration", t.local_batch());
      num("workload", "delta", "GPUs", "Algorithm 1's reach: a GPU sends at most this far ahead in its group",
          p->delta);
      num("workload", "sub_ops", "sub-ops", "sub-ops of the balanced graph (one MP group)", p->subs.size());
      num("workload", "relocations", "sub-ops", "producers moved to bring a consumer within reach", p->relocations);
      num("workload", "relayed_hops", "hops", "relay hops of transfers out of reach", p->relayed_hops);
      dbl("workload", "placement_makespan_us", "us", "Algorithm 1's own estimate of the forward pass (compute only)",
          p->makespan_us);
      dbl("workload", "gpu_memory_GB", "GB",
          "the fullest GPU's weights, gradients and Adam state (16 bytes per parameter) and activations",
          t.gpu_memory_bytes() / 1e9);
    }
    uint64_t global = 0;
    std::string why;
    const auto est = accuracy_of(t, m_sys->npus.size(), global, why);
    if (t.placement()) num("workload", "global_batch", "samples", "local_batch x dp_groups", global);
    if (t.accuracy_table()) {
      if (est) {
        dbl("workload", "iterations_to_accuracy", "iterations",
            "iterations to the target accuracy at the global batch (the time-to-accuracy table)", est->iterations);
        dbl("workload", "time_to_accuracy_s", "s", "iteration_ps x iterations_to_accuracy",
            static_cast<double>(tm.end) * 1e-12 * est->iterations);
        str("workload", "accuracy_estimate", "which rows of the table the iterations come from", est->rule);
      } else {
        str("workload", "accuracy_estimate", "why there is no time to accuracy", why);
      }
    }
    uint64_t nodes = 0;
    for (const auto& g : t.graph().graphs()) nodes += g.nodes.size();
    num("workload", "nodes", "nodes", "nodes of every NPU's graph", nodes);
    num("workload", "p2p_transfers", "transfers", "point-to-point transfers (COMM_SEND / COMM_RECV pairs)",
        t.p2p_transfers());
  } else {
    str("workload", "kind", "what ran", "training");
    str("workload", "file", "the workload file", w.file);
    str("workload", "parallelism", "ASTRA-sim parallelism strategy", training::parallelism_name(w.parallelism));
    num("workload", "layers", "layers", "layers of the model", w.layers.size());
    num("workload", "iterations", "iterations", "training iterations simulated", t.iterations());
  }
  num("workload", "critical_npu", "", "the NPU that finished last (the times below are its)", crit);
  num("workload", "total_ps", "ps", "end of the last iteration and of every collective at the critical NPU", tm.end);
  num("workload", "iteration_ps", "ps", "total_ps / iterations", tm.end / t.iterations());
  num("workload", "compute_ps", "ps", "compute time (forward, input and weight gradients, recompute)", tm.compute);
  num("workload", "exposed_comm_ps", "ps",
      "exposed communication: time waiting for a collective with no compute to run", tm.exposed);
  num("workload", "comm_busy_ps", "ps", "time with at least one of its collectives in flight", tm.comm_busy);
  dbl("workload", "exposed_comm_pct", "%", "exposed_comm_ps / total_ps", pct(tm.exposed, tm.end));
  uint64_t collectives = 0, bytes = 0;
  for (const CollectiveRecord* r : t.records()) {
    ++collectives;
    bytes += r->bytes;
  }
  num("workload", "collectives", "collectives", "collectives run (one per layer pass, iteration and group)",
      collectives);
  if (t.data()) {
    num("workload", "collectives_checked", "collectives", "--data: collectives compared with the host reference",
        t.checked());
    num("workload", "mismatched_elements", "elements",
        "--data: elements that differ, all collectives and members and point-to-point transfers", t.mismatched());
    if (t.is_graph())
      num("workload", "p2p_checked", "transfers", "--data: point-to-point transfers whose received bytes were compared",
          t.p2p_checked());
  }
  num("workload", "collective_bytes", "bytes", "their sizes (per member, as the workload gives them), summed", bytes);
  namespace fs = std::filesystem;
  if (t.is_graph()) {
    t.write_collectives_csv((fs::path(m_out_dir) / "collectives.csv").string());
    t.write_links_csv((fs::path(m_out_dir) / "links.csv").string());
    t.write_traffic_csv((fs::path(m_out_dir) / "traffic.csv").string());
    return;
  }
  for (uint32_t it = 0; it < t.iterations(); ++it) {
    m_groups.emplace_back(fmt::format("workload.iteration{}", it));
    const uint64_t start = it == 0 ? 0 : tm.iteration_end[it - 1];
    const uint64_t c0 = it == 0 ? 0 : tm.iteration_compute[it - 1], e0 = it == 0 ? 0 : tm.iteration_exposed[it - 1];
    num(m_groups.back().c_str(), "end_ps", "ps", "end of the iteration's backward pass", tm.iteration_end[it]);
    num(m_groups.back().c_str(), "duration_ps", "ps", "from the previous iteration's end",
        tm.iteration_end[it] - start);
    num(m_groups.back().c_str(), "compute_ps", "ps", "compute in the iteration", tm.iteration_compute[it] - c0);
    num(m_groups.back().c_str(), "exposed_comm_ps", "ps", "exposed communication in the iteration",
        tm.iteration_exposed[it] - e0);
  }
  for (uint32_t l = 0; l < w.layers.size(); ++l) {
    m_groups.push_back(fmt::format("workload.layer{}", l));
    const char* g = m_groups.back().c_str();
    str(g, "name", "layer name", w.layers[l].name);
    for (uint32_t p = 0; p < 3; ++p) {
      const std::string pn = training::pass_name(p);
      num(g, pn + "_compute_ps", "ps", "compute of this pass, all iterations", tm.layer_compute[l][p]);
      if (w.layers[l].pass[p].comm != training::Comm::none && !t.loop().dims(l, p).empty()) {
        num(g, pn + "_comm_ps", "ps", "this pass's collectives, issue to result, all iterations", tm.layer_comm[l][p]);
        num(g, pn + "_exposed_ps", "ps", "time the NPU waited for them", tm.layer_exposed[l][p]);
      }
    }
  }
  t.write_collectives_csv((fs::path(m_out_dir) / "collectives.csv").string());
  t.write_links_csv((fs::path(m_out_dir) / "links.csv").string());
  t.write_traffic_csv((fs::path(m_out_dir) / "traffic.csv").string());
}

void NpuScenario::summarize_training(systems::Summary& sum) {
  const TrainingRun& t = *m_train;
  const training::Workload& w = t.workload();
  const uint32_t crit = critical_npu(t, static_cast<uint32_t>(m_sys->npus.size()));
  const training::NpuTimes& tm = t.times(crit);
  if (const optical::Placement* p = t.placement()) {
    uint64_t nodes = 0;
    for (const auto& g : t.graph().graphs()) nodes += g.nodes.size();
    sum.line("workload", fmt::format("{}: op graph, {} sub-ops on k = {} GPUs per MP group x l = {} DP groups of "
                                     "{} samples (delta {}, {} relocated, {} relay hops), {} nodes, {} elements, {}",
                                     w.file, p->subs.size(), p->k, m_sys->npus.size() / p->k, t.local_batch(), p->delta,
                                     p->relocations, p->relayed_hops, nodes, core::dtype_name(t.dtype()),
                                     t.data() ? "data checked" : "timing only"));
  } else if (t.is_graph()) {
    uint64_t nodes = 0;
    for (const auto& g : t.graph().graphs()) nodes += g.nodes.size();
    sum.line("workload", fmt::format("{}.<npu>.et: Chakra traces, {} nodes, {} elements, {}", w.file, nodes,
                                     core::dtype_name(t.dtype()), t.data() ? "data checked" : "timing only"));
  } else {
    sum.line("workload", fmt::format("{}: {}, {} layers, {} iteration{}, {} elements, {}", w.file,
                                     training::parallelism_name(w.parallelism), w.layers.size(), t.iterations(),
                                     t.iterations() == 1 ? "" : "s", core::dtype_name(t.dtype()),
                                     t.data() ? "data checked" : "timing only"));
  }
  const std::string& engine = m_sys->choices.ace_model.get();
  sum.line("collectives", fmt::format("{} (run {}, all-reduce {})", t.records().size(),
                                      engine == "none"    ? "on the NPU cores"
                                      : engine == "ideal" ? "by an ideal endpoint"
                                                          : "by the ACE",
                                      m_sys->algorithm_text(npu::CollectiveKind::allreduce)));
  for (uint32_t it = 0; it < tm.iteration_end.size(); ++it) {
    const uint64_t start = it == 0 ? 0 : tm.iteration_end[it - 1];
    const uint64_t c = tm.iteration_compute[it] - (it == 0 ? 0 : tm.iteration_compute[it - 1]);
    const uint64_t e = tm.iteration_exposed[it] - (it == 0 ? 0 : tm.iteration_exposed[it - 1]);
    sum.line(fmt::format("iteration {}", it),
             fmt::format("{} (compute {}, exposed communication {})", human_time(tm.iteration_end[it] - start),
                         human_time(c), human_time(e)));
  }
  sum.line("total", fmt::format("{} at npu{} (the last to finish): compute {} ({:.1f}%), exposed communication {} "
                                "({:.1f}%), collectives in flight {} ({:.1f}%)",
                                human_time(tm.end), crit, human_time(tm.compute), pct(tm.compute, tm.end),
                                human_time(tm.exposed), pct(tm.exposed, tm.end), human_time(tm.comm_busy),
                                pct(tm.comm_busy, tm.end)));
  uint64_t global = 0;
  std::string why;
  const auto est = accuracy_of(t, m_sys->npus.size(), global, why);
  if (est)
    sum.line("to accuracy", fmt::format("{:.3g} h: {:.0f} iterations of {} at the global batch of {} ({})",
                                        static_cast<double>(tm.end) * 1e-12 * est->iterations / 3600.0, est->iterations,
                                        human_time(tm.end), global, est->rule));
  else if (t.accuracy_table())
    sum.line("to accuracy", "not estimated: " + why);
  if (!t.data()) {
    sum.line("result", "timing only: collectives move no payload in a training run (--data moves and checks it)");
  } else if (t.mismatched() == 0) {
    sum.line("result", fmt::format("verified: {} collectives, every member's result bit-exact against the host "
                                   "reference",
                                   t.checked()));
  } else {
    sum.line("result", fmt::format("MISMATCH: {} element(s) differ", t.mismatched()));
    for (const std::string& b : t.mismatches()) sum.text("               " + b);
  }
}

void NpuScenario::tables_training(systems::Summary& sum) {
  const TrainingRun& t = *m_train;
  if (t.is_graph()) return;
  const training::Workload& w = t.workload();
  const uint32_t crit = critical_npu(t, static_cast<uint32_t>(m_sys->npus.size()));
  const training::NpuTimes& tm = t.times(crit);
  sum.text(fmt::format("\n  {:<20} {:>12} {:>12} {:>12} {:>14} {:>14}   (npu{}, all iterations)", "layer", "fwd", "ig",
                       "wg", "communication", "exposed", crit));
  const size_t shown = std::min<size_t>(w.layers.size(), 40);
  for (size_t l = 0; l < shown; ++l) {
    uint64_t comm = 0, exposed = 0;
    for (uint32_t p = 0; p < 3; ++p) {
      comm += tm.layer_comm[l][p];
      exposed += tm.layer_exposed[l][p];
    }
    sum.text(fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>14} {:>14}", w.layers[l].name.substr(0, 20),
                         human_time(tm.layer_compute[l][0]), human_time(tm.layer_compute[l][1]),
                         human_time(tm.layer_compute[l][2]), human_time(comm), human_time(exposed)));
  }
  if (shown < w.layers.size())
    sum.text(fmt::format("  ... {} more layers in stats.json (workload.layer<i>.*)", w.layers.size() - shown));
}

}  // namespace fabricvp::npusys
