// SiP-ML's hybrid MP-DP training iteration (seed 003 §3.2) as per-GPU
// execution graphs (training::Graph, the form Chakra traces take), run by the
// NPU platforms' collective service. SystemC-free.
//
// Input: an op graph (sw/workloads/sipml/*.yaml, docs/sipml.md):
//   opgraph:
//     description: "..."
//     batch: 16
//     accuracy: {table: time-to-accuracy.yaml, model: transformer}   # optional
//     ops:
//       - {name: qkv0, compute_us: 42.5, out_bytes: 6291456, weight_bytes: 6291456, inputs: [ln0]}
// compute_us (on one GPU) and out_bytes (the activation) for `batch`
// samples, weight_bytes the parameters; inputs name earlier ops.
// scaled() gives the graph for another local batch (compute and activations
// in proportion, weights unchanged). accuracy names the time-to-accuracy
// table (relative to the graph's file) and the model's rows in it (accuracy.h).
//
// GPU g * k + d runs MP group g's sub-ops placed on device d (Algorithm 1,
// placement.h): GPUs of a group are consecutive, so on SiP-Ring a group's
// traffic stays within k positions and the DP ring spans k positions.
// One iteration at every GPU:
//   forward, in placement order: a sub-op's compute waits for its inputs
//     (received from other GPUs, relayed where the placement relays);
//   backward, in reverse: input-gradient compute (as long as the forward)
//     waits for the gradients its consumers send back along the same paths
//     reversed; weight-gradient compute (as long again); the DP all-reduce
//     of the sub-op's weights over the l GPUs holding the same device of
//     every group (a collective over logical dimension 1 of the fabric split
//     k x l), gathered into buckets of at least `bucket_bytes` in the order
//     the gradients are computed (PyTorch DDP's gradient buckets; 0: one
//     all-reduce per sub-op; the last bucket takes what is left), each issued
//     when its last gradient is computed and not waited for until the end; a GPU's all-reduces
//     run one after another in the order they were issued (as on one NCCL
//     stream), so every member of a DP ring issues them in the same order.
// Sends and receives of one GPU pair are chained in order, so they match in
// order (training::GraphRun); a receive is posted after the GPU's compute that
// precedes it in program order, not all at the start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sw/optical/placement.h"
#include "sw/training/chakra.h"

namespace fabricvp::optical {

struct OpGraph {
  std::string file, description;
  uint64_t batch = 1;                          ///< samples the compute times and activations are for
  std::string accuracy_table, accuracy_model;  ///< optional (accuracy.h): the table's path, the model's name in it
  std::vector<Op> ops;
  /// The graph for `local_batch` samples.
  OpGraph scaled(uint64_t local_batch) const;
};

/// Whether `path` is an op-graph YAML file (its top-level key is `opgraph`).
bool is_opgraph_file(const std::string& path);
/// Parse an op graph. Throws core::ConfigError naming file:line and key.
OpGraph parse_opgraph(const std::string& path);
OpGraph parse_opgraph_string(const std::string& text, const std::string& path);

/// The graphs of the k x l GPUs (by GPU id) for one iteration of `placement`
/// replicated l times; `dp_dims`: the involved dimensions of the DP
/// all-reduces (GraphNode::involved_dim; l == 1: none are issued).
std::vector<training::Graph> hybrid_graphs(const OpGraph& g, const Placement& placement, uint32_t l,
                                           const std::vector<bool>& dp_dims, double bucket_bytes);

}  // namespace fabricvp::optical
