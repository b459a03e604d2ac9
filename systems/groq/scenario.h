// The "groq" system kind's scenario (seed 000): GroqNodes and
// software-scheduled Dragonflies of TSPs (systems/groq/system.h). A run
// compiles one collective with the scheduler (sw/sched), writes and loads
// every chip's program, loads seeded inputs into the SRAMs, simulates, checks
// every rank's result bit-exactly against the host reference
// (systems/groq/collective_data.h) and the completion time against the
// scheduler's prediction; or it runs hand-written programs (--programs).
// Machine checks are replayed by the driver.
//
//   scenario.cpp   elaborate, prepare (compile, programs), load, finish, check; registration
//   report.cpp     statistics (run.*, phy.*, workload.*), summary lines, link table
//   topology.cpp   `fabricvp topology`: cables, ranks, route lengths, bisection
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <systemc>
#include <vector>

#include "models/core/stats.h"
#include "sw/sched/checker.h"
#include "sw/sched/collectives.h"
#include "systems/groq/collective_data.h"
#include "systems/groq/compute.h"
#include "systems/groq/programs.h"
#include "systems/groq/system.h"
#include "systems/kind.h"

namespace fabricvp::groq {

/// run.* — what a Groq run adds to the manifest.
struct RunStats {
  core::Value<uint64_t> chips{nullptr, "run", "chips", "chips", "TSPs in the platform"};
  core::Value<uint64_t> instructions{nullptr, "run", "program_instructions", "instructions", "instructions loaded"};
  core::Value<uint64_t> schedule_violations{nullptr, "run", "schedule_violations", "violations",
                                            "conflicts the static schedule check found in the loaded programs"};
};

/// phy.* — FEC and error-injection totals over every link direction.
struct PhyStats {
  core::Value<uint64_t> codewords{nullptr, "phy", "codewords", "codewords", "FEC codewords on all links"};
  core::Value<uint64_t> bit_errors{nullptr, "phy", "bit_errors", "bits", "bit errors injected"};
  core::Value<uint64_t> corrected_codewords{nullptr, "phy", "corrected_codewords", "codewords",
                                            "codewords with errors the decoders corrected"};
  core::Value<uint64_t> corrected_symbols{nullptr, "phy", "corrected_symbols", "symbols", "symbols corrected"};
  core::Value<uint64_t> uncorrectable_codewords{nullptr, "phy", "uncorrectable_codewords", "codewords",
                                                "codewords declared uncorrectable (vectors flagged)"};
  core::Value<uint64_t> flagged_vectors{nullptr, "phy", "flagged_vectors", "vectors",
                                        "vectors flagged by uncorrectable codewords"};
  core::Value<uint64_t> miscorrected_codewords{nullptr, "phy", "miscorrected_codewords", "codewords",
                                               "codewords decoded into a wrong codeword (silent corruption)"};
  core::Value<uint64_t> silent_corrupted_vectors{nullptr, "phy", "silent_corrupted_vectors", "vectors",
                                                 "vectors delivered with wrong bits and no flag (model-only view)"};
};

/// workload.* — a collective run.
struct WorkloadStats {
  core::Value<std::string> kind{nullptr, "workload", "kind", "", "collective"};
  core::Value<uint64_t> bytes{nullptr, "workload", "bytes", "bytes", "collective size (nccl-tests convention)"};
  core::Value<std::string> dtype{nullptr, "workload", "dtype", "", "element type"};
  core::Value<uint64_t> root{nullptr, "workload", "root", "", "broadcast root rank, p2p source rank"};
  core::Value<bool> verified{nullptr, "workload", "verified", "",
                             "every chip's result is bit-exact against the host reference"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "result elements that differ from the reference"};
  core::Value<uint64_t> predicted_ps{nullptr, "workload", "predicted_ps", "ps",
                                     "completion predicted by the scheduler"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "simulated completion: last result vector written"};
  core::Value<double> algbw{nullptr, "workload", "algbw_GBps", "GB/s", "bytes / simulated_ps (1 GB = 1e9 B)"};
  core::Value<double> busbw{nullptr, "workload", "busbw_GBps", "GB/s", "algbw x bus_factor (nccl-tests)"};
  core::Value<double> bus_factor{nullptr, "workload", "bus_factor", "",
                                 "allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n, broadcast 1"};
  core::Value<double> peak_busbw{nullptr, "workload", "peak_busbw_GBps", "GB/s",
                                 "one fully wired node: (n-1) x one link direction's payload rate; else 0"};
  core::Value<double> busbw_pct{nullptr, "workload", "busbw_pct_of_peak", "%", "busbw / peak_busbw"};
  core::Value<uint64_t> chunk_vectors{nullptr, "workload", "chunk_vectors", "vectors",
                                      "reduction chunk used by the scheduler"};
  core::Value<uint64_t> staging_chunks{nullptr, "workload", "staging_chunks", "chunks",
                                       "receive ring per source used by the reduction (0: none)"};
  core::Value<uint64_t> ranks{nullptr, "workload", "ranks", "ranks", "chips in the job (spares and failed nodes out)"};
  core::Value<std::string> levels{nullptr, "workload", "levels", "",
                                  "group size per hierarchy level, innermost first (e.g. 8x32)"};
  core::Value<std::string> level_staging{nullptr, "workload", "level_staging", "chunks",
                                         "reduction staging ring depth per level, innermost first (e.g. 4x2)"};
  core::Value<uint64_t> max_hops{nullptr, "workload", "max_hops", "cables", "longest route a tensor took"};
  core::Value<uint64_t> paths{nullptr, "workload", "paths", "routes", "p2p: routes the tensor was spread over"};
  core::Value<uint64_t> peer{nullptr, "workload", "peer", "", "p2p destination rank"};
  core::Value<uint64_t> bursts{nullptr, "workload", "bursts", "bursts", "SEND bursts in the schedule"};
  core::Value<uint64_t> forwarded{nullptr, "workload", "forwarded_vectors", "vectors",
                                  "vectors received and sent on by intermediate chips (cut-through)"};
  core::Value<uint64_t> scratch{nullptr, "workload", "scratch_vectors", "vectors",
                                "most SRAM any chip set aside for forwarding (buffers reused once drained)"};
};

class GroqScenario final : public systems::Scenario {
 public:
  GroqScenario();

  std::string headline() const override {
    return fmt::format("{} TSPs, {} links", m_sys->chips.size(), m_sys->links.size());
  }
  std::string description() const override { return m_sys->description.get(); }
  uint64_t links() const override { return m_sys->links.size(); }
  bool replays() const override { return true; }
  std::vector<std::string> outputs() const override {
    return m_collective || m_compute ? std::vector<std::string>{"programs/"} : std::vector<std::string>{};
  }

  // scenario.cpp
  void prepare(const systems::RunOptions& opt) override;
  uint64_t host_bytes(std::string& what) const override {
    what = m_host_what;
    return m_host_bytes;
  }
  void load() override;
  double fraction_done() const override {
    const uint64_t p = m_compute ? m_compute->predicted_ps() : m_collective ? m_plan.predicted_ps : 0;
    if (p == 0) return -1;
    return std::min(1.0, static_cast<double>(sc_core::sc_time_stamp().value()) / static_cast<double>(p));
  }
  void finish() override;
  systems::Outcome check() override;
  // report.cpp
  void report(const systems::Outcome& out) override;
  void summarize(const systems::Outcome& out, systems::Summary& s) override;
  void tables(systems::Summary& s) override;
  // topology.cpp
  int topology(const std::string& platform, uint32_t sources, nlohmann::json& json) override;

 private:
  void estimate_host_bytes(const std::vector<sw::Program>& programs);

  std::unique_ptr<CompilerParams> m_params;
  std::unique_ptr<System> m_sys;
  systems::RunOptions m_opt;
  bool m_collective = false;
  std::unique_ptr<ComputeWorkload> m_compute;  ///< --workload matmul, cholesky (compute.h)
  sched::Machine m_machine;
  sched::Request m_req;
  sched::Plan m_plan;
  sched::CheckReport m_schedule_check;
  size_t m_instructions = 0;
  uint64_t m_host_bytes = 0;  // see host_bytes()
  std::string m_host_what;
  std::unique_ptr<CollectiveData> m_data;
  uint64_t m_completion = 0;
  CheckResult m_check;
  systems::Outcome m_outcome;
  double m_link_GBps = 0, m_peak_bus = 0, m_algbw = 0, m_busbw = 0;
  std::optional<RunStats> m_run;
  std::optional<PhyStats> m_phy;
  std::optional<WorkloadStats> m_ws;
};

}  // namespace fabricvp::groq
