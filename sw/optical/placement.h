// SiP-ML's parallelization (seed 003 §3.2, Algorithm 1): ops split into
// sub-ops near a computation quantum, placed on the k GPUs of a
// model-parallel group so that GPU i sends only to GPUs j with
// (j - i) mod k <= delta (delta = D - 1: one more peer is the data-parallel
// ring), the placement then replicated over l data-parallel groups.
// SystemC-free.
//
// Splitting (fabricvp's reading of "the most efficient dimension for each
// op"): an op with weights is split by output channels, like Megatron's
// tensor parallelism: sub-op j of p holds 1/p of the weights, needs its
// input whole (every part of each producer) and produces 1/p of the output
// channels. An op without weights (attention over heads, adds, norms) is
// split by rows of its data: sub-op j covers rows [j/p, (j+1)/p) and needs
// the rows it covers of each input (from a row-split producer the parts
// whose rows overlap; from a channel-split one its rows of every part). So
// weights are never replicated inside an MP group (no gradient all-reduce
// there), and the activations flow as Fig. 4(b)'s edges. A row-split op
// after a row-split op is split at least as finely as that input /
// (delta + 1), so that a sub-op gathers from at most delta + 1 of its parts.
// Below full reach (delta + 1 < k) an op with weights has at most
// (delta + 2) / 2 parts: its consumers gather every part, and only
// delta - m + 2 GPUs are within reach of m consecutive ones, so a chain of
// wider channel splits would pile onto a few GPUs (relocations).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabricvp::optical {

/// One op of a DNN's forward graph, for the model-parallel group's local batch.
struct Op {
  std::string name;
  double compute_us = 0;         ///< on one GPU
  double out_bytes = 0;          ///< the activation it produces
  double weight_bytes = 0;       ///< its parameters
  std::vector<uint32_t> inputs;  ///< ops whose outputs it consumes (earlier in the list)
};

struct SubOp {
  uint32_t op = 0, part = 0, parts = 1;
  double compute_us = 0, weight_bytes = 0;
  uint32_t device = 0;              ///< GPU of the MP group, 0..k-1
  double start_us = 0, end_us = 0;  ///< Algorithm 1's schedule (compute only)
};

/// Data from sub-op `from` to sub-op `to` (indices into Placement::subs),
/// through the relay GPUs `via` in order when the consumer is out of the
/// producer's reach (each hop at most delta ahead).
struct Transfer {
  uint32_t from = 0, to = 0;
  double bytes = 0;
  std::vector<uint32_t> via;
};

struct Placement {
  uint32_t k = 1, delta = 0;
  double tau_us = 0;
  std::vector<SubOp> subs;          ///< by op, then part
  std::vector<uint32_t> first_sub;  ///< per op: its first sub-op
  std::vector<Transfer> transfers;  ///< every producer -> consumer edge of the balanced graph
  uint32_t relocations = 0;         ///< sub-ops moved to make a consumer's placement feasible
  uint32_t relayed_hops = 0;        ///< relay hops of transfers no relocation could bring within reach
  double makespan_us = 0;           ///< the forward pass's end in Algorithm 1's schedule
  /// bytes[i][j]: what device i sends device j in one forward pass (i != j).
  std::vector<std::vector<double>> traffic() const;
  /// Peers a device sends to, at most.
  uint32_t max_peers() const;
  /// What a device holds to train (`ops` as placed): its sub-ops' weights
  /// with their gradients and mixed-precision Adam state (16 bytes per 2-byte
  /// parameter: fp16 weights and gradients, an fp32 master copy and two fp32
  /// moments, so 8x the weight bytes), and the activations they produce, kept
  /// for the backward pass (no recomputation).
  struct DeviceMemory {
    double state = 0, activations = 0;
    double total() const { return state + activations; }
  };
  std::vector<DeviceMemory> memory(const std::vector<Op>& ops) const;
};

/// Split and place one forward pass on k GPUs with degree constraint delta
/// (Algorithm 1). `ops` in topological order (inputs before consumers). A
/// sub-op goes to the GPU, among those within delta after all its producers,
/// where it can start first (ties: nearest after its largest producer, so a
/// chain stays on its GPUs). If no GPU is within reach of all producers, the
/// ones out of reach are relocated within delta before one GPU (the
/// paper's remedy) if their own producers and consumers allow; else the
/// sub-op goes within reach of its largest producer and the other producers'
/// data is relayed by the GPUs delta ahead (skip connections across a wide
/// op at a small delta). Throws std::invalid_argument for a bad graph (an
/// input not before its consumer, a negative size, k == 0, delta >= k, delta
/// == 0 with k > 1).
Placement place(const std::vector<Op>& ops, uint32_t k, uint32_t delta, double tau_us);

}  // namespace fabricvp::optical
