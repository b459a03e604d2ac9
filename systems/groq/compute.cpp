// --workload matmul on a Groq system: compile (sw/sched/matmul.h), check,
// statistics and summary. docs/compute.md.
#include <fmt/format.h>

#include <algorithm>

#include "models/core/units.h"
#include "systems/groq/scenario.h"

namespace fabricvp::groq {

using core::human_time;

namespace {
/// PCIe generation of a lane rate: 2.5 GT/s Gen1, 5 Gen2, 8 Gen3, 16 Gen4, 32 Gen5, 64 Gen6.
int pcie_generation(double gts) {
  const double rates[] = {2.5, 5, 8, 16, 32, 64};
  int gen = 1;
  for (int g = 0; g < 6; ++g)
    if (gts >= rates[g]) gen = g + 1;
  return gen;
}
}  // namespace

void GroqScenario::prepare_matmul(const systems::RunOptions& opt) {
  for (const char* o : {"bytes", "src", "dst"})
    opt.refuse(o, "does not apply to a matrix multiplication (--shape, --split, --dtype describe it)");
  const auto shape = opt.kind_options.find("shape");
  if (shape == opt.kind_options.end())
    throw core::ConfigError("--workload matmul needs --shape MxNxL ([M x N] x [N x L]), e.g. --shape 800x32576x8192");
  sched::parse_shape(shape->second, m_mreq);
  const auto split = opt.kind_options.find("split");
  if (split != opt.kind_options.end()) sched::parse_split(split->second, m_mreq);
  m_mreq.dtype = opt.given.count("dtype") ? opt.dtype : core::Dtype::fp16;
  if (tsp::mxm_k(m_mreq.dtype) == 0)
    throw core::ConfigError(
        fmt::format("--dtype {}: the matrix unit multiplies fp16 (fp32 results) or int8 (int32 "
                    "results)",
                    core::dtype_name(m_mreq.dtype)));
  m_mreq.max_paths = m_params->paths;
  m_mreq.host_inputs = m_params->matmul_inputs.get() == "host";
  m_mreq.row_order = m_params->matmul_order.get() == "row";
  m_mreq.host_outputs = m_params->matmul_outputs.get() == "host";
  m_mplan = sched::plan_matmul(m_machine, m_mreq);
}

void GroqScenario::report_matmul(const systems::Outcome& out) {
  m_ms.emplace();
  MatmulStats& ms = *m_ms;
  const sched::MatmulRequest& r = m_mreq;
  ms.kind.set("matmul");
  ms.timing_only.set(m_timing_only);
  ms.shape.set(fmt::format("{}x{}x{}", r.M, r.N, r.L));
  ms.dtype.set(core::dtype_name(r.dtype));
  ms.col.set(r.col);
  ms.row.set(r.row);
  ms.chips.set(m_mplan.parts.size());
  ms.verified.set(out.checked && out.verified);
  ms.elements.set(m_mres.elements);
  ms.mismatched.set(m_mres.mismatched);
  ms.predicted_ps.set(m_mplan.predicted_ps);
  ms.simulated_ps.set(m_completion);
  ms.compute_ps.set(m_mplan.compute_end_ps);
  const double secs = m_completion * 1e-12;
  ms.tflops.set(secs > 0 ? 2.0 * m_mplan.macs() / secs / 1e12 : 0.0);
  const double cycle_ps = 1e6 / m_sys->chips[m_mplan.parts[0].chip]->clock_mhz;
  const double peak = m_mplan.peak_macs_per_cycle * m_mplan.parts.size() * (m_completion / cycle_ps);
  ms.utilization.set(peak > 0 ? 100.0 * m_mplan.macs() / peak : 0.0);
  ms.subops.set(m_mplan.subops);
  ms.weight_loads.set(m_mplan.weight_loads);
  ms.reduced.set(m_mplan.reduced_vectors);
  ms.max_hops.set(m_mplan.max_hops);
  ms.inputs.set(r.host_inputs ? (r.row_order ? "host-row" : "host-col") : "sram");
  ms.host_bytes.set(m_mplan.host_bytes);
  ms.host_GBps.set(secs > 0 ? m_mplan.host_bytes / secs / 1e9 : 0.0);
  ms.host_GBps_at_peak.set(m_mplan.host_GBps_at_peak);
  ms.outputs.set(r.host_outputs ? "host" : "sram");
  ms.host_out_bytes.set(m_mplan.host_out_bytes);
}

void GroqScenario::summarize_matmul(const systems::Outcome& out, systems::Summary& s, bool head) {
  const sched::MatmulRequest& r = m_mreq;
  const bool fp = r.dtype == core::Dtype::fp16;
  if (head) {
    s.line("workload", fmt::format("matmul [{} x {}] x [{} x {}] {} ({} results) on {} TSP{} (col {} x row {})", r.M,
                                   r.N, r.N, r.L, core::dtype_name(r.dtype), fp ? "fp32" : "int32",
                                   m_mplan.parts.size(), m_mplan.parts.size() == 1 ? "" : "s", r.col, r.row));
    s.line("schedule",
           fmt::format("{} [1 x {}] x [{} x 320] sub-operations on {} MXM units per TSP, {} tiles installed{}",
                       m_mplan.subops, m_mplan.K, m_mplan.K, m_mplan.units, m_mplan.weight_loads,
                       m_mplan.reduced_vectors
                           ? fmt::format(", {} partial-product vectors reduced over C2C (longest route {} cables)",
                                         m_mplan.reduced_vectors, m_mplan.max_hops)
                           : std::string()));
    if (r.host_inputs) {
      const tsp::Tsp& t = *m_sys->chips[m_mplan.parts[0].chip];
      s.line("inputs", fmt::format("streamed from the host in {} order: {} over PCIe Gen{} x{} ({:.1f} GB/s of "
                                   "payload per TSP); its MXMs never waiting would need {:.1f} GB/s per TSP",
                                   r.row_order ? "row" : "column", core::approx_bytes(m_mplan.host_bytes),
                                   pcie_generation(t.pcie_gts), t.pcie_lanes.get(),
                                   t.pcie().rate().payload_GBps(tsp::kVectorBytes), m_mplan.host_GBps_at_peak));
    }
    if (r.host_outputs)
      s.line("outputs", fmt::format("C written back to the host over PCIe (HOSTW) as each part is final: {}",
                                    core::approx_bytes(m_mplan.host_out_bytes)));
    return;
  }
  if (m_timing_only)
    s.line("result",
           "timing only (--timing-only): LW, MXM and PCIe writes timed, no data computed or moved, nothing "
           "to check");
  else if (out.verified)
    s.line("result",
           fmt::format("verified: all {} elements of C bit-exact against the host reference", m_mres.elements));
  else
    s.line("result", fmt::format("MISMATCH: {} of {} elements of C differ", m_mres.mismatched, m_mres.elements));
  for (const auto& m : m_mres.first)
    s.text(fmt::format("               C[{}][{}]: expected {} got {}", m.row, m.col, m.expected, m.got));
  s.line("completion",
         fmt::format("simulated {} ({} ps), predicted {} ({}); last MXM result at {}", human_time(m_completion),
                     m_completion, human_time(m_mplan.predicted_ps),
                     out.timing_ok
                         ? "equal"
                         : fmt::format("DIFFERS by {} ps", static_cast<int64_t>(m_completion - m_mplan.predicted_ps)),
                     human_time(m_mplan.compute_end_ps)));
  if (m_ms)
    s.line("compute",
           fmt::format("{:.1f} {}TFLOPS, MXM utilization {:.1f}% of {} TSP{} x {:.0f} multiply-accumulates "
                       "per cycle",
                       m_ms->tflops.get(), fp ? "fp16 " : "int8 ", m_ms->utilization.get(), m_mplan.parts.size(),
                       m_mplan.parts.size() == 1 ? "" : "s", m_mplan.peak_macs_per_cycle));
}

void GroqScenario::prepare_cholesky(const systems::RunOptions& opt) {
  for (const char* o : {"bytes", "src", "dst", "dtype"})
    opt.refuse(o,
               "does not apply to a Cholesky factorization (--n and --tsps describe it; A is binary32, the MXM "
               "multiplies L in fp16)");
  const auto n = opt.kind_options.find("n");
  if (n == opt.kind_options.end())
    throw core::ConfigError("--workload cholesky needs --n N (A is N x N), e.g. --n 2560");
  m_creq.n = sched::parse_positive(n->second, "--n", "2560");
  const auto t = opt.kind_options.find("tsps");
  // Default: every TSP of the job, but no more than A has 320-row blocks.
  m_creq.tsps = static_cast<uint32_t>(
      std::min<uint64_t>(m_machine.size(), (m_creq.n + sched::kCholeskyRows - 1) / sched::kCholeskyRows));
  if (t != opt.kind_options.end()) {
    const uint64_t v = sched::parse_positive(t->second, "--tsps", "4");
    if (v > m_machine.size())
      throw core::ConfigError(fmt::format("--tsps {}: the platform's job has {} TSPs", v, m_machine.size()));
    m_creq.tsps = static_cast<uint32_t>(v);
  }
  m_cplan = sched::plan_cholesky(m_machine, m_creq);
}

void GroqScenario::report_cholesky(const systems::Outcome& out) {
  m_cs.emplace();
  CholeskyStats& cs = *m_cs;
  cs.kind.set("cholesky");
  cs.n.set(m_creq.n);
  cs.chips.set(m_cplan.parts.size());
  cs.verified.set(out.checked && out.verified);
  cs.elements.set(m_cres.elements);
  cs.mismatched.set(m_cres.mismatched);
  cs.residual.set(m_cres.residual);
  cs.predicted_ps.set(m_cplan.predicted_ps);
  cs.simulated_ps.set(m_completion);
  const double secs = m_completion * 1e-12;
  cs.tflops.set(secs > 0 ? m_cplan.flops() / secs / 1e12 : 0.0);
  const tsp::Tsp& chip = *m_sys->chips[m_cplan.parts[0].chip];
  const double cycles = secs * chip.clock_mhz * 1e6;
  const double peak = double(chip.mxm_planes / 2) * 160 * tsp::kMxmColumns * m_cplan.parts.size() * cycles;
  cs.utilization.set(peak > 0 ? 100.0 * (m_cplan.flops() / 2) / peak : 0.0);
  cs.subops.set(m_cplan.subops);
  cs.weight_loads.set(m_cplan.weight_loads);
  cs.transposes.set(m_cplan.transposes);
  cs.vxm_ops.set(m_cplan.vxm_ops);
  cs.sent.set(m_cplan.sent_vectors);
}

void GroqScenario::summarize_cholesky(const systems::Outcome& out, systems::Summary& s, bool head) {
  const uint64_t T = m_cplan.parts.size();
  if (head) {
    s.line("workload", fmt::format("cholesky A = L L^T, A {} x {} (binary32, L multiplied in fp16) on {} TSP{}, "
                                   "block-cyclic 320 rows",
                                   m_creq.n, m_creq.n, T, T == 1 ? "" : "s"));
    s.line("schedule", fmt::format("{} columns: {} MXM sub-operations over {} tiles of L installed, {} SXM "
                                   "TRANSPOSEs, {} VXM operations, {} vectors over C2C",
                                   m_creq.n, m_cplan.subops, m_cplan.weight_loads, m_cplan.transposes, m_cplan.vxm_ops,
                                   m_cplan.sent_vectors));
    return;
  }
  if (out.verified)
    s.line("result", fmt::format("verified: all {} elements of L bit-exact against the host reference; "
                                 "||L L^T - A||_F / ||A||_F = {:.3g}",
                                 m_cres.elements, m_cres.residual));
  else
    s.line("result", fmt::format("MISMATCH: {} of {} elements of L differ (residual {:.3g})", m_cres.mismatched,
                                 m_cres.elements, m_cres.residual));
  for (const auto& m : m_cres.first)
    s.text(fmt::format("               L[{}][{}]: expected {} got {}", m.row, m.col, m.expected, m.got));
  s.line("completion",
         fmt::format("simulated {} ({} ps), predicted {} ({})", human_time(m_completion), m_completion,
                     human_time(m_cplan.predicted_ps),
                     out.timing_ok
                         ? "equal"
                         : fmt::format("DIFFERS by {} ps", static_cast<int64_t>(m_completion - m_cplan.predicted_ps))));
  if (m_cs)
    s.line("compute", fmt::format("{:.2f} fp16 TFLOPS (n^3 / 3 FLOPs), MXM utilization {:.1f}% of {} TSP{}",
                                  m_cs->tflops.get(), m_cs->utilization.get(), T, T == 1 ? "" : "s"));
}

}  // namespace fabricvp::groq
