// Chakra execution traces (ASTRA-sim 2.x's workload input): one graph per
// NPU, `<prefix>.<npu>.et`, of compute and collective nodes with their
// dependencies, and their execution on an NPU platform. SystemC-free.
//
// Reading (protobuf, sw/training/chakra/et_def.proto): GlobalMetadata, then
// Nodes, each after its varint32 length. A node runs when all its data and
// control dependencies have finished:
//   COMP_NODE       duration_micros of compute; one compute node at a time per NPU
//   COMM_COLL_NODE  comm_type (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER,
//                   ALL_TO_ALL) of comm_size bytes over the dimensions
//                   involved_dim marks (default: all), through the collective
//                   service, issued when ready (several may be in flight)
//   COMM_SEND_NODE  comm_size bytes to comm_dst, COMM_RECV_NODE from comm_src:
//                   a point-to-point transfer routed through the fabric in
//                   dimension order; sends and receives of a pair match in order
//                   (comm_tag is read and not used for matching)
//   METADATA_NODE   nothing
// Anything else (memory, storage nodes, process groups other than all ranks,
// CPU collectives) is refused with the file and node: fabricvp does not model it yet.
//
// Exposed communication of a graph: time with a collective in flight and no
// compute node running.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sw/training/loop.h"
#include "sw/training/workload.h"

namespace fabricvp::training {

struct GraphNode {
  enum Kind : uint8_t { comp, coll, send, recv, metadata };
  uint64_t id = 0;
  std::string name;
  Kind kind = comp;
  uint64_t duration_ns = 0;        ///< comp
  Comm comm = Comm::none;          ///< coll
  uint64_t bytes = 0;              ///< coll, send, recv
  uint32_t peer = 0;               ///< send: comm_dst; recv: comm_src
  std::vector<bool> involved_dim;  ///< empty: every dimension
  std::vector<uint64_t> deps;      ///< data and control
};

struct Graph {
  std::string file;
  std::vector<GraphNode> nodes;
};

/// Read `<prefix>.<npu>.et` for npu = 0 .. npus - 1 (`prefix` may also be one
/// of the files). Throws core::ConfigError naming the file and node.
std::vector<Graph> read_chakra(const std::string& prefix, uint32_t npus);
/// Write a graph as a Chakra trace (tests, converters).
void write_chakra(const std::string& path, const Graph& g);
/// "x.0.et" -> "x"; anything else unchanged.
std::string chakra_prefix(const std::string& path);

/// Every NPU runs its graph (see the top of this file).
class GraphRun {
 public:
  GraphRun(std::vector<Graph> graphs, Platform& p);
  ~GraphRun();
  void start();
  bool done() const;
  /// compute, exposed, comm_busy, end (per-layer fields empty).
  const NpuTimes& times(uint32_t npu) const;
  const std::vector<Graph>& graphs() const { return m_graphs; }
  std::string progress() const;
  uint64_t collectives() const { return m_collectives; }

  /// The schedule read ahead (an optical control plane's traffic estimate):
  /// for every NPU, from its first unfinished node in program order (node
  /// index), f(npu, node) for each send and collective node not finished
  /// whose start lies within `horizon_ps` of now when only the compute
  /// before it is counted (the one running for what is left of it; no waiting
  /// for peers), issued ones included.
  void ahead(uint64_t horizon_ps, const std::function<void(uint32_t npu, uint32_t node)>& f) const;
  /// Nodes finished so far, over every NPU (grows while the run progresses).
  uint64_t finished_nodes() const { return m_finished; }
  /// Whether some NPU is running a compute node.
  bool computing() const;

 private:
  struct Npu;
  void pump(Npu& n);
  void finished(Npu& n, uint32_t node);
  void account(Npu& n);
  std::vector<Graph> m_graphs;
  Platform& m_p;
  std::vector<std::unique_ptr<Npu>> m_npus;
  uint64_t m_collectives = 0, m_finished = 0;
};

}  // namespace fabricvp::training
