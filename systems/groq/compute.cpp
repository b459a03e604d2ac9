// Compute workloads on a Groq system (compute.h): matmul and cholesky, each
// compiled, loaded, checked and reported. docs/compute.md.
#include "systems/groq/compute.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "models/core/units.h"
#include "sw/sched/bert.h"
#include "sw/sched/cholesky.h"
#include "sw/sched/matmul.h"
#include "systems/groq/bert_data.h"
#include "systems/groq/cholesky_data.h"
#include "systems/groq/matmul_data.h"

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

/// workload.* — a matrix multiplication (--workload matmul; docs/compute.md).
struct MatmulStats {
  core::Value<std::string> kind{nullptr, "workload", "kind", "", "matmul"};
  core::Value<std::string> shape{nullptr, "workload", "shape", "", "M x N x L of [M x N] x [N x L]"};
  core::Value<std::string> dtype{nullptr, "workload", "dtype", "", "input type (results fp32 or int32)"};
  core::Value<uint64_t> col{nullptr, "workload", "col_splits", "splits", "column-wise weight splits"};
  core::Value<uint64_t> row{nullptr, "workload", "row_splits", "splits", "row-wise weight splits"};
  core::Value<uint64_t> chips{nullptr, "workload", "tsps", "chips", "TSPs computing (col x row)"};
  core::Value<uint64_t> simulated_chips{nullptr, "workload", "simulated_tsps", "chips",
                                        "TSPs simulated (1 with --widest-share, else tsps)"};
  core::Value<bool> verified{nullptr, "workload", "verified", "", "C is bit-exact against the host reference"};
  core::Value<bool> timing_only{nullptr, "workload", "timing_only", "",
                                "--timing-only: LW, MXM and PCIe writes timed without data, nothing checked"};
  core::Value<uint64_t> elements{nullptr, "workload", "checked_elements", "elements", "elements of C compared"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "elements of C that differ from the reference"};
  core::Value<uint64_t> predicted_ps{nullptr, "workload", "predicted_ps", "ps", "completion predicted by the compiler"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "simulated completion: last result vector written"};
  core::Value<uint64_t> compute_ps{nullptr, "workload", "compute_ps", "ps",
                                   "last MXM result written (the reduction follows)"};
  core::Value<double> tflops{nullptr, "workload", "tflops", "TFLOP/s", "2 M N L / simulated time"};
  core::Value<double> utilization{nullptr, "workload", "mxm_utilization_pct", "%",
                                  "M N L / (TSPs x cycles x peak multiply-accumulates per cycle)"};
  core::Value<uint64_t> subops{nullptr, "workload", "subops", "sub-operations",
                               "[1 x K] x [K x 320] sub-operations on the simulated TSPs"};
  core::Value<uint64_t> weight_loads{nullptr, "workload", "weight_loads", "tiles",
                                     "[K x 320] tiles installed on the simulated TSPs"};
  core::Value<uint64_t> reduced{nullptr, "workload", "reduced_vectors", "vectors",
                                "partial-product vectors sent over C2C for row-split reductions"};
  core::Value<uint64_t> max_hops{nullptr, "workload", "max_hops", "cables", "longest route of a partial product"};
  core::Value<std::string> inputs{nullptr, "workload", "inputs", "",
                                  "sram (loaded before the run) or host-row / host-col (streamed over PCIe)"};
  core::Value<uint64_t> host_bytes{nullptr, "workload", "host_bytes", "bytes",
                                   "inputs the host wrote over PCIe to the simulated TSPs"};
  core::Value<double> host_GBps{nullptr, "workload", "host_GBps", "GB/s",
                                "host_bytes / simulated time (all simulated TSPs together)"};
  core::Value<double> host_GBps_at_peak{
      nullptr, "workload", "host_GBps_needed_per_tsp", "GB/s",
      "PCIe bandwidth the neediest simulated TSP needs for its MXMs never to wait on inputs"};
  core::Value<std::string> outputs{nullptr, "workload", "outputs", "",
                                   "sram (C left on the chips) or host (written back over PCIe)"};
  core::Value<uint64_t> host_out_bytes{nullptr, "workload", "host_out_bytes", "bytes",
                                       "C written back to the host over PCIe by the simulated TSPs"};
  core::Value<uint64_t> blocks{nullptr, "workload", "blocks", "blocks",
                               "blocks of A's rows computed one after the other (sched.matmul_block_rows)"};
  core::Value<uint64_t> block_rows{nullptr, "workload", "block_rows", "rows", "rows of A per block"};
  core::Value<uint64_t> block_period_ps{nullptr, "workload", "block_period_ps", "ps",
                                        "time from one block's start to the next's (LOOP period)"};
};

/// workload.* — a Cholesky factorization (--workload cholesky; docs/compute.md).
struct CholeskyStats {
  core::Value<std::string> kind{nullptr, "workload", "kind", "", "cholesky"};
  core::Value<uint64_t> n{nullptr, "workload", "n", "rows", "A is n x n"};
  core::Value<std::string> matrix{nullptr, "workload", "matrix", "",
                                  "A's source: seeded (--n) or the Matrix Market file (--matrix)"};
  core::Value<uint64_t> chips{nullptr, "workload", "tsps", "chips", "TSPs sharing the 320-row blocks"};
  core::Value<bool> verified{nullptr, "workload", "verified", "", "L is bit-exact against the host reference"};
  core::Value<uint64_t> elements{nullptr, "workload", "checked_elements", "elements", "elements of L compared"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "elements of L that differ from the reference"};
  core::Value<double> residual{nullptr, "workload", "residual", "", "||L L^T - A||_F / ||A||_F of the chips' L"};
  core::Value<uint64_t> predicted_ps{nullptr, "workload", "predicted_ps", "ps", "completion predicted by the compiler"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "simulated completion: last column of L written"};
  core::Value<double> tflops{nullptr, "workload", "tflops", "TFLOP/s", "n^3 / 3 / simulated time"};
  core::Value<double> utilization{nullptr, "workload", "mxm_utilization_pct", "%",
                                  "n^3 / 6 multiply-accumulates / (TSPs x cycles x peak per cycle)"};
  core::Value<uint64_t> subops{nullptr, "workload", "subops", "sub-operations",
                               "[1 x 160] x [160 x 320] sub-operations"};
  core::Value<uint64_t> weight_loads{nullptr, "workload", "weight_loads", "tiles", "tiles of L installed"};
  core::Value<uint64_t> transposes{nullptr, "workload", "transposes", "instructions",
                                   "SXM TRANSPOSEs building rows of L"};
  core::Value<uint64_t> vxm_ops{nullptr, "workload", "vxm_ops", "instructions", "SUB, SPLAT, RSQRT, MUL, NARROW"};
  core::Value<uint64_t> sent{nullptr, "workload", "sent_vectors", "vectors",
                             "fp16 columns of L and splats sent over C2C (forwards inside a node included)"};
};

/// workload.* — a BERT encoder pipeline (--workload bert; docs/compute.md).
struct BertStats {
  core::Value<std::string> kind{nullptr, "workload", "kind", "", "bert"};
  core::Value<uint64_t> encoders{nullptr, "workload", "encoders", "encoders", "encoders of the stack"};
  core::Value<uint64_t> chips{nullptr, "workload", "tsps", "chips", "pipeline stages, one TSP each"};
  core::Value<std::string> shape{nullptr, "workload", "shape", "",
                                 "hidden, heads, ffn, seq: features, attention heads, FFN width, positions"};
  core::Value<uint64_t> inferences{nullptr, "workload", "inferences", "inferences", "run back to back"};
  core::Value<bool> verified{nullptr, "workload", "verified", "",
                             "every inference's output bit-exact against the host reference"};
  core::Value<bool> timing_only{nullptr, "workload", "timing_only", "",
                                "--timing-only: LW, MXM and PCIe timed without data, nothing checked"};
  core::Value<uint64_t> elements{nullptr, "workload", "checked_elements", "elements", "output elements compared"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "output elements that differ from the reference"};
  core::Value<uint64_t> predicted_ps{nullptr, "workload", "predicted_ps", "ps", "completion predicted by the compiler"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "simulated completion: the last output in host memory"};
  core::Value<bool> launched{nullptr, "workload", "launched", "",
                             "--launch: each inference invoked by the host runtime (input, launch, output)"};
  core::Value<uint64_t> latency_ps{nullptr, "workload", "latency_ps", "ps",
                                   "first inference: its input's first PCIe packet (launched: the run's start) to "
                                   "its output in host memory (launched: noticed by the host)"};
  core::Value<uint64_t> latency_min_ps{nullptr, "workload", "latency_min_ps", "ps", "shortest inference latency"};
  core::Value<double> latency_mean_ps{nullptr, "workload", "latency_mean_ps", "ps", "mean inference latency"};
  core::Value<uint64_t> latency_p99_ps{nullptr, "workload", "latency_p99_ps", "ps", "99th percentile latency"};
  core::Value<uint64_t> latency_max_ps{nullptr, "workload", "latency_max_ps", "ps", "longest inference latency"};
  core::Value<uint64_t> predicted_latency_ps{nullptr, "workload", "predicted_latency_ps", "ps",
                                             "the compiler's latency (launched: input over an idle link + launch_ns "
                                             "+ program)"};
  core::Value<double> within_2pct{nullptr, "workload", "within_2pct", "%",
                                  "inferences whose latency is within 2 % of predicted_latency_ps"};
  core::Value<uint64_t> interval_ps{nullptr, "workload", "interval_ps", "ps",
                                    "between the last two inferences' outputs (the pipeline's steady state)"};
  core::Value<double> inferences_per_s{nullptr, "workload", "inferences_per_s", "1/s",
                                       "1 / interval_ps (1 / latency_ps for a single inference)"};
  core::Value<double> tflops{nullptr, "workload", "tflops", "TFLOP/s",
                             "FLOPs of an inference (real positions) x inferences_per_s"};
  core::Value<double> utilization{nullptr, "workload", "mxm_utilization_pct", "%", "tflops / (TSPs x fp16 peak)"};
  core::Value<uint64_t> subops{nullptr, "workload", "subops", "sub-operations",
                               "[1 x 160] x [160 x 320] sub-operations"};
  core::Value<uint64_t> weight_loads{nullptr, "workload", "weight_loads", "tiles", "activation tiles installed"};
  core::Value<uint64_t> transposes{nullptr, "workload", "transposes", "instructions", "SXM TRANSPOSEs (rows of K)"};
  core::Value<uint64_t> vxm_ops{nullptr, "workload", "vxm_ops", "instructions", "VXM instructions"};
  core::Value<uint64_t> sent{nullptr, "workload", "sent_vectors", "vectors",
                             "stage outputs sent over C2C to the next stage"};
};

/// Compiled, checked matrix multiplication (--workload matmul).
class MatmulWorkload final : public ComputeWorkload {
 public:
  using ComputeWorkload::ComputeWorkload;
  void prepare(const systems::RunOptions& opt) override {
    m_timing_only = opt.kind_options.count("timing-only") > 0;
    for (const char* o : {"bytes", "src", "dst"})
      opt.refuse(o, "does not apply to a matrix multiplication (--shape, --split, --dtype describe it)");
    const auto shape = opt.kind_options.find("shape");
    if (shape == opt.kind_options.end())
      throw core::ConfigError("--workload matmul needs --shape MxNxL ([M x N] x [N x L]), e.g. --shape 800x32576x8192");
    sched::parse_shape(shape->second, m_req);
    const auto split = opt.kind_options.find("split");
    if (split != opt.kind_options.end()) sched::parse_split(split->second, m_req);
    m_req.dtype = opt.given.count("dtype") ? opt.dtype : core::Dtype::fp16;
    if (tsp::mxm_k(m_req.dtype) == 0)
      throw core::ConfigError(
          fmt::format("--dtype {}: the matrix unit multiplies fp16 (fp32 results) or int8 (int32 "
                      "results)",
                      core::dtype_name(m_req.dtype)));
    m_req.max_paths = m_env.params.paths;
    m_req.chunk_vectors = m_env.params.chunk_vectors;
    m_req.host_inputs = m_env.params.matmul_inputs.get() == "host";
    m_req.row_order = m_env.params.matmul_order.get() == "row";
    m_req.host_outputs = m_env.params.matmul_outputs.get() == "host";
    m_req.block_rows = m_env.params.matmul_block_rows;
    m_req.widest_share = opt.kind_options.count("widest-share") > 0;
    m_plan = sched::plan_matmul(m_env.machine, m_req);
  }
  std::vector<sw::Program>& programs() override { return m_plan.programs; }
  uint64_t predicted_ps() const override { return m_plan.predicted_ps; }
  bool timing_only() const override { return m_timing_only; }
  uint64_t host_memory(std::vector<std::vector<std::pair<uint64_t, uint64_t>>>& written) const override {
    if (m_timing_only) return 0;  // A, B and the MXM results never reach the SRAM
    for (const sched::MatmulPart& p : m_plan.parts) written[p.chip].emplace_back(0, p.c_vec);  // A and B
    // The reference: a column group's partial products, one part's B rows as binary32.
    const sched::MatmulPart& p = m_plan.parts[0];
    const uint64_t width = uint64_t(p.j1 - p.j0) * tsp::kMxmColumns;
    return (uint64_t(m_req.row) + 1) * m_req.M * width * 4 + uint64_t(m_plan.K) * width * 4;
  }
  void load(uint64_t seed) override {
    m_data = std::make_unique<MatmulData>(m_env.sys, m_plan, seed);
    m_data->load(m_timing_only);
  }
  systems::Outcome check(uint64_t completion) override {
    if (!m_timing_only) m_res = m_data->check();
    return outcome(!m_timing_only, m_res.mismatched, m_res.elements, completion);
  }
  void report(const systems::Outcome& out, uint64_t completion) override {
    m_stats.emplace();
    MatmulStats& ms = *m_stats;
    const sched::MatmulRequest& r = m_req;
    ms.kind.set("matmul");
    ms.timing_only.set(m_timing_only);
    ms.shape.set(fmt::format("{}x{}x{}", r.M, r.N, r.L));
    ms.dtype.set(core::dtype_name(r.dtype));
    ms.col.set(r.col);
    ms.row.set(r.row);
    ms.chips.set(m_plan.tsps);
    ms.simulated_chips.set(m_plan.parts.size());
    ms.verified.set(out.checked && out.verified);
    ms.elements.set(m_res.elements);
    ms.mismatched.set(m_res.mismatched);
    ms.predicted_ps.set(m_plan.predicted_ps);
    ms.simulated_ps.set(completion);
    ms.compute_ps.set(m_plan.compute_end_ps);
    const double secs = completion * 1e-12;
    ms.tflops.set(secs > 0 ? 2.0 * m_plan.macs() / secs / 1e12 : 0.0);
    const double cycle_ps = 1e6 / m_env.sys.chips[m_plan.parts[0].chip]->clock_mhz;
    const double peak = m_plan.peak_macs_per_cycle * m_plan.tsps * (completion / cycle_ps);
    ms.utilization.set(peak > 0 ? 100.0 * m_plan.macs() / peak : 0.0);
    ms.subops.set(m_plan.subops);
    ms.weight_loads.set(m_plan.weight_loads);
    ms.reduced.set(m_plan.reduced_vectors);
    ms.max_hops.set(m_plan.max_hops);
    ms.inputs.set(r.host_inputs ? (r.row_order ? "host-row" : "host-col") : "sram");
    ms.host_bytes.set(m_plan.host_bytes);
    ms.host_GBps.set(secs > 0 ? m_plan.host_bytes / secs / 1e9 : 0.0);
    ms.host_GBps_at_peak.set(m_plan.host_GBps_at_peak);
    ms.outputs.set(r.host_outputs ? "host" : "sram");
    ms.host_out_bytes.set(m_plan.host_out_bytes);
    ms.blocks.set(m_plan.blocks);
    ms.block_rows.set(m_plan.block_rows);
    ms.block_period_ps.set(m_plan.block_period_ps);
  }
  void summarize(const systems::Outcome& out, uint64_t completion, systems::Summary& s, bool head) override {
    const sched::MatmulRequest& r = m_req;
    const bool fp = r.dtype == core::Dtype::fp16;
    if (head) {
      s.line("workload", fmt::format("matmul [{} x {}] x [{} x {}] {} ({} results) on {} TSP{} (col {} x row {}){}",
                                     r.M, r.N, r.N, r.L, core::dtype_name(r.dtype), fp ? "fp32" : "int32", m_plan.tsps,
                                     m_plan.tsps == 1 ? "" : "s", r.col, r.row,
                                     r.widest_share ? fmt::format("; simulated: the widest share only, {} of B's "
                                                                  "columns on {} (the others finish no later)",
                                                                  (m_plan.parts[0].j1 - m_plan.parts[0].j0) * 320,
                                                                  m_env.sys.chips[m_plan.parts[0].chip]->name())
                                                    : std::string()));
      s.line("schedule",
             fmt::format("{} [1 x {}] x [{} x 320] sub-operations on {} MXM units per TSP, {} tiles installed{}",
                         m_plan.subops, m_plan.K, m_plan.K, m_plan.units, m_plan.weight_loads,
                         m_plan.reduced_vectors
                             ? fmt::format(", {} partial-product vectors reduced over C2C (longest route {} cables)",
                                           m_plan.reduced_vectors, m_plan.max_hops)
                             : std::string()));
      if (r.host_inputs) {
        const tsp::Tsp& t = *m_env.sys.chips[m_plan.parts[0].chip];
        s.line("inputs", fmt::format("streamed from the host in {} order: {} over PCIe Gen{} x{} ({:.1f} GB/s of "
                                     "payload per TSP); its MXMs never waiting would need {:.1f} GB/s per TSP",
                                     r.row_order ? "row" : "column", core::approx_bytes(m_plan.host_bytes),
                                     pcie_generation(t.pcie_gts), t.pcie_lanes.get(),
                                     t.pcie().rate().payload_GBps(tsp::kVectorBytes), m_plan.host_GBps_at_peak));
      }
      if (r.host_outputs)
        s.line("outputs", fmt::format("C written back to the host over PCIe (HOSTW) as each part is final: {}",
                                      core::approx_bytes(m_plan.host_out_bytes)));
      if (m_plan.blocks > 1)
        s.line("blocks", fmt::format("{} blocks of {} rows of A (the last padded with {}), one every {}: each "
                                     "streams its rows of A and all of B again and writes its C back; the "
                                     "program is one block's, repeated by LOOP",
                                     m_plan.blocks, m_plan.block_rows, m_plan.blocks * m_plan.block_rows - r.M,
                                     human_time(m_plan.block_period_ps)));
      return;
    }
    if (m_timing_only)
      s.line("result",
             "timing only (--timing-only): LW, MXM and PCIe writes timed, no data computed or moved, nothing "
             "to check");
    else if (out.verified)
      s.line("result",
             fmt::format("verified: all {} elements of C bit-exact against the host reference", m_res.elements));
    else
      s.line("result", fmt::format("MISMATCH: {} of {} elements of C differ", m_res.mismatched, m_res.elements));
    for (const auto& m : m_res.first)
      s.text(fmt::format("               C[{}][{}]: expected {} got {}", m.row, m.col, m.expected, m.got));
    s.line("completion", fmt::format("{}; last MXM result at {}", completion_text(out, completion),
                                     human_time(m_plan.compute_end_ps)));
    if (m_stats)
      s.line("compute",
             fmt::format("{:.1f} {}TFLOPS, MXM utilization {:.1f}% of {} TSP{} x {:.0f} multiply-accumulates "
                         "per cycle",
                         m_stats->tflops.get(), fp ? "fp16 " : "int8 ", m_stats->utilization.get(), m_plan.tsps,
                         m_plan.tsps == 1 ? "" : "s", m_plan.peak_macs_per_cycle));
  }

 private:
  sched::MatmulRequest m_req;
  sched::MatmulPlan m_plan;
  bool m_timing_only = false;
  std::unique_ptr<MatmulData> m_data;
  MatmulData::Result m_res;
  std::optional<MatmulStats> m_stats;
};

/// Compiled, checked block-cyclic Cholesky factorization (--workload cholesky).
class CholeskyWorkload final : public ComputeWorkload {
 public:
  using ComputeWorkload::ComputeWorkload;
  void prepare(const systems::RunOptions& opt) override {
    for (const char* o : {"bytes", "src", "dst", "dtype"})
      opt.refuse(o,
                 "does not apply to a Cholesky factorization (--n and --tsps describe it; A is binary32, the MXM "
                 "multiplies L in fp16)");
    const auto n = opt.kind_options.find("n");
    const auto file = opt.kind_options.find("matrix");
    if (n == opt.kind_options.end() && file == opt.kind_options.end())
      throw core::ConfigError(
          "--workload cholesky needs --n N (a seeded N x N A), e.g. --n 2560, or --matrix FILE (A from a Matrix "
          "Market file)");
    if (file != opt.kind_options.end()) {
      m_a = CholeskyInput::read(file->second, kMaxMatrixRows);
      if (n != opt.kind_options.end() && sched::parse_positive(n->second, "--n", "2560") != m_a.n)
        throw core::ConfigError(fmt::format("--n {} but {} is {} x {}: give one of --n and --matrix", n->second,
                                            file->second, m_a.n, m_a.n));
    } else {
      m_a.n = sched::parse_positive(n->second, "--n", "2560");
    }
    m_req.n = m_a.n;
    // Default: every TSP of the job, but no more than A has 320-row blocks.
    m_req.tsps =
        tsps_option(opt, static_cast<uint32_t>(std::min<uint64_t>(
                             m_env.machine.size(), (m_req.n + sched::kCholeskyRows - 1) / sched::kCholeskyRows)));
    m_plan = sched::plan_cholesky(m_env.machine, m_req);
  }
  std::vector<sw::Program>& programs() override { return m_plan.programs; }
  uint64_t predicted_ps() const override { return m_plan.predicted_ps; }
  uint64_t host_memory(std::vector<std::vector<std::pair<uint64_t, uint64_t>>>& written) const override {
    for (const sched::CholeskyPart& p : m_plan.parts)
      written[p.chip].emplace_back(0, p.mask_vec + sched::kCholeskyRows * sched::kCholeskyF32);
    // The reference: L and its fp16 copy (binary32), the chips' L, and L in binary64.
    const uint64_t n = m_req.n, rows = (n + sched::kCholeskyRows - 1) / sched::kCholeskyRows * sched::kCholeskyRows;
    return 3 * n * rows * 4 + n * n * 8 + (m_a.file ? n * n * 4 : 0);
  }
  void load(uint64_t seed) override {
    m_a.seed = seed;
    m_data = std::make_unique<CholeskyData>(m_env.sys, m_plan, m_a);
    m_data->load();
  }
  systems::Outcome check(uint64_t completion) override {
    m_res = m_data->check();
    return outcome(true, m_res.mismatched, m_res.elements, completion);
  }
  void report(const systems::Outcome& out, uint64_t completion) override {
    m_stats.emplace();
    CholeskyStats& cs = *m_stats;
    cs.kind.set("cholesky");
    cs.n.set(m_req.n);
    cs.matrix.set(m_a.file ? m_a.path : "seeded");
    cs.chips.set(m_plan.parts.size());
    cs.verified.set(out.checked && out.verified);
    cs.elements.set(m_res.elements);
    cs.mismatched.set(m_res.mismatched);
    cs.residual.set(m_res.residual);
    cs.predicted_ps.set(m_plan.predicted_ps);
    cs.simulated_ps.set(completion);
    const double secs = completion * 1e-12;
    cs.tflops.set(secs > 0 ? m_plan.flops() / secs / 1e12 : 0.0);
    const double peak = fp16_peak_flops(m_plan.parts[0].chip, m_plan.parts.size());
    cs.utilization.set(peak > 0 && secs > 0 ? 100.0 * m_plan.flops() / secs / peak : 0.0);
    cs.subops.set(m_plan.subops);
    cs.weight_loads.set(m_plan.weight_loads);
    cs.transposes.set(m_plan.transposes);
    cs.vxm_ops.set(m_plan.vxm_ops);
    cs.sent.set(m_plan.sent_vectors);
  }
  void summarize(const systems::Outcome& out, uint64_t completion, systems::Summary& s, bool head) override {
    const uint64_t T = m_plan.parts.size();
    if (head) {
      s.line("workload", fmt::format("cholesky A = L L^T, A {} x {} ({}; binary32, L multiplied in fp16) on {} "
                                     "TSP{}, block-cyclic 320 rows",
                                     m_req.n, m_req.n, m_a.file ? m_a.path : "seeded", T, T == 1 ? "" : "s"));
      s.line("schedule", fmt::format("{} columns: {} MXM sub-operations over {} tiles of L installed, {} SXM "
                                     "TRANSPOSEs, {} VXM operations, {} vectors over C2C",
                                     m_req.n, m_plan.subops, m_plan.weight_loads, m_plan.transposes, m_plan.vxm_ops,
                                     m_plan.sent_vectors));
      return;
    }
    if (out.verified)
      s.line("result", fmt::format("verified: all {} elements of L bit-exact against the host reference; "
                                   "||L L^T - A||_F / ||A||_F = {:.3g}",
                                   m_res.elements, m_res.residual));
    else
      s.line("result", fmt::format("MISMATCH: {} of {} elements of L differ (residual {:.3g})", m_res.mismatched,
                                   m_res.elements, m_res.residual));
    for (const auto& m : m_res.first)
      s.text(fmt::format("               L[{}][{}]: expected {} got {}", m.row, m.col, m.expected, m.got));
    s.line("completion", completion_text(out, completion));
    if (m_stats)
      s.line("compute", fmt::format("{:.2f} fp16 TFLOPS (n^3 / 3 FLOPs), MXM utilization {:.1f}% of {} TSP{}",
                                    m_stats->tflops.get(), m_stats->utilization.get(), T, T == 1 ? "" : "s"));
  }

 private:
  sched::CholeskyRequest m_req;
  sched::CholeskyPlan m_plan;
  /// The largest A a Matrix Market file may hold (256 MiB of binary32 on the host; a dense array file of that size
  /// is about 700 MB of text, under the reader's 1 GiB; the compiler refuses what the chips cannot hold).
  static constexpr uint64_t kMaxMatrixRows = 8192;
  CholeskyInput m_a;
  std::unique_ptr<CholeskyData> m_data;
  CholeskyData::Result m_res;
  std::optional<CholeskyStats> m_stats;
};

/// Compiled, checked BERT encoder pipeline (--workload bert): inferences
/// back to back through the pipeline at the compiler's times, or (--launch)
/// one inference invoked by the host runtime per run (Host::invoke: input
/// over PCIe, launch, output), the PCIe invocation jitter of the host's
/// pcie_jitter_ns spreading the latencies (seed 000 Fig 17).
class BertWorkload final : public ComputeWorkload {
 public:
  using ComputeWorkload::ComputeWorkload;
  void prepare(const systems::RunOptions& opt) override {
    for (const char* o : {"bytes", "src", "dst", "dtype"})
      opt.refuse(o,
                 "does not apply to a BERT pipeline (--encoders, --tsps, --seq, --hidden, --heads, --ffn and "
                 "--inferences describe it; weights fp16, activations binary32)");
    m_timing_only = opt.kind_options.count("timing-only") > 0;
    m_req.launched = opt.kind_options.count("launch") > 0;
    m_out_dir = opt.out_dir;
    auto number = [&](const char* name, uint32_t& v, const char* example) {
      const auto it = opt.kind_options.find(name);
      if (it == opt.kind_options.end()) return false;
      const uint64_t x = sched::parse_positive(it->second, std::string("--") + name, example);
      if (x > UINT32_MAX) throw core::ConfigError(fmt::format("--{} {}: too large", name, it->second));
      v = static_cast<uint32_t>(x);
      return true;
    };
    number("encoders", m_req.encoders, "24");
    number("seq", m_req.seq, "384");
    number("hidden", m_req.hidden, "1024");
    number("heads", m_req.heads, "16");
    number("ffn", m_req.ffn, "4096");
    number("inferences", m_req.inferences, "4");
    m_runs = m_req.inferences;
    if (m_req.launched) {
      if (m_runs > 100000)
        throw core::ConfigError(fmt::format("--inferences {} --launch: at most 100000 runs", m_runs));
      m_req.inferences = 1;  // compiled once, launched m_runs times
    }
    m_req.tsps = tsps_option(opt, std::min(m_env.machine.size(), m_req.encoders));  // default: a stage per TSP
    m_req.paths = m_env.params.paths;
    m_plan = sched::plan_bert(m_env.machine, m_req);
    for (uint32_t c = 0; c < m_plan.programs.size(); ++c)  // the stages and the chips forwarding between them
      if (!m_plan.programs[c].queues.empty()) m_launch.push_back(c);
  }
  std::vector<sw::Program>& programs() override { return m_plan.programs; }
  uint64_t predicted_ps() const override { return m_plan.predicted_ps; }
  bool timing_only() const override { return m_timing_only; }
  bool launched() const override { return m_req.launched; }
  uint64_t host_memory(std::vector<std::vector<std::pair<uint64_t, uint64_t>>>& written) const override {
    if (m_timing_only) return 0;
    for (const sched::BertPart& p : m_plan.parts) written[p.chip].emplace_back(0, p.sram_vectors);
    // The reference: the exponentials, a weight matrix, a few activations; one output read back.
    const uint64_t S = m_req.seq, H = m_req.hidden, F = m_req.ffn;
    return (S * S + (std::max(H, F) + 1) * std::max(3 * H, F) + 8 * S * std::max(3 * H, F) + m_plan.x_vectors() * 80) *
           4;
  }
  void load(uint64_t seed) override {
    m_data = std::make_unique<BertData>(m_env.sys, m_plan, seed);
    m_data->load(m_timing_only);
    if (!m_req.launched) return;
    Host::Invocation inv;
    inv.runs = m_runs;
    inv.inputs = [this](uint32_t r) { return std::vector<Host::TimedWrite>{m_data->input_write(r, m_timing_only)}; };
    for (uint32_t c : m_launch) inv.chips.push_back(m_env.sys.chips[c]);
    inv.out_chip = m_env.sys.chips[m_plan.parts.back().chip];
    inv.out_vec = m_plan.host_out_vec(0);
    inv.done = [this](uint32_t r) {
      if (!m_timing_only) m_data->capture(r);
    };
    m_env.sys.host.invoke(std::move(inv));
  }
  systems::Outcome check(uint64_t completion) override {
    if (!m_timing_only) m_res = m_data->check(m_runs);
    // Per inference, the model's time its output was in host memory.
    m_done.clear();
    if (m_req.launched) {
      for (const Host::RunTimes& t : m_env.sys.host.run_times()) {
        m_done.push_back(t.output - t.launch);  // from the launch, as compiled
        m_latency.push_back(t.noticed - t.begin);
      }
    } else {
      const tsp::Tsp& last = *m_env.sys.chips[m_plan.parts.back().chip];
      for (uint32_t i = 0; i < m_req.inferences; ++i) {
        uint64_t at = 0;
        for (const tsp::Tsp::HostWriteDone& w : last.host_writes())
          if (w.host_vec == m_plan.host_out_vec(i)) at = w.done_ps;
        m_done.push_back(at);
        m_latency.push_back(at > m_plan.inputs[i].start_ps ? at - m_plan.inputs[i].start_ps : 0);
      }
    }
    systems::Outcome out = outcome(!m_timing_only, m_res.mismatched, m_res.elements, completion);
    uint64_t off = 0;
    for (size_t i = 0; i < m_runs; ++i) {
      const uint64_t want = m_req.launched ? m_plan.done_ps[0] : m_plan.done_ps[i];
      if (i >= m_done.size() || m_done[i] != want) ++off;
    }
    if (m_req.launched || off) {
      out.timing_ok = off == 0;
      out.timing_note =
          off ? fmt::format(
                    "{} of {} inferences' outputs reached host memory at another time than the compiler's "
                    "prediction{}",
                    off, m_runs, m_req.launched ? " (counted from their launch)" : "")
              : std::string();
    }
    return out;
  }
  /// Between the last two outputs, or the single inference's latency.
  uint64_t interval() const {
    const size_t B = m_done.size();
    return !m_req.launched && B > 1 ? m_done[B - 1] - m_done[B - 2] : m_latency.empty() ? 0 : m_latency[0];
  }
  /// The compiler's latency: for a launched run the input over an idle PCIe link, the launch and the program.
  uint64_t predicted_latency() const {
    if (!m_req.launched) return m_plan.latency_ps(0);
    return m_plan.input_ps + static_cast<uint64_t>(std::llround(m_env.sys.host.launch_ns * 1000.0)) + m_plan.done_ps[0];
  }
  void report(const systems::Outcome& out, uint64_t completion) override {
    m_stats.emplace();
    BertStats& bs = *m_stats;
    bs.kind.set("bert");
    bs.encoders.set(m_req.encoders);
    bs.chips.set(m_plan.parts.size());
    bs.shape.set(fmt::format("hidden {}, heads {}, ffn {}, seq {}", m_req.hidden, m_req.heads, m_req.ffn, m_req.seq));
    bs.inferences.set(m_runs);
    bs.launched.set(m_req.launched);
    bs.verified.set(out.checked && out.verified);
    bs.timing_only.set(m_timing_only);
    bs.elements.set(m_res.elements);
    bs.mismatched.set(m_res.mismatched);
    bs.predicted_ps.set(m_plan.predicted_ps);
    bs.simulated_ps.set(completion);
    std::vector<uint64_t> lat = m_latency;
    std::sort(lat.begin(), lat.end());
    if (!lat.empty()) {
      bs.latency_ps.set(m_latency[0]);
      bs.latency_min_ps.set(lat.front());
      bs.latency_max_ps.set(lat.back());
      bs.latency_p99_ps.set(lat[std::min(lat.size() - 1, (lat.size() * 99 + 99) / 100 - 1)]);
      double sum = 0;
      uint64_t near = 0;
      for (uint64_t l : lat) {
        sum += double(l);
        near += double(l) <= 1.02 * double(predicted_latency());
      }
      bs.latency_mean_ps.set(sum / double(lat.size()));
      bs.within_2pct.set(100.0 * double(near) / double(lat.size()));
    }
    bs.predicted_latency_ps.set(predicted_latency());
    bs.interval_ps.set(interval());
    const double rate = interval() ? 1e12 / double(interval()) : 0.0;
    bs.inferences_per_s.set(rate);
    bs.tflops.set(m_plan.flops() * rate / 1e12);
    const double peak = fp16_peak_flops(m_plan.parts[0].chip, m_plan.parts.size());
    bs.utilization.set(peak > 0 ? 100.0 * m_plan.flops() * rate / peak : 0.0);
    bs.subops.set(m_plan.subops);
    bs.weight_loads.set(m_plan.weight_loads);
    bs.transposes.set(m_plan.transposes);
    bs.vxm_ops.set(m_plan.vxm_ops);
    bs.sent.set(m_plan.sent_vectors);
    write_runs();
  }
  /// <out>/bert_runs.csv: every inference's times (ps), for histograms (fabricvp experiment bert).
  void write_runs() const {
    std::error_code ec;
    std::filesystem::create_directories(m_out_dir, ec);
    std::ofstream f(m_out_dir + "/bert_runs.csv");
    if (!f) throw core::ConfigError(fmt::format("{}/bert_runs.csv: cannot write", m_out_dir));
    f << "inference,latency_ps,predicted_latency_ps,output_ps,predicted_output_ps\n";
    for (size_t i = 0; i < m_latency.size(); ++i)
      f << i << ',' << m_latency[i] << ',' << predicted_latency() << ',' << m_done[i] << ','
        << m_plan.done_ps[m_req.launched ? 0 : i] << '\n';
  }
  void summarize(const systems::Outcome& out, uint64_t completion, systems::Summary& s, bool head) override {
    const uint64_t T = m_plan.parts.size();
    if (head) {
      s.line("workload",
             fmt::format("bert: {} encoder{} (hidden {}, {} heads, ffn {}, {} positions; fp16 weights, binary32 "
                         "activations) pipelined over {} TSP{}, {} inference{}{}",
                         m_req.encoders, m_req.encoders == 1 ? "" : "s", m_req.hidden, m_req.heads, m_req.ffn,
                         m_req.seq, T, T == 1 ? "" : "s", m_runs, m_runs == 1 ? "" : "s",
                         m_req.launched ? " each launched by the host runtime"
                         : m_runs > 1   ? " back to back"
                                        : ""));
      s.line("schedule", fmt::format("{} MXM sub-operations over {} tiles installed, {} SXM TRANSPOSEs, {} VXM "
                                     "operations, {} vectors between stages{}",
                                     m_plan.subops, m_plan.weight_loads, m_plan.transposes, m_plan.vxm_ops,
                                     m_plan.sent_vectors, m_req.launched ? " (one inference)" : ""));
      return;
    }
    if (m_timing_only)
      s.line("result", "timing only (--timing-only): LW, MXM, VXM, SXM and PCIe timed, no data, nothing to check");
    else if (out.verified)
      s.line("result", fmt::format("verified: all {} output elements of {} inference{} bit-exact against the host "
                                   "reference (largest |x| {:.3g})",
                                   m_res.elements, m_runs, m_runs == 1 ? "" : "s", m_res.max_abs));
    else
      s.line("result", fmt::format("MISMATCH: {} of {} output elements differ{}", m_res.mismatched, m_res.elements,
                                   m_res.nonfinite ? fmt::format(" ({} not finite: an overflow in binary32 or in "
                                                                 "the rounding to fp16)",
                                                                 m_res.nonfinite)
                                                   : std::string()));
    for (const auto& m : m_res.first)
      s.text(fmt::format("               inference {} position {} feature {}: expected {} got {}", m.inference,
                         m.position, m.feature, m.expected, m.got));
    if (m_req.launched)
      s.line("completion", fmt::format("every run's output in host memory {} after its launch, as predicted{}",
                                       human_time(m_plan.done_ps[0]), out.timing_ok ? "" : ": " + out.timing_note));
    else
      s.line("completion", completion_text(out, completion));
    if (!m_stats) return;
    const BertStats& b = *m_stats;
    if (m_req.launched)
      s.line("latency",
             fmt::format("{} runs: min {}, mean {}, p99 {}, max {}; the compiler's estimate {} (input over PCIe "
                         "{}, launch, program {}); {:.1f}% of runs within 2% of it (host pcie_jitter_ns {})",
                         m_runs, human_time(b.latency_min_ps.get()), human_time(b.latency_mean_ps.get()),
                         human_time(b.latency_p99_ps.get()), human_time(b.latency_max_ps.get()),
                         human_time(predicted_latency()), human_time(m_plan.input_ps), human_time(m_plan.done_ps[0]),
                         b.within_2pct.get(), m_env.sys.host.pcie_jitter_ns.get()));
    s.line("inference",
           fmt::format("latency {} (input over PCIe to output in host memory), {} {}: {:.0f} inferences/s, {:.1f} "
                       "fp16 TFLOPS, MXM utilization {:.1f}% of {} TSP{}",
                       human_time(b.latency_ps.get()), m_req.launched ? "one run at a time, every" : "one every",
                       human_time(interval()), b.inferences_per_s.get(), b.tflops.get(), b.utilization.get(), T,
                       T == 1 ? "" : "s"));
  }

 private:
  sched::BertRequest m_req;
  sched::BertPlan m_plan;
  uint32_t m_runs = 1;
  bool m_timing_only = false;
  std::string m_out_dir;
  std::unique_ptr<BertData> m_data;
  BertData::Result m_res;
  std::vector<uint32_t> m_launch;           // chips with a program, launched by the host runtime
  std::vector<uint64_t> m_done, m_latency;  // per inference: output in host memory (from the launch), latency
  std::optional<BertStats> m_stats;
};

struct Entry {
  const char* name;
  std::unique_ptr<ComputeWorkload> (*make)(const ComputeWorkload::Env&);
  std::vector<ComputeWorkload::Option> options;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> r{
      {"matmul",
       [](const ComputeWorkload::Env& e) -> std::unique_ptr<ComputeWorkload> {
         return std::make_unique<MatmulWorkload>(e);
       },
       {{"shape", "describes a matrix multiplication (--workload matmul)"},
        {"split", "describes a matrix multiplication (--workload matmul)"},
        {"widest-share", "describes a matrix multiplication (--workload matmul)"},
        {"timing-only", "on Groq TSPs times a matrix multiplication or a BERT pipeline without data"}}},
      {"cholesky",
       [](const ComputeWorkload::Env& e) -> std::unique_ptr<ComputeWorkload> {
         return std::make_unique<CholeskyWorkload>(e);
       },
       {{"n", "describes a Cholesky factorization (--workload cholesky)"},
        {"matrix", "describes a Cholesky factorization (--workload cholesky)"},
        {"tsps", "describes a Cholesky factorization or a BERT pipeline (--workload cholesky, bert)"}}},
      {"bert",
       [](const ComputeWorkload::Env& e) -> std::unique_ptr<ComputeWorkload> {
         return std::make_unique<BertWorkload>(e);
       },
       {{"encoders", "describes a BERT pipeline (--workload bert)"},
        {"seq", "describes a BERT pipeline (--workload bert)"},
        {"hidden", "describes a BERT pipeline (--workload bert)"},
        {"heads", "describes a BERT pipeline (--workload bert)"},
        {"ffn", "describes a BERT pipeline (--workload bert)"},
        {"inferences", "describes a BERT pipeline (--workload bert)"},
        {"launch", "describes a BERT pipeline (--workload bert)"},
        {"tsps", "describes a Cholesky factorization or a BERT pipeline (--workload cholesky, bert)"},
        {"timing-only", "on Groq TSPs times a matrix multiplication or a BERT pipeline without data"}}}};
  return r;
}

}  // namespace

systems::Outcome ComputeWorkload::outcome(bool checked, uint64_t mismatched, uint64_t elements,
                                          uint64_t completion) const {
  systems::Outcome out;
  out.checked = checked;
  out.verified = mismatched == 0 && elements > 0;
  out.timed = true;
  out.timing_ok = completion == predicted_ps();
  if (!out.timing_ok)
    out.timing_note = fmt::format("simulated completion {} ps differs from the compiler's prediction {} ps", completion,
                                  predicted_ps());
  return out;
}

std::string ComputeWorkload::completion_text(const systems::Outcome& out, uint64_t completion) const {
  return fmt::format(
      "simulated {} ({} ps), predicted {} ({})", human_time(completion), completion, human_time(predicted_ps()),
      out.timing_ok ? "equal" : fmt::format("DIFFERS by {} ps", static_cast<int64_t>(completion - predicted_ps())));
}

uint32_t ComputeWorkload::tsps_option(const systems::RunOptions& opt, uint32_t dflt) const {
  const auto t = opt.kind_options.find("tsps");
  if (t == opt.kind_options.end()) return dflt;
  const uint64_t v = sched::parse_positive(t->second, "--tsps", "4");
  if (v > m_env.machine.size())
    throw core::ConfigError(fmt::format("--tsps {}: the platform's job has {} TSPs", v, m_env.machine.size()));
  return static_cast<uint32_t>(v);
}

double ComputeWorkload::fp16_peak_flops(uint32_t chip, size_t tsps) const {
  const tsp::Tsp& t = *m_env.sys.chips[chip];
  return double(t.mxm_planes / 2) * tsp::mxm_k(core::Dtype::fp16) * tsp::kMxmColumns * 2 * t.clock_mhz * 1e6 *
         double(tsps);
}

std::unique_ptr<ComputeWorkload> make_compute(const std::string& workload, const ComputeWorkload::Env& env) {
  for (const Entry& e : registry())
    if (workload == e.name) return e.make(env);
  return nullptr;
}

std::vector<std::pair<std::string, ComputeWorkload::Option>> compute_options() {
  std::vector<std::pair<std::string, ComputeWorkload::Option>> out;
  for (const Entry& e : registry())
    for (const ComputeWorkload::Option& o : e.options) out.emplace_back(e.name, o);
  return out;
}

}  // namespace fabricvp::groq
