#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/core/context.h"
#include "models/core/units.h"
#include "systems/groq/scenario.h"

namespace fabricvp::groq {

using core::human_bytes;
using core::human_time;

void GroqScenario::report(const systems::Outcome& out) {
  m_outcome = out;
  m_run.emplace();
  m_run->chips.set(m_sys->chips.size());
  m_run->instructions.set(m_instructions);
  m_run->schedule_violations.set(m_schedule_check.violations.size());
  m_phy.emplace();
  PhyStats& ps = *m_phy;
  {
    uint64_t v[8] = {};
    for (const c2c::Link* l : m_sys->links)
      for (const c2c::Channel* c : {&l->a_to_b, &l->b_to_a}) {
        v[0] += c->codewords.get();
        v[1] += c->bit_errors.get();
        v[2] += c->corrected_codewords.get();
        v[3] += c->corrected_symbols.get();
        v[4] += c->uncorrectable_codewords.get();
        v[5] += c->flagged_vectors.get();
        v[6] += c->miscorrected_codewords.get();
        v[7] += c->corrupted_vectors.get();
      }
    ps.codewords.set(v[0]);
    ps.bit_errors.set(v[1]);
    ps.corrected_codewords.set(v[2]);
    ps.corrected_symbols.set(v[3]);
    ps.uncorrectable_codewords.set(v[4]);
    ps.flagged_vectors.set(v[5]);
    ps.miscorrected_codewords.set(v[6]);
    ps.silent_corrupted_vectors.set(v[7]);
  }
  m_link_GBps = m_sys->links.empty() ? 0.0 : m_sys->links[0]->payload_GBps();
  const uint32_t P = m_machine.size();
  // The (n-1) x link bound holds for one fully wired node, where every rank has
  // a direct cable to every other; elsewhere no single number bounds busbw.
  const bool one_node = m_sys->chips.size() == P && P == m_sys->tsps_per_node && m_sys->node_wiring.get() == "full";
  m_peak_bus = one_node ? (P - 1) * m_link_GBps : 0.0;
  m_algbw = m_completion ? static_cast<double>(m_req.bytes) / (m_completion * 1e-12) / 1e9 : 0.0;
  m_busbw = m_algbw * m_plan.bus_factor;
  if (m_compute) m_compute->report(out, m_completion);
  if (!m_collective) return;
  m_ws.emplace();
  WorkloadStats& ws = *m_ws;
  ws.kind.set(m_opt.workload);
  ws.bytes.set(m_req.bytes);
  ws.dtype.set(core::dtype_name(m_req.dtype));
  ws.root.set(m_req.root);
  ws.verified.set(out.checked && out.verified);
  ws.mismatched.set(m_check.mismatched);
  ws.predicted_ps.set(m_plan.predicted_ps);
  ws.simulated_ps.set(m_completion);
  ws.algbw.set(m_algbw);
  ws.busbw.set(m_busbw);
  ws.bus_factor.set(m_plan.bus_factor);
  ws.peak_busbw.set(m_peak_bus);
  ws.busbw_pct.set(m_peak_bus > 0 ? 100.0 * m_busbw / m_peak_bus : 0.0);
  ws.chunk_vectors.set(m_plan.chunk_vectors);
  ws.staging_chunks.set(m_plan.staging_chunks);
  ws.ranks.set(P);
  std::string levels;
  for (uint32_t g : m_plan.levels) levels += (levels.empty() ? "" : "x") + std::to_string(g);
  ws.levels.set(levels);
  std::string rings;
  for (uint32_t r : m_plan.level_staging) rings += (rings.empty() ? "" : "x") + std::to_string(r);
  ws.level_staging.set(rings);
  ws.max_hops.set(m_plan.max_hops);
  ws.paths.set(m_plan.paths);
  ws.bursts.set(m_plan.bursts);
  ws.forwarded.set(m_plan.forwarded_vectors);
  ws.scratch.set(m_plan.scratch_vectors);
  ws.peer.set(m_req.peer);
}

void GroqScenario::summarize(const systems::Outcome& out, systems::Summary& s) {
  const core::Context& ctx = core::Context::get();
  const bool hw_ok = ctx.hw_errors().empty();
  const uint32_t P = m_machine.size();
  const size_t n = m_sys->chips.size();
  if (m_collective) {
    std::string detail;
    if (m_req.kind == sched::Kind::broadcast) detail = fmt::format(", root rank {}", m_req.root);
    if (m_req.kind == sched::Kind::p2p)
      detail = fmt::format(", rank {} -> rank {} over {} route(s)", m_req.root, m_req.peer, m_plan.paths);
    if (m_plan.chunk_vectors) {
      std::string rings;
      for (uint32_t r : m_plan.level_staging) rings += (rings.empty() ? "" : "/") + std::to_string(r);
      detail = fmt::format(", reduced in chunks of {} vectors, staging ring{} {}", m_plan.chunk_vectors,
                           m_plan.level_staging.size() > 1 ? "s" : "", rings);
    }
    s.line("workload", fmt::format("{} {} {} ({} bytes){}", m_opt.workload, human_bytes(m_req.bytes),
                                   core::dtype_name(m_req.dtype), m_req.bytes, detail));
    std::string levels;
    for (uint32_t g : m_plan.levels) levels += (levels.empty() ? "" : " x ") + std::to_string(g);
    s.line("schedule", fmt::format("{} ranks{}, levels {}, longest route {} cables, {} bursts, {} vectors forwarded", P,
                                   P < n ? fmt::format(" on {} chips", n) : "", levels, m_plan.max_hops, m_plan.bursts,
                                   m_plan.forwarded_vectors));
  } else if (m_compute) {
    m_compute->summarize(out, m_completion, s, true);
  } else {
    s.line("programs", fmt::format("{} ({} instructions)", m_opt.programs_dir, m_instructions));
  }
  const sched::CheckReport& sc = m_schedule_check;
  s.line("checked",
         fmt::format("{} SENDs, {} RECVs, {} ALU bursts{}{}{} statically: {}", sc.sends, sc.recvs, sc.alu_ops,
                     sc.mxm_ops ? fmt::format(", {} LW/MXM", sc.mxm_ops) : std::string(),
                     sc.sxm_ops ? fmt::format(", {} TRANSPOSEs", sc.sxm_ops) : std::string(),
                     sc.hostw_ops ? fmt::format(", {} HOSTWs", sc.hostw_ops) : std::string(),
                     sc.violations.empty()
                         ? (sc.skipped_sync ? "no conflicts (SYNC/NOTIFY queues not analysed)" : "no conflicts")
                         : fmt::format("{} CONFLICT(S), first: {}: {}", sc.violations.size(), sc.violations[0].where,
                                       sc.violations[0].what)));
  const PhyStats& ps = *m_phy;
  if (ps.codewords.get() > 0 && (ps.bit_errors.get() > 0 || m_opt.attempt > 0))
    s.line("phy", fmt::format("{} FEC codewords, {} bit errors injected: {} corrected ({} symbols), {} uncorrectable "
                              "({} vectors flagged), {} miscorrected ({} vectors silently corrupted)",
                              ps.codewords.get(), ps.bit_errors.get(), ps.corrected_codewords.get(),
                              ps.corrected_symbols.get(), ps.uncorrectable_codewords.get(), ps.flagged_vectors.get(),
                              ps.miscorrected_codewords.get(), ps.silent_corrupted_vectors.get()));
  if (m_opt.attempt > 0) {
    std::string list;
    uint64_t lost = 0;
    for (const auto& m : m_opt.history) {
      list += fmt::format("{}{} at {}", list.empty() ? "" : "; ", m.link, human_time(m.time_ps));
      lost += m.time_ps;
    }
    s.line("replays", fmt::format("{} after machine checks ({}); {} lost before this attempt", m_opt.attempt, list,
                                  human_time(lost)));
  }
  if (!hw_ok) {
    const core::HardwareError& e = ctx.hw_errors()[0];
    s.line("result",
           fmt::format("FAILED: {} hardware error(s); first: {}: {}", ctx.hw_errors().size(), e.where, e.message));
    if (e.machine_check) {
      bool same = !m_opt.history.empty();
      for (const auto& m : m_opt.history) same &= m.link == e.source;
      s.text(fmt::format(
          "               {}",
          same ? fmt::format("persistent fault: {} flagged data on all {} attempts (a marginal link?)", e.source,
                             m_opt.attempt + 1)
               : fmt::format("gave up after {} replay(s) (run --max-replays N to allow more)", m_opt.attempt)));
    }
    double worst_ppm = 0;
    for (const tsp::Tsp* t : m_sys->chips) worst_ppm = std::max(worst_ppm, std::abs(t->clock().ppm()));
    if ((m_collective || m_compute) && !e.machine_check && worst_ppm > 0)
      s.text(
          fmt::format("               note: chips run up to {:.1f} ppm off nominal; compiled collectives assume "
                      "nominal clocks and carry no RUNTIME_DESKEW (docs/clocks.md)",
                      worst_ppm));
  } else if (m_collective) {
    if (out.verified)
      s.line("result", fmt::format("verified: {}/{} ranks bit-exact against the host reference", m_check.ranks_ok,
                                   m_check.ranks_checked));
    else
      s.line("result", fmt::format("MISMATCH: {} element(s) differ on {} rank(s)", m_check.mismatched,
                                   m_check.ranks_checked - m_check.ranks_ok));
    for (const auto& m : m_check.first)
      s.text(fmt::format("               rank {} ({}) byte {}: expected {} got {}", m.rank,
                         m_sys->chips[m_machine.ranks[m.rank]]->name(), m.byte, m.expected, m.got));
    s.line("completion",
           fmt::format("simulated {} ({} ps), predicted {} ({})", human_time(m_completion), m_completion,
                       human_time(m_plan.predicted_ps),
                       out.timing_ok ? "equal"
                                     : fmt::format("DIFFERS by {} ps",
                                                   static_cast<int64_t>(m_completion - m_plan.predicted_ps))));
    if (m_peak_bus > 0)
      s.line("bandwidth", fmt::format("algbw {:.2f} GB/s, busbw {:.2f} GB/s = {:.1f}% of {} x {:.3f} GB/s link payload",
                                      m_algbw, m_busbw, 100.0 * m_busbw / m_peak_bus, P - 1, m_link_GBps));
    else
      s.line("bandwidth", fmt::format("algbw {:.2f} GB/s, busbw {:.2f} GB/s (link payload {:.3f} GB/s)", m_algbw,
                                      m_busbw, m_link_GBps));
  } else if (m_compute) {
    m_compute->summarize(out, m_completion, s, false);
  } else {
    s.line("result", fmt::format("ran to completion; last SRAM write at {}", human_time(m_completion)));
  }
}

void GroqScenario::tables(systems::Summary& s) {
  const auto& links = m_sys->links;
  if (links.empty()) return;
  const uint64_t end = core::stats_end_ps();
  s.text(fmt::format("\n  {:<28} {:>8} {:>8} {:>10}   (busy share of {} simulated)", "link", "a->b", "b->a", "vectors",
                     human_time(end)));
  if (links.size() <= 64) {
    for (const c2c::Link* l : links)
      s.text(fmt::format("  {:<28} {:>7.1f}% {:>7.1f}% {:>10}", l->name(), l->a_to_b.utilization_pct(),
                         l->b_to_a.utilization_pct(), l->a_to_b.packets.get() + l->b_to_a.packets.get()));
    return;
  }
  double lo = 100, hi = 0, sum = 0;
  for (const c2c::Link* l : links)
    for (const c2c::Channel* ch : {&l->a_to_b, &l->b_to_a}) {
      const double u = ch->utilization_pct();
      lo = std::min(lo, u);
      hi = std::max(hi, u);
      sum += u;
    }
  s.text(fmt::format("  {} link directions: utilization min {:.1f}% mean {:.1f}% max {:.1f}%", 2 * links.size(), lo,
                     sum / (2 * links.size()), hi));
}

}  // namespace fabricvp::groq
