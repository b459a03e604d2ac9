// System kind "flare" (seed 004, Flare): hosts on the ports of a PsPIN-like
// switch run an in-network allreduce. Each host (models/flare) sends its
// vector block by block; the switch's cores aggregate the blocks with a C
// kernel (sw/handlers/flare, or the user's --handlers file) and multicast
// each result back. Every host's result is checked against a host reference
// that applies the contributions in the order the switch applied them (the
// kernel logs it to the switch's host memory), so float results are checked
// bit for bit. docs/flare.md.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/core/module.h"
#include "models/core/param.h"
#include "models/core/stats.h"
#include "models/core/timed_queue.h"
#include "models/flare/host.h"
#include "models/pspin/switch.h"
#include "models/riscv/elf.h"
#include "systems/kind.h"
#include "systems/pspin/flare_training.h"

namespace fabricvp::pspin {

/// The platform: one switch (sys.switch0) with a host on each port, or a
/// 2-level fat tree (sys.leaves > 0): sys.leaf<l> with hosts / leaves hosts
/// on ports 0 .. and an uplink to each spine after them, sys.spine<s> with
/// leaf l on port l. Host i is sys.host<i>, on leaf i / (hosts / leaves).
class FlareSystem : public core::Module {
 public:
  explicit FlareSystem(const sc_core::sc_module_name& nm);
  core::Param<std::string> topology;
  core::Param<uint32_t> hosts;
  core::Param<uint32_t> leaves;
  core::Param<uint32_t> spines;
  core::Param<double> link_latency_ns;
  core::ActionQueue host_actions;
  /// Every switch: switch0, or the leaves then the spines.
  std::vector<std::unique_ptr<Switch>> switches;
  std::vector<std::unique_ptr<flare::Host>> host;
  bool fat_tree() const { return leaves.get() > 0; }
  /// Buffers per block the kernels use (the multiple-buffers variant; set before load).
  uint32_t buffers = 1;
  /// The sparse kernel's store (flare.h FLARE_ARRAY ..), elements per block and entries (set before load).
  uint32_t sparse_format = 0, span = 0, entries = 0;
  uint32_t hosts_per_leaf() const { return fat_tree() ? hosts.get() / leaves.get() : hosts.get(); }
  /// Contributions a block takes at switch i: the leaves at a spine, else the hosts of a switch.
  uint32_t fan_in(uint32_t i) const;
  /// What the switch's kernels find in flare_switch_t (role, index, down, spines, leaves, buffers, format, span,
  /// entries).
  std::vector<uint32_t> switch_config(uint32_t i) const;

 private:
  /// A packet that left switch `from` at `p.time_ps` reaches port `port` of switch `to`.
  void to_switch(const Switch& from, Switch& to, uint32_t port, EgressPacket&& p);
};

/// The allreduce's settings (-p flare.<key>).
struct FlareParams {
  core::Param<std::string> algorithm{
      "flare",
      "algorithm",
      "single",
      "",
      "aggregation: single (one buffer per block, under a lock; sw/handlers/flare/dense.c), "
      "multiple (flare.buffers buffers per block, merged by the last contribution; flare/multiple.c), "
      "tree (one buffer per host, reduced in a fixed tree when the last arrives: the "
      "same bits in any arrival order; flare/tree.c), or ring (the host-based baseline: "
      "a ring allreduce between the hosts through the switch, which forwards; "
      "flare/forward.c)",
      {"single", "multiple", "tree", "ring"}};
  core::Param<uint32_t> buffers{"flare", "buffers", 2, "buffers", "buffers per block of the multiple-buffers variant",
                                1u,      8u};
  core::Param<std::string> op{"flare",
                              "op",
                              "sum",
                              "",
                              "reduction operator (user: the C function of --operator FILE.c)",
                              {"sum", "min", "max", "user"}};
  core::Param<uint32_t> block_bytes{
      "flare", "block_bytes", 1024, "bytes", "payload of one block (one packet per block)", 4u, 1024u};
  core::Param<uint32_t> window{"flare",
                               "window",
                               64,
                               "blocks",
                               "blocks each host keeps in flight (sent, result not back; with --sparse and not given: "
                               "at most half the block buffers the switch scratchpads hold); in-network all-reduces "
                               "only: the ring baseline sends each step's segment when it has it (a sweep may set "
                               "it for all algorithms)",
                               1u,
                               1u << 20};
  core::Param<bool> stagger{"flare", "stagger", false, "",
                            "each host sends each group of `window` blocks from offset host x window / hosts "
                            "(in-network all-reduces only, as flare.window)"};
  core::Param<std::string> sparse_format{
      "flare",
      "sparse_format",
      "hash",
      "",
      "with --sparse: the switch's store of a block's pairs (sw/handlers/flare/sparse.c): array (a value per element "
      "of the block's range; never full), hash (flare.entries entries, full at 3/4), twolevel (a directory of "
      "32-element chunks over a pool of flare.entries chunks); a full store is flushed to the receivers",
      {"array", "hash", "twolevel"}};
  core::Param<uint32_t> span{
      "flare", "span",  4096, "elements", "with --sparse: elements per block (its index range, a multiple of 32)",
      32u,     1u << 20};
  core::Param<uint32_t> entries{
      "flare",
      "entries",
      0,
      "entries",
      "with --sparse: hash entries (a power of 2; 0: 512) or two-level chunks (0: a quarter of "
      "the block's span / 32)",
      0u,
      65535u};
};

struct FlareStats {
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps", "the last host has its result"};
  core::Value<double> algbw_GBps{nullptr, "workload", "algbw_GBps", "GB/s", "vector bytes / completion time"};
  core::Value<double> busbw_GBps{nullptr, "workload", "busbw_GBps", "GB/s",
                                 "algbw x 2 (n - 1) / n (nccl-tests' allreduce convention)"};
  core::Value<uint64_t> wire_bytes_up{nullptr, "workload", "wire_bytes_up", "bytes",
                                      "bytes the hosts sent to the switch (headers included)"};
  core::Value<uint64_t> wire_bytes_down{nullptr, "workload", "wire_bytes_down", "bytes",
                                        "bytes the switch sent to the hosts (headers included)"};
  core::Value<uint64_t> wire_bytes_fabric{nullptr, "workload", "wire_bytes_fabric", "bytes",
                                          "bytes on the links between switches (a fat tree's leaves and spines)"};
  core::Value<uint64_t> open_blocks_peak{nullptr, "workload", "open_blocks_peak", "blocks",
                                         "most blocks held at once by one switch (first contribution in L2 to the "
                                         "last one's feedback)"};
  core::Value<double> open_blocks_mean{nullptr, "workload", "open_blocks_mean", "blocks",
                                       "blocks held at once, time average at the hosts' switches (= throughput x "
                                       "residence, Little's law)"};
  core::Value<double> block_residence_ns{nullptr, "workload", "block_residence_ns", "ns",
                                         "mean time a block is held at the hosts' switches"};
  core::Value<uint64_t> working_memory_peak_bytes{nullptr, "workload", "working_memory_peak_bytes", "bytes",
                                                  "open blocks peak x the kernel's buffer bytes per block, the "
                                                  "highest of the switches"};
  core::Value<uint64_t> blocks{nullptr, "workload", "blocks", "blocks", "blocks of the vector (one packet each)"};
  core::Value<double> ph_cycles_mean{
      nullptr, "workload", "ph_cycles_mean", "cycles",
      "service time of the aggregation handler at the hosts' switches (the leaves), mean over its runs (tau)"};
  core::Value<double> model_GBps{nullptr, "workload", "model_GBps", "GB/s",
                                 "the cores' bandwidth K / tau x block bytes (seed 004's model), per host"};
  core::Value<uint64_t> mismatched_elements{nullptr, "workload", "mismatched_elements", "elements",
                                            "elements of the hosts' results that differ from the reference"};
  core::Value<uint64_t> sparse_pairs_in{nullptr, "workload", "sparse_pairs_in", "pairs",
                                        "--sparse: nonzero elements the hosts sent (all hosts)"};
  core::Value<uint64_t> sparse_pairs_out{nullptr, "workload", "sparse_pairs_out", "pairs",
                                         "--sparse: nonzero elements of the result (each host's)"};
  core::Value<uint64_t> sparse_flushes{nullptr, "workload", "sparse_flushes", "flushes",
                                       "--sparse: times a block's store was full and flushed on (all switches)"};
  // --workload FILE: the training run (the names and meanings of the NPU platforms' training statistics)
  core::Value<uint64_t> iteration_ps{nullptr, "workload", "iteration_ps", "ps",
                                     "training: total_ps / iterations (total_ps: simulated_ps)"};
  core::Value<uint64_t> compute_ps{nullptr, "workload", "compute_ps", "ps",
                                   "training: compute time of the host that finished last"};
  core::Value<uint64_t> exposed_comm_ps{
      nullptr, "workload", "exposed_comm_ps", "ps",
      "training: exposed communication, time the last host waited for a collective with no compute to run"};
  core::Value<uint64_t> comm_busy_ps{nullptr, "workload", "comm_busy_ps", "ps",
                                     "training: time with at least one of its collectives in flight (that host)"};
  core::Value<double> exposed_comm_pct{nullptr, "workload", "exposed_comm_pct", "%",
                                       "training: exposed_comm_ps / simulated_ps"};
  core::Value<uint64_t> collectives{nullptr, "workload", "collectives", "collectives",
                                    "training: allreduces run (each checked)"};
  core::Value<uint64_t> collective_bytes{nullptr, "workload", "collective_bytes", "bytes",
                                         "training: their sizes (per host, as the workload gives them), summed"};
  core::Value<bool> verified{nullptr, "workload", "verified", "",
                             "every host has every block, equal to the reference, no fault"};
};

class FlareScenario : public systems::Scenario {
 public:
  FlareScenario();
  ~FlareScenario() override;
  std::string headline() const override;
  std::string description() const override;
  uint64_t links() const override { return m_sys->host.size(); }
  void prepare(const systems::RunOptions& opt) override;
  uint64_t host_bytes(std::string& what) const override;
  void load() override;
  double fraction_done() const override;
  void finish() override;
  systems::Outcome check() override;
  void report(const systems::Outcome& outcome) override;
  void summarize(const systems::Outcome& outcome, systems::Summary& out) override;
  void tables(systems::Summary& out) override;
  std::vector<std::string> outputs() const override {
    if (m_training) return {"result.bin", "collectives.csv"};
    return {"result.bin"};
  }
  int topology(const std::string& platform, uint32_t sources, nlohmann::json& json) override;

 private:
  Switch& sw() { return *m_sys->switches[0]; }
  uint64_t l2_peak() const;                 // the highest L2 packet buffer peak of the switches
  std::string not_verified() const;         // the summary's result line of a run that failed its check
  uint32_t buffer_bytes(uint32_t i) const;  // the kernel's buffer of one block at switch i
  std::vector<flare::Pair> sparse_input(uint32_t host) const;
  using Vectors = std::vector<const std::vector<uint8_t>*>;
  // A dense collective's vectors: a host-based reduce-scatter, all-gather or all-to-all: every host's input and
  // result; a ring allreduce: every host's result and `fill`, which makes the inputs again (the hosts keep
  // none); in-network: the hosts' shared vectors.
  struct DenseVectors {
    Vectors inputs, results;
    const flare::SharedVectors* shared = nullptr;
    flare::SharedVectors::Fill fill;
  };
  // The dense reference of one allreduce; counts the blocks without a usable log.
  uint64_t check_dense(const flare::Job& job, const DenseVectors& v, uint64_t& bad_order);
  std::vector<std::map<uint64_t, const std::vector<uint8_t>*>> m_logged;  // [switch][host address]: a log write
  std::unique_ptr<FlareTraining> m_training;
  flare::SharedVectors::Fill m_fill;  // the single allreduce's inputs, made on demand
  std::string m_workload;
  // The switches' sparse order logs (sparse.c): [switch][block id] the words logged, in order.
  using SparseOrder = std::vector<std::map<uint32_t, std::vector<uint32_t>>>;
  SparseOrder sparse_order() const;
  struct SparseCounts {
    uint64_t flushes = 0, pairs_in = 0, pairs_out = 0;
  };
  // The sparse reference of one allreduce (every host's run); counts the wrong elements into `bad`, returns the
  // blocks whose log is unusable.
  uint64_t check_sparse(const flare::Job& job, const std::vector<const flare::SparseRun*>& hosts,
                        const SparseOrder& order, uint64_t& bad, SparseCounts& counts);
  std::unique_ptr<FlareSystem> m_sys;
  FlareParams m_params;
  FlareStats m_stats;
  std::string m_handler_file, m_handler_name;
  riscv::ElfImage m_image;
  flare::Job m_job;
  core::Dtype m_dtype = core::Dtype::fp32;
  uint64_t m_seed = 1;
  bool m_tree = false, m_ring = false, m_multi = false, m_sparse = false;
  double m_density = 1.0;
  void* m_operator = nullptr;  // dlopen handle of the user operator (the host reference's)
  std::string m_out_dir;
};

}  // namespace fabricvp::pspin
