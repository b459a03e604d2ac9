// Time to accuracy (seed 003 §4.1): the iteration time the simulation gives
// times the iterations a model needs to reach its target accuracy at the
// run's global batch, from a table of published measurements, one source per
// row (sw/workloads/sipml/time-to-accuracy.yaml, docs/sipml.md):
//   time_to_accuracy:
//     - {model: resnet50, batch: 8192, iterations: 6569, target: "75.9 % top-1",
//        source: "MLPerf reference convergence point resnet_ref_8192 ..."}
// Iterations at a batch between two rows of a model are interpolated
// log-log; below the smallest batch the count scales perfectly (iterations
// x batch constant: the small-batch regime Shallue et al. 2019 measure for
// every workload); above the largest there is no estimate (scaling slows
// there, and by how much is what the table would have to say).
// SystemC-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabricvp::optical {

struct AccuracyRow {
  std::string model;
  uint64_t batch = 0;
  double iterations = 0;
  std::string target, source;
  std::string where;  ///< file:line
};

struct AccuracyTable {
  std::string file;
  std::vector<AccuracyRow> rows;  ///< by model, then batch
};

/// Parse a table. Throws core::ConfigError naming file:line and key (a
/// missing source or target, a malformed number, two rows of one model and
/// batch, iterations that grow with the batch).
AccuracyTable parse_accuracy_table(const std::string& path);
AccuracyTable parse_accuracy_table_string(const std::string& text, const std::string& path);

struct AccuracyEstimate {
  double iterations = 0;
  std::string rule;  ///< how: "row <where>", "interpolated between ...", "perfect scaling from ..."
};

/// Iterations for `model` at global batch `batch`; nullopt with `why` set
/// when the table has no row of the model or the batch is beyond its largest.
std::optional<AccuracyEstimate> iterations_to_accuracy(const AccuracyTable& t, const std::string& model, uint64_t batch,
                                                       std::string& why);

}  // namespace fabricvp::optical
