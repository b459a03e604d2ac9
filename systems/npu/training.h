// A training workload on an NPU fabric (seed 001's workload layer over the
// platform's collective service): the loop of sw/training/loop.h, its
// collectives submitted to every NPU's collective service on the groups of
// the dimensions they span, compute as time at each NPU; the records behind
// the summary, stats.json, collectives.csv, links.csv and the trace.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sw/optical/accuracy.h"
#include "sw/optical/placement.h"
#include "sw/training/chakra.h"
#include "sw/training/loop.h"
#include "sw/training/workload.h"
#include "systems/npu/system.h"

namespace fabricvp::npusys {

/// One collective of the workload on one group (every member's view merged).
struct CollectiveRecord {
  uint32_t iteration = 0, layer = 0, pass = 0;
  training::Comm comm = training::Comm::none;
  uint64_t bytes = 0, simulated_bytes = 0;
  uint32_t group = 0, group_size = 0, members_done = 0;
  uint64_t issue_ps = 0, end_ps = 0;  ///< first member's issue, last member's result
  uint32_t chunks = 0;
  std::string algorithm;
  uint32_t mask = 0;  ///< the dimensions it spans (bit d: dimension d)
  // --data: the buffer every member used, and what the check found.
  uint64_t address = 0;
  uint64_t mismatched = 0;
  bool checked = false;
};

class TrainingRun final : public training::Platform {
 public:
  /// `data`: every collective moves real bytes (seeded inputs) and is checked
  /// against the host reference when its last member has its result.
  TrainingRun(System& sys, const std::string& workload_file, uint32_t iterations, core::Dtype dtype, bool data);
  ~TrainingRun() override;
  void start() {
    if (m_graph)
      m_graph->start();
    else
      m_loop->start();
  }
  /// A Chakra trace or an op graph (a graph per NPU) rather than a layer-wise workload.
  bool is_graph() const { return m_graph != nullptr; }
  /// An op graph placed by SiP-ML's Algorithm 1 (sipml.*), with its placement.
  bool is_opgraph() const { return m_opgraph; }
  const optical::Placement* placement() const { return m_placement.get(); }
  /// The samples each DP group's op graph runs (op graphs).
  uint64_t local_batch() const { return m_local_batch; }
  /// Op-graph workloads: bytes the fullest GPU holds to train (Placement::memory).
  double gpu_memory_bytes() const { return m_gpu_memory_bytes; }
  /// The op graph's time-to-accuracy table and its model's name there (null: the graph names none).
  const optical::AccuracyTable* accuracy_table() const { return m_accuracy.get(); }
  const std::string& accuracy_model() const { return m_accuracy_model; }
  const training::GraphRun& graph() const { return *m_graph; }
  /// Times of one NPU (either kind of workload).
  const training::NpuTimes& times(uint32_t npu) const { return m_graph ? m_graph->times(npu) : m_loop->times(npu); }
  /// A collective's name in records and traces.
  std::string name_of(const training::Call& c) const;
  std::string name_of_record(const CollectiveRecord& r) const;
  /// Throws std::logic_error with what is unfinished if the loop did not end.
  void finish();
  /// Add the bytes every collective of every iteration sends across optical
  /// planes (System::optical_demand): what their one-shot circuits are planned for.
  void optical_demand(std::vector<optical::Demand>& out);
  /// What an execution graph's node sends across optical planes: a send's
  /// bytes to its peer; a collective's messages at every member of its group
  /// (`own_only`: at `npu` alone).
  void node_demand(uint32_t npu, const training::GraphNode& node, bool own_only, std::vector<optical::Demand>& out);
  /// What `npu` moves in a collective over `dims` (own_only: its own messages; else its whole group's).
  void collective_demand(uint32_t npu, const std::vector<uint32_t>& dims, training::Comm comm, uint64_t bytes,
                         bool own_only, std::vector<optical::Demand>& out);

  const training::Workload& workload() const { return m_w; }
  const training::TrainingLoop& loop() const { return *m_loop; }
  uint32_t iterations() const { return m_iterations; }
  bool data() const { return m_data; }
  /// --data: collectives checked, and elements that differed (all of them).
  uint64_t checked() const { return m_checked; }
  uint64_t mismatched() const { return m_mismatched; }
  /// The first mismatches ("npu3 layer conv1 wg ALLREDUCE iteration 0 byte 64: expected 1.5 got 2").
  const std::vector<std::string>& mismatches() const { return m_first_bad; }
  core::Dtype dtype() const { return m_dtype; }
  /// Records in issue order.
  std::vector<const CollectiveRecord*> records() const;
  void write_collectives_csv(const std::string& path) const;
  void write_links_csv(const std::string& path) const;
  /// Every optical plane's pairs that carried anything (plane, src_npu, dst_npu,
  /// messages, bytes): the measured traffic matrix. False if there are no planes.
  bool write_traffic_csv(const std::string& path) const;

  // training::Platform
  uint32_t npus() const override { return static_cast<uint32_t>(m_sys.npus.size()); }
  std::vector<uint32_t> dim_sizes() const override;
  uint64_t now() const override;
  void at(uint32_t npu, uint64_t t, std::function<void()> fn) override;
  void collective(const training::Call& call, std::function<void()> done) override;
  uint64_t compute_ps(uint32_t npu, const training::Pass& p) override;
  void computed(uint32_t npu, uint32_t layer, uint32_t pass, uint64_t start, uint64_t end) override;
  void communicated(const training::Call& call, uint64_t issue, uint64_t end) override;
  void p2p(uint32_t npu, uint32_t src, uint32_t dst, uint64_t bytes, std::function<void()> done) override;
  /// Point-to-point transfers run (Chakra sends and receives, counted at the sender).
  uint64_t p2p_transfers() const { return m_p2p; }
  /// --data: transfers whose received bytes were compared with what was sent.
  uint64_t p2p_checked() const { return m_p2p_checked; }

 private:
  /// The dimensions a graph's collective node involves.
  std::vector<uint32_t> node_dims(const training::GraphNode& node) const;
  struct Groups {
    std::vector<Group> groups;
    std::vector<uint32_t> of_npu;   // group index of each NPU
    std::vector<uint32_t> rank_of;  // its rank in that group
  };
  const Groups& groups(const std::vector<uint32_t>& dims);
  void split_for_model_parallelism();
  void build_opgraph(const std::string& file);
  bool m_opgraph = false;
  uint64_t m_local_batch = 0;
  double m_gpu_memory_bytes = 0;
  std::unique_ptr<optical::AccuracyTable> m_accuracy;
  std::string m_accuracy_model;
  std::unique_ptr<optical::Placement> m_placement;
  using PlanKey = std::tuple<uint32_t, uint32_t, uint64_t>;  // (dims mask, kind, elems)
  const std::vector<std::vector<std::shared_ptr<const npu::CollectivePlan>>>& plans(uint32_t mask, const Groups& g,
                                                                                    npu::CollectiveKind kind,
                                                                                    uint64_t elems);
  System& m_sys;
  training::Workload m_w;
  /// ndim: the fabric with a dimension split for a model-parallel group that ends inside it (else null).
  std::shared_ptr<const collectives::ndim::Shape> m_logical;
  uint32_t m_iterations;
  core::Dtype m_dtype;
  std::unique_ptr<training::TrainingLoop> m_loop;
  std::unique_ptr<training::GraphRun> m_graph;
  std::map<uint32_t, Groups> m_groups;                                                              // by dims mask
  std::map<PlanKey, std::vector<std::vector<std::shared_ptr<const npu::CollectivePlan>>>> m_plans;  // [group][rank]
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, CollectiveRecord> m_records;  // (it, layer, pass, group)
  // --data
  uint64_t seed_of(const CollectiveRecord& r, uint32_t npu) const;
  uint64_t allocate(uint64_t bytes);
  void release(uint64_t address);
  void check(CollectiveRecord& r);
  bool m_data = false;
  std::map<uint64_t, uint64_t> m_used;  // address -> bytes of the buffers in use (first fit)
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<uint64_t, uint32_t>>
      m_buffers;  // key -> (address, users)
  uint64_t m_checked = 0, m_mismatched = 0;
  std::vector<std::string> m_first_bad;
  std::vector<const CollectiveRecord*> m_order;
  struct P2pKey {
    uint32_t src, dst;
    uint64_t elems;
    bool operator==(const P2pKey& o) const { return src == o.src && dst == o.dst && elems == o.elems; }
  };
  struct P2pKeyHash {
    size_t operator()(const P2pKey& k) const {
      return std::hash<uint64_t>()((uint64_t(k.src) << 32 | k.dst) * 0x9E3779B97F4A7C15ull ^ k.elems);
    }
  };
  std::unordered_map<P2pKey, std::array<std::shared_ptr<const npu::CollectivePlan>, 2>, P2pKeyHash>
      m_p2p_plans;  // sender's, receiver's (looked up per transfer)
  uint64_t m_p2p = 0;
  std::vector<std::function<void()>> m_p2p_done;  // timing-only transfers' callbacks, by slot
  std::vector<uint32_t> m_p2p_free;
  /// A transfer is one message (not collective.chunks): the fabric is one
  /// optical or electrical plane, a single hop with nothing to pipeline.
  bool m_p2p_whole = false;
  // --data: the k-th transfer from src to dst at the sender meets the k-th at the receiver.
  struct P2pData {
    uint64_t address = 0, bytes = 0;
    uint32_t sides_done = 0;
    bool allocated = false;
  };
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, P2pData> m_p2p_data;    // (src, dst, k)
  std::map<std::pair<uint32_t, uint32_t>, std::array<uint32_t, 2>> m_p2p_k;  // next k at (sender, receiver)
  uint64_t m_p2p_checked = 0;
  void check_p2p(uint32_t src, uint32_t dst, uint32_t k, const P2pData& d);
  std::unique_ptr<training::Tracks> m_tracks;
};

}  // namespace fabricvp::npusys
