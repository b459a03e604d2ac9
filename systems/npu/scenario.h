// The "npu" system kind's scenario (seeds 001, 002): NPUs on seed 001's
// hierarchical torus, with or without the ACE at every endpoint, or on an
// N-dimensional fabric (systems/npu/system.h). A run issues collectives through every NPU's
// collective service (models/npu/npu.h): one (--workload, --bytes, --dtype,
// --group, --root) or several at once (--collective, repeated), each on every
// communicator of its group, each with its own buffer; every member's result
// is checked bit-exactly against the host reference (sw/collectives).
//
//   collective_specs.cpp  what the command line asked for
//   scenario.cpp          elaborate, plan, load inputs and submit, finish, check; registration
//   report.cpp            statistics (run.*, workload.*), summary lines, link table, topology
#pragma once

#include <fmt/format.h>

#include <deque>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/core/stats.h"
#include "systems/kind.h"
#include "systems/npu/collective_specs.h"
#include "systems/npu/system.h"
#include "systems/npu/training.h"

namespace fabricvp::npusys {

/// run.* — what an NPU-fabric run adds to the manifest.
struct RunStats {
  core::Value<uint64_t> npus{nullptr, "run", "npus", "NPUs", "NPUs in the platform"};
  core::Value<double> rtl_eval_s{nullptr, "run", "rtl_eval_s", "s", "host time spent evaluating the RTL datapaths"};
};

/// workload.* — the traffic of the run (every collective together).
struct TrafficStats {
  core::Value<uint64_t> network_bytes{nullptr, "workload", "network_bytes", "bytes",
                                      "payload bytes all NPUs sent on links"};
  core::Value<uint64_t> memory_bytes{nullptr, "workload", "npu_memory_bytes", "bytes",
                                     "NPU-memory bytes moved for communication, all NPUs"};
  core::Value<double> mem_per_net{nullptr, "workload", "memory_bytes_per_network_byte", "bytes/byte",
                                  "npu_memory_bytes / network_bytes"};
  core::Value<double> link_util{nullptr, "workload", "link_utilization", "%",
                                "busy share of the completion time, mean over the link directions in use"};
  std::optional<core::Value<double>> link_util_local, link_util_inter;  // torus
  core::Value<double> net_GBps{nullptr, "workload", "network_GBps_per_npu", "GB/s",
                               "payload bytes one NPU sent per second of completion time (mean)"};
  core::Value<double> mem_GBps{nullptr, "workload", "memory_GBps_per_npu", "GB/s",
                               "communication memory bytes per NPU per second of completion time (mean)"};
  core::Value<std::string> engine{nullptr, "workload", "engine", "", "ace.model: tlm, rtl or none (NPU cores)"};
  core::Value<std::string> algorithm{
      nullptr, "workload", "algorithm", "",
      "all-reduce algorithm (collective.algorithm): enhanced (4 phases) or baseline (3)"};
  core::Value<bool> verified{nullptr, "workload", "verified", "", "every NPU's result bit-exact"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "elements that differ from the reference, over all NPUs"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "completion: the last NPU's last result byte in its memory"};
};

/// workload.* (one collective) or workload.c<i>.* (several): one collective.
struct CollectiveStats {
  CollectiveStats(const char* g)
      : kind{nullptr, g, "kind", "", "collective"},
        bytes{nullptr, g, "bytes", "bytes",
              "buffer per member (nccl-tests: the all-reduce or broadcast buffer, the reduce-scatter input, the "
              "all-gather output, the all-to-all buffer)"},
        dtype{nullptr, g, "dtype", "", "element type"},
        phases{nullptr, g, "phases", "", "the algorithm's phases in order"},
        chunks{nullptr, g, "chunks", "chunks", "chunks the buffer is split into"},
        chunk_bytes{nullptr, g, "chunk_bytes", "bytes", "chunk size"},
        algbw{nullptr, g, "algbw_GBps", "GB/s", "bytes / completion"},
        busbw{nullptr, g, "busbw_GBps", "GB/s", "algbw x bus_factor"},
        bus_factor{nullptr, g, "bus_factor", "", "nccl-tests: allreduce 2(n-1)/n, broadcast 1, the others (n-1)/n"},
        ranks{nullptr, g, "ranks", "NPUs", "members of each communicator (n)"} {}
  core::Value<std::string> kind;
  core::Value<uint64_t> bytes;
  core::Value<std::string> dtype;
  core::Value<std::string> phases;
  core::Value<uint64_t> chunks, chunk_bytes;
  core::Value<double> algbw, busbw, bus_factor;
  core::Value<uint64_t> ranks;
};

class NpuScenario final : public systems::Scenario {
 public:
  NpuScenario();

  std::string headline() const override {
    if (!m_sys->is_torus()) {
      const size_t planes = m_sys->optical_planes().size();
      return fmt::format("{} NPUs, {} fabric, {} links{}", m_sys->npus.size(), m_sys->fabric.describe(),
                         m_sys->all_links.size(), planes ? fmt::format(", {} optical planes", planes) : std::string());
    }
    const auto& s = m_sys->shape;
    return fmt::format("{} NPUs, {}x{}x{} torus, {} links", m_sys->npus.size(), s.size[0], s.size[1], s.size[2],
                       m_sys->all_links.size());
  }
  std::string description() const override { return m_sys->description.get(); }
  uint64_t links() const override { return m_sys->all_links.size(); }

  // scenario.cpp
  void prepare(const systems::RunOptions& opt) override;
  uint64_t host_bytes(std::string& what) const override;
  void load() override;
  double fraction_done() const override {
    return m_train && !m_train->is_graph() ? m_train->loop().fraction_done() : -1;
  }
  void finish() override;
  systems::Outcome check() override;
  // report.cpp
  void report(const systems::Outcome& out) override;
  void summarize(const systems::Outcome& out, systems::Summary& sum) override;
  void tables(systems::Summary& sum) override;

  std::string host_detail() const override {
    return m_sys->choices.ace_model.get() == "rtl" ? fmt::format(" of which RTL {:.2f}", m_rtl_s) : std::string();
  }

  int topology(const std::string& platform, uint32_t sources, nlohmann::json& json) override;
  std::vector<std::string> outputs() const override {
    if (m_train && !m_sys->optical_planes().empty()) return {"collectives.csv", "links.csv", "traffic.csv"};
    if (m_train) return {"collectives.csv", "links.csv"};
    return {};
  }

 private:
  uint64_t seed(size_t spec, const npu::Npu& n) const;

  void submit(Spec& s);

  void check_spec(size_t index, Spec& s);

  double mean_util(const std::vector<uint32_t>& dims) const;

  // training workloads (training_report.cpp)
  void report_training();
  void summarize_training(systems::Summary& sum);
  void tables_training(systems::Summary& sum);

  std::unique_ptr<System> m_sys;
  std::unique_ptr<TrainingRun> m_train;
  std::string m_out_dir;
  bool m_timing_only = false;
  std::vector<Spec> m_specs;
  bool m_single = false;
  uint64_t m_completion = 0, m_end = 0;
  uint64_t m_net = 0, m_mem = 0;
  std::vector<double> m_util_sum;  // per dimension
  std::vector<uint32_t> m_util_n;
  double m_rtl_s = 0;
  std::optional<RunStats> m_run;
  std::optional<TrafficStats> m_traffic;
  std::optional<core::Value<uint64_t>> m_count;
  std::deque<std::string> m_groups;  // stat group names (the statistics keep pointers to them)
  std::vector<std::unique_ptr<CollectiveStats>> m_stats;
  std::deque<core::Value<std::string>> m_extra_str;
  std::deque<core::Value<uint64_t>> m_extra_num;
  std::deque<core::Value<bool>> m_extra_bool;
  std::deque<core::Value<double>> m_extra_dbl;
  std::deque<std::string> m_names;  // stat leaf names (the statistics keep pointers to them)
};

}  // namespace fabricvp::npusys
