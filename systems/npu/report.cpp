#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/core/context.h"
#include "models/core/output_file.h"
#include "models/core/units.h"
#include "systems/npu/scenario.h"

namespace fabricvp::npusys {

using core::human_bytes;
using core::human_time;

void NpuScenario::report(const systems::Outcome& out) {
  double rtl_s = 0;
  for (ace::Ace* a : m_sys->aces) rtl_s += a->datapath_host_seconds();
  m_rtl_s = rtl_s;
  m_run.emplace();
  m_run->npus.set(m_sys->npus.size());
  m_run->rtl_eval_s.set(rtl_s);

  const uint32_t n = static_cast<uint32_t>(m_sys->npus.size());
  for (const auto& np : m_sys->npus) m_mem += np->memory.comm_bytes();
  const std::vector<npu::FabricLink*>& links = m_sys->all_links;
  m_util_sum.assign(m_sys->ndims(), 0.0);
  m_util_n.assign(m_sys->ndims(), 0);
  std::vector<uint32_t> all_dims;
  for (uint32_t d = 0; d < m_sys->ndims(); ++d) all_dims.push_back(d);
  for (const npu::FabricLink* l : links) m_net += l->a_to_b.payload_bytes.get() + l->b_to_a.payload_bytes.get();
  for (size_t k = 0; k < links.size(); ++k) {
    const npu::FabricLink& l = *links[k];
    for (const npu::LinkChannel* ch : {&l.a_to_b, &l.b_to_a}) {
      if (ch->transfer_count() == 0 && ch->out.size() == 0) continue;  // a direction no ring uses
      m_util_sum[m_sys->link_dim[k]] += ch->utilization_pct();
      ++m_util_n[m_sys->link_dim[k]];
    }
  }
  for (uint32_t d = 0; d < m_sys->dim.size(); ++d)  // planes: a pair's circuits, or a port, count as one direction
    for (const auto& plane : m_sys->dim[d]->planes) {
      m_net += plane->bytes.get();
      plane->for_each_channel([&](uint64_t busy) {
        m_util_sum[d] += core::percent_of_run(busy);
        ++m_util_n[d];
      });
    }
  const uint64_t t = m_completion;
  m_traffic.emplace();
  TrafficStats& ts = *m_traffic;
  ts.network_bytes.set(m_net);
  ts.memory_bytes.set(m_mem);
  ts.mem_per_net.set(m_net ? static_cast<double>(m_mem) / static_cast<double>(m_net) : 0.0);
  ts.link_util.set(mean_util(all_dims));
  if (m_sys->is_torus()) {
    ts.link_util_local.emplace(nullptr, "workload", "link_utilization_local", "%",
                               "the same, local (intra-package) link directions");
    ts.link_util_local->set(mean_util({0}));
    ts.link_util_inter.emplace(nullptr, "workload", "link_utilization_inter", "%",
                               "the same, vertical and horizontal (inter-package) link directions");
    ts.link_util_inter->set(mean_util({1, 2}));
  } else {
    for (uint32_t d = 0; d < m_sys->ndims(); ++d) {
      m_extra_dbl.emplace_back(nullptr, "workload",
                               m_names.emplace_back(fmt::format("link_utilization_dim{}", d)).c_str(), "%",
                               "the same, this dimension's link directions");
      m_extra_dbl.back().set(mean_util({d}));
    }
  }
  ts.net_GBps.set(t ? static_cast<double>(m_net) / n / (t * 1e-12) / 1e9 : 0.0);
  ts.mem_GBps.set(t ? static_cast<double>(m_mem) / n / (t * 1e-12) / 1e9 : 0.0);
  ts.engine.set(m_sys->choices.ace_model.get());
  ts.algorithm.set(m_sys->choices.algorithm.get());
  ts.verified.set(out.checked && out.verified);
  uint64_t mismatched = 0;
  for (const Spec& s : m_specs) mismatched += s.mismatched;
  ts.mismatched.set(mismatched);
  ts.simulated_ps.set(m_completion);
  if (m_train) {
    report_training();
    return;
  }
  if (!m_single) {
    m_count.emplace(nullptr, "workload", "collectives", "collectives",
                    "collectives issued (each on every "
                    "communicator of its group)");
    m_count->set(m_specs.size());
  }
  for (size_t i = 0; i < m_specs.size(); ++i) {
    const Spec& s = m_specs[i];
    m_groups.push_back(m_single ? "workload" : fmt::format("workload.c{}", i));
    auto cs = std::make_unique<CollectiveStats>(m_groups.back().c_str());
    const double algbw = s.duration() ? static_cast<double>(s.bytes) / (s.duration() * 1e-12) / 1e9 : 0.0;
    const double bf = collectives::bus_factor(s.kind, s.size());
    cs->kind.set(npu::collective_name(s.kind));
    cs->bytes.set(s.bytes);
    cs->dtype.set(core::dtype_name(s.dtype));
    cs->phases.set(s.plan0().describe());
    cs->chunks.set(s.plan0().chunks());
    cs->chunk_bytes.set(s.plan0().chunk_capacity() * s.plan0().esize());
    cs->algbw.set(algbw);
    cs->busbw.set(algbw * bf);
    cs->bus_factor.set(bf);
    cs->ranks.set(s.size());
    m_stats.push_back(std::move(cs));
    // What a single default collective does not need to say.
    const char* g = m_groups.back().c_str();
    if (s.group != "all" || !m_single) {
      m_extra_str.emplace_back(nullptr, g, "group", "", "communicator dimensions");
      m_extra_str.back().set(s.group);
      m_extra_num.emplace_back(nullptr, g, "communicators", "communicators", "communicators the collective ran on");
      m_extra_num.back().set(s.comms.size());
    }
    if (s.kind == CollectiveKind::broadcast) {
      m_extra_num.emplace_back(nullptr, g, "root", "", "broadcast root (rank in its communicator)");
      m_extra_num.back().set(s.root);
    }
    if (!m_single) {
      m_extra_num.emplace_back(nullptr, g, "start_ps", "ps", "time the collective was submitted");
      m_extra_num.back().set(s.at_ps);
      m_extra_num.emplace_back(nullptr, g, "simulated_ps", "ps", "completion at its last member");
      m_extra_num.back().set(s.completion);
      m_extra_num.emplace_back(nullptr, g, "mismatched_elements", "elements", "elements that differ");
      m_extra_num.back().set(s.mismatched);
      m_extra_bool.emplace_back(nullptr, g, "verified", "", "every member's result bit-exact");
      m_extra_bool.back().set(s.mismatched == 0 && out.checked);
    }
  }
}

void NpuScenario::summarize(const systems::Outcome& out, systems::Summary& sum) {
  if (m_train) {
    summarize_training(sum);
    return;
  }
  const core::Context& ctx = core::Context::get();
  const bool hw_ok = ctx.hw_errors().empty();
  const std::string engine = m_sys->choices.ace_model.get();
  for (size_t i = 0; i < m_specs.size(); ++i) {
    const Spec& s = m_specs[i];
    const npu::CollectivePlan& p = s.plan0();
    std::string on = s.group == "all" && s.comms.size() == 1
                         ? ""
                         : fmt::format(" on {} ({} communicator{} of {} NPUs)", s.group, s.comms.size(),
                                       s.comms.size() == 1 ? "" : "s", s.size());
    if (s.kind == CollectiveKind::broadcast) on += fmt::format(", root rank {}", s.root);
    if (s.at_ps) on += fmt::format(", from {}", human_time(s.at_ps));
    sum.line(m_single ? "workload" : fmt::format("c{}", i),
             fmt::format("{} {} {} ({} bytes){}, {}({}), {} chunks of {}", npu::collective_name(s.kind),
                         human_bytes(s.bytes), core::dtype_name(s.dtype), s.bytes, on,
                         s.kind == CollectiveKind::allreduce || !m_sys->is_torus()
                             ? fmt::format("{} ", m_sys->algorithm_text(s.kind))
                             : std::string(),
                         p.describe(), p.chunks(), human_bytes(p.chunk_capacity() * p.esize())));
  }
  if (engine == "none") {
    const npu::Npu& n0 = *m_sys->npus[0];
    sum.line("engine", fmt::format("ace.model=none: NPU cores reduce through memory ({} of {} SMs, {:.0f}% of {:.0f} "
                                   "GB/s memory for communication)",
                                   n0.compute.comm_sms.get(), n0.compute.sms.get(), 100.0 * n0.memory.comm_share.get(),
                                   n0.memory.GBps.get()));
  } else if (engine == "ideal") {
    sum.line("engine", fmt::format("ace.model=ideal: every message handled in the endpoint delay ({} ns), no memory "
                                   "traffic or SMs (seed 002's Ideal)",
                                   m_sys->npus[0]->endpoint_delay_ns.get()));
  } else {
    const ace::Ace& a = *m_sys->aces[0];
    sum.line("engine",
             fmt::format("ace.model={}: ACE with {} KiB SRAM ({} chunk slots), {} FSMs, {} x {}-lane "
                         "datapaths at {:.0f} MHz ({} {} slices)",
                         engine, a.sram_kib.get(), a.slots.get(), a.fsms.get(), a.alu_units.get(), a.alu_lanes.get(),
                         a.clock_mhz.get(), a.slices(), engine == "rtl" ? "verilated RTL" : "C++ datapath"));
  }
  if (!hw_ok) {
    sum.line("result", fmt::format("FAILED: {} hardware error(s); first: {}: {}", ctx.hw_errors().size(),
                                   ctx.hw_errors()[0].where, ctx.hw_errors()[0].message));
  } else {
    uint32_t ok = 0, all = 0;
    uint64_t bad = 0;
    for (const Spec& s : m_specs) {
      ok += s.members_ok;
      all += s.members;
      bad += s.mismatched;
    }
    if (m_timing_only)
      sum.line("result", "timing only (--timing-only): no payload moved, nothing to check");
    else if (out.verified)
      sum.line("result", fmt::format("verified: {}/{} {} bit-exact against the host reference", ok, all,
                                     m_single ? "NPUs" : "member results"));
    else
      sum.line("result", fmt::format("MISMATCH: {} element(s) differ on {} {}", bad, all - ok,
                                     m_single ? "NPU(s)" : "member result(s)"));
    for (const Spec& s : m_specs)
      for (const Spec::Bad& b : s.first)
        sum.text(fmt::format("               {} byte {}: expected {} got {}", m_sys->npus[b.npu]->name(), b.byte,
                             b.expected, b.got));
  }
  for (size_t i = 0; i < m_specs.size(); ++i) {
    const Spec& s = m_specs[i];
    const double algbw = s.duration() ? static_cast<double>(s.bytes) / (s.duration() * 1e-12) / 1e9 : 0.0;
    const double bf = collectives::bus_factor(s.kind, s.size());
    if (m_single) {
      sum.line("completion", fmt::format("simulated {} ({} ps)", human_time(s.completion), s.completion));
      sum.line("bandwidth",
               fmt::format("algbw {:.2f} GB/s, busbw {:.2f} GB/s (bus factor {:.4f})", algbw, algbw * bf, bf));
    } else {
      sum.line(fmt::format("c{}", i),
               fmt::format("{}: completed at {} ({} after its start), algbw {:.2f} GB/s, busbw {:.2f} GB/s",
                           s.mismatched ? "MISMATCH" : "verified", human_time(s.completion), human_time(s.duration()),
                           algbw, algbw * bf));
    }
  }
  const TrafficStats& ts = *m_traffic;
  sum.line("memory", fmt::format("{:.3f} NPU-memory bytes per network byte ({} memory, {} network bytes; {:.1f} GB/s "
                                 "memory and {:.1f} GB/s network per NPU)",
                                 ts.mem_per_net.get(), m_mem, m_net, ts.mem_GBps.get(), ts.net_GBps.get()));
  if (!m_sys->aces.empty()) {
    double sram_peak = 0, sram_mean = 0, fsm = 0, alu = 0, port = 0;
    for (ace::Ace* a : m_sys->aces) {
      sram_peak = std::max<double>(sram_peak, static_cast<double>(a->peak_sram_bytes.get()));
      sram_mean += a->mean_sram_bytes.value().get<double>();
      fsm += a->fsm_mean_utilization.value().get<double>();
      alu += a->alu_utilization.value().get<double>();
      port += a->sram_port_utilization.value().get<double>();
    }
    const double k = static_cast<double>(m_sys->aces.size());
    sum.line("ace",
             fmt::format("SRAM peak {} KiB, mean {:.1f} KiB; SRAM port {:.1f}% busy; FSM utilization {:.1f}%; "
                         "ALU utilization {:.1f}% (means over NPUs)",
                         static_cast<uint64_t>(sram_peak) / 1024, sram_mean / k / 1024, port / k, fsm / k, alu / k));
  }
}

void NpuScenario::tables(systems::Summary& sum) {
  if (m_train) tables_training(sum);
  sum.text(fmt::format("\n  {:<12} {:>6} {:>12} {:>10} {:>10} {:>10}   (busy share of {} simulated)", "links", "dirs",
                       "payload GB/s", "mean", "min", "max", human_time(m_end)));
  const std::vector<npu::FabricLink*>& links = m_sys->all_links;
  std::vector<uint32_t> all_dims;
  for (uint32_t d = 0; d < m_sys->ndims(); ++d) {
    all_dims.push_back(d);
    double lo = 100, hi = 0, rate = 0;
    const bool optical = d < m_sys->dim.size() && !m_sys->dim[d]->planes.empty();
    for (size_t i = 0; optical && i < m_sys->dim[d]->planes.size(); ++i) {
      const auto& plane = m_sys->dim[d]->planes[i];
      rate = plane->shape().gbps / 8;  // a GPU's bandwidth over all its circuits
      plane->for_each_channel([&](uint64_t busy) {
        lo = std::min(lo, core::percent_of_run(busy));
        hi = std::max(hi, core::percent_of_run(busy));
      });
    }
    for (size_t k = 0; k < links.size(); ++k) {
      if (m_sys->link_dim[k] != d) continue;
      rate = links[k]->payload_GBps();
      for (const npu::LinkChannel* ch : {&links[k]->a_to_b, &links[k]->b_to_a}) {
        if (ch->transfer_count() == 0 && ch->out.size() == 0) continue;
        const double u = ch->utilization_pct();
        lo = std::min(lo, u);
        hi = std::max(hi, u);
      }
    }
    if (m_util_n[d] == 0) continue;
    const std::string label =
        !optical ? m_sys->dim_name(d) : fmt::format("{} {}", m_sys->dim_name(d), m_sys->dim_params[d]->fabric.get());
    sum.text(fmt::format("  {:<12} {:>6} {:>12.2f} {:>9.1f}% {:>9.1f}% {:>9.1f}%", label, m_util_n[d], rate,
                         m_util_sum[d] / m_util_n[d], lo, hi));
  }
  uint32_t dirs = 0;
  for (uint32_t n : m_util_n) dirs += n;
  sum.text(fmt::format("  {:<12} {:>6} {:>12} {:>9.1f}%", "all", dirs, "", mean_util(all_dims)));
}

double NpuScenario::mean_util(const std::vector<uint32_t>& dims) const {
  double s = 0;
  uint32_t c = 0;
  for (uint32_t d : dims) {
    s += m_util_sum[d];
    c += m_util_n[d];
  }
  return c ? s / c : 0.0;
}

int NpuScenario::topology(const std::string& platform, uint32_t, nlohmann::json& json) {
  const System& sys = *m_sys;
  if (sys.is_torus())
    fmt::print("fabricvp topology  {}\n  {} NPUs: {} local x {} vertical x {} horizontal\n", platform, sys.npus.size(),
               sys.shape.size[0], sys.shape.size[1], sys.shape.size[2]);
  else
    fmt::print("fabricvp topology  {}\n  {} NPUs: {}\n", platform, sys.npus.size(), sys.fabric.describe());
  nlohmann::json j = {{"platform", platform}, {"npus", sys.npus.size()}, {"links", sys.all_links.size()}};
  for (uint32_t d = 0; d < sys.ndims(); ++d) {
    uint32_t count = 0;
    const npu::FabricLink* example = nullptr;
    for (size_t i = 0; i < sys.all_links.size(); ++i)
      if (sys.link_dim[i] == d) {
        ++count;
        if (!example) example = sys.all_links[i];
      }
    j["links_per_dimension"][sys.dim_name(d)] = count;
    for (size_t i = 0; d < sys.dim.size() && i < sys.dim[d]->planes.size(); ++i) {
      const auto& plane = sys.dim[d]->planes[i];
      j["optical_planes"].push_back({{"name", plane->name()},
                                     {"fabric", sys.dim_params[d]->fabric.get()},
                                     {"gpus", plane->ports()},
                                     {"gbps_per_gpu", plane->shape().gbps}});
      if (i == 0)
        fmt::print("  {:<10} {} optical plane(s) of {} GPUs ({}), {:.0f} Gbit/s per GPU (e.g. {})\n", sys.dim_name(d),
                   sys.dim[d]->planes.size(), plane->ports(), sys.dim_params[d]->fabric.get(), plane->shape().gbps,
                   plane->name());
    }
    if (!sys.is_torus()) {
      const auto& ds = sys.fabric.dims()[d];
      j["dimensions"].push_back({{"type", collectives::ndim::dim_type_name(ds.type)},
                                 {"npus", ds.size},
                                 {"links_per_npu", ds.links},
                                 {"switches", sys.dim[d]->switches.size()}});
    }
    if (!example) continue;
    fmt::print("  {:<10} {:>4} links, {:.1f} GB/s x {:.2f} efficiency, {} cycles at {:.0f} MHz (e.g. {})\n",
               sys.dim_name(d), count, example->GBps.get(), example->efficiency.get(), example->latency_cycles.get(),
               example->clock_mhz.get(), example->name());
  }
  j["schema"] = {{"npus", {{"unit", "NPUs"}, {"description", "NPU endpoints"}}},
                 {"links", {{"unit", "links"}, {"description", "fabric links (one direction each)"}}}};
  json = std::move(j);
  return 0;
}

}  // namespace fabricvp::npusys
