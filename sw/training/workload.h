// Training workloads (seed 001's workload layer, ASTRA-sim 1.0's input):
// layers with forward, input-gradient and weight-gradient compute, a
// collective (type, size) per phase and an update time, and a parallelism
// strategy. SystemC-free.
//
// Inputs (docs/workloads.md):
//   - ASTRA-sim 1.0 text files, read token by token as ASTRA-sim reads them:
//     the parallelism keyword (and its extra tokens), the number of layers,
//     then per layer: name, reserved, fwd compute, fwd comm type, fwd comm
//     size, ig compute, ig comm type, ig size, wg compute, wg comm type, wg
//     size, update time, and for HYBRID_CUSTOMIZED the layer's parallelism.
//     Compute and update times are cycles of 1 ns, sizes bytes. Unlike
//     ASTRA-sim, a malformed number, a missing token, an unknown keyword or
//     collective name, or trailing tokens are errors naming file:line.
//   - the same content in YAML (sw/workloads/*.yaml).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabricvp::training {

enum class Parallelism : uint8_t {
  data,
  model,
  hybrid_data_model,
  hybrid_model_data,
  hybrid_customized,
  micro,
  hybrid_dlrm,
  hybrid_dlrm_enhanced,
  hybrid_transformer,
  hybrid_transformer_fwd_in_bckwd,
  distributed_inference,
};
/// ASTRA-sim's keyword ("DATA", "HYBRID_TRANSFORMER", ...).
const char* parallelism_name(Parallelism p);
bool parse_parallelism(const std::string& s, Parallelism& out);

enum class Comm : uint8_t { none, allreduce, alltoall, allgather, reducescatter };
/// "NONE", "ALLREDUCE", "ALLTOALL", "ALLGATHER", "REDUCESCATTER".
const char* comm_name(Comm c);
bool parse_comm(const std::string& s, Comm& out);

/// One pass of a layer: its compute and the collective after it.
struct Pass {
  uint64_t compute_ns = 0;
  Comm comm = Comm::none;
  uint64_t bytes = 0;
  /// YAML form only (0: not given): the pass's tensor operations and memory
  /// bytes, for NPUs that time passes by their roofline (compute.timing).
  uint64_t flops = 0, mem_bytes = 0;
};

enum PassKind : uint8_t { kFwd = 0, kIg = 1, kWg = 2 };
const char* pass_name(uint32_t p);  // "fwd", "ig", "wg"

struct Layer {
  std::string name;
  int64_t reserved = -1;  ///< ASTRA-sim's dependency field (read, unused)
  Pass pass[3];           ///< fwd, ig, wg
  uint64_t update_ns = 0;
  Parallelism parallelism = Parallelism::data;  ///< HYBRID_CUSTOMIZED: this layer's
  std::string origin;                           ///< "file:line"
};

struct Workload {
  std::string file;
  Parallelism parallelism = Parallelism::data;
  uint32_t model_parallel_group = 1;                        ///< HYBRID_TRANSFORMER*: NPUs per model-parallel group
  std::vector<uint32_t> checkpoints, checkpoint_initiates;  ///< *_FWD_IN_BCKWD: layer indices
  uint32_t dlrm_last_bottom_layer = 0;                      ///< HYBRID_DLRM*
  std::vector<Layer> layers;
  /// Compute and update time of one iteration at most, in ns, forward passes
  /// recomputed included (each checkpoint initiate re-runs at most all of
  /// them); set by the parsers (validate), used to refuse runs that would take
  /// the picosecond clock past 2^62 (check_run_length).
  uint64_t iteration_ns_bound = 0;
  bool is_dlrm() const {
    return parallelism == Parallelism::hybrid_dlrm || parallelism == Parallelism::hybrid_dlrm_enhanced;
  }
  bool is_transformer() const {
    return parallelism == Parallelism::hybrid_transformer ||
           parallelism == Parallelism::hybrid_transformer_fwd_in_bckwd;
  }
};

/// Parse an ASTRA-sim 1.0 text workload. Throws core::ConfigError "file:line: ...".
Workload parse_astra_text(const std::string& path);
/// The same from the file's text (`path` names it in errors; fuzz target).
Workload parse_astra_text_string(const std::string& text, const std::string& path);
/// Parse the YAML form. Throws core::ConfigError "file:line: ...".
Workload parse_yaml(const std::string& path);
Workload parse_yaml_string(const std::string& text, const std::string& path);
/// By extension: .yaml/.yml the YAML form, anything else ASTRA-sim's text.
Workload load_workload(const std::string& path);

/// Refuses `iterations` iterations of `w` whose compute and update times alone
/// (iteration_ns_bound each) would run past kMaxRunNs: ConfigError naming the file.
constexpr uint64_t kMaxRunNs = uint64_t(1) << 52;  // 4.5e15 ns (52 days): below 2^62 ps
void check_run_length(const Workload& w, uint64_t iterations);

/// Write `w` in ASTRA-sim 1.0's text form (`fabricvp convert`, tests). A layer
/// name the text cannot hold (empty, with white space) is a ConfigError; what
/// it has no place for (the passes' flops and mem_bytes) is listed in `dropped`.
std::string to_astra_text(const Workload& w, std::vector<std::string>* dropped = nullptr);

}  // namespace fabricvp::training
