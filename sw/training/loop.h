// The training loop of ASTRA-sim's workload layer (seed 001 §III), run by
// every NPU against the collective service of its platform. SystemC-free:
// the platform (systems/npu/training.cpp) says how time passes and how a
// collective runs.
//
// One iteration at every NPU (ASTRA-sim 1.0's order, docs/workloads.md):
//   forward, layers 0 .. L-1: wait for the layer's weight-gradient collective
//     of the previous iteration; forward compute; the forward collective,
//     blocking (DLRM: an ALLTOALL, non-blocking, waited for at
//     DLRM_LAST_BOTTOM_LAYER);
//   backward, layers L-1 .. 0:
//     DATA, MICRO, DLRM: weight-gradient compute, its collective issued
//       (non-blocking), input-gradient compute (not for layer 0; DLRM: after
//       layer LAST_BOTTOM+1's, layer 0's input-gradient ALLTOALL is issued,
//       and HYBRID_DLRM waits for it in layer 0's weight-gradient step);
//     the others: (*_FWD_IN_BCKWD: at a layer that initiates a recompute,
//       forward again from the nearest checkpoint before it), input-gradient
//       compute, its collective (non-blocking; HYBRID_TRANSFORMER*: blocking;
//       none for layer 0 except in the transformers), weight-gradient compute,
//       its collective (non-blocking), then wait for the input-gradient one.
// A collective's result counts from its completion plus the layer's update
// time. After the last iteration the NPU waits for every collective.
//
// Which dimensions a collective spans (ASTRA-sim's involved dimensions):
//   DATA, MICRO, DLRM    weight gradients on every dimension (DLRM's layer 0: every pass)
//   MODEL                forward and input gradients on every dimension
//   HYBRID_DATA_MODEL    forward and input gradients on dimension 0, weight gradients on the others
//   HYBRID_MODEL_DATA    weight gradients on dimension 0, the others on the rest
//   HYBRID_TRANSFORMER*  model-parallel group = the first dimensions whose sizes multiply to
//                        model_parallel_NPU_group (forward, input gradients); weight gradients on the rest
//
// Exposed communication: the time an NPU waits for a collective with no
// compute it could run (at the blocking points above and at the end).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sw/training/workload.h"

namespace fabricvp::training {

/// One collective the loop starts at one NPU.
struct Call {
  uint32_t npu = 0, iteration = 0, layer = 0, pass = 0;
  Comm comm = Comm::none;
  uint64_t bytes = 0;
  std::vector<uint32_t> dims;  ///< fabric dimensions it spans
};

/// What the loop needs from the platform.
class Platform {
 public:
  virtual ~Platform() = default;
  virtual uint32_t npus() const = 0;
  /// Sizes of the fabric's dimensions, in order.
  virtual std::vector<uint32_t> dim_sizes() const = 0;
  virtual uint64_t now() const = 0;
  /// Run `fn` at simulated time t (ps, >= now) on behalf of `npu`.
  virtual void at(uint32_t npu, uint64_t t, std::function<void()> fn) = 0;
  /// Start a collective now; `done()` at its completion at this NPU.
  virtual void collective(const Call& call, std::function<void()> done) = 0;
  /// Start this NPU's side of a point-to-point transfer of `bytes` from `src`
  /// to `dst` now (npu is one of them); `done()` when its side is complete
  /// (sent, or received). Transfers between a pair match in order.
  virtual void p2p(uint32_t npu, uint32_t src, uint32_t dst, uint64_t bytes, std::function<void()> done) {
    (void)npu, (void)src, (void)dst, (void)bytes, (void)done;
    throw std::logic_error("this platform has no point-to-point transfers");
  }
  /// How long `npu` computes pass `p` (ps); by default its compute_ns.
  virtual uint64_t compute_ps(uint32_t npu, const Pass& p) {
    (void)npu;
    return p.compute_ns * 1000;
  }
  /// Observers (statistics, traces): a compute span, a collective's life at one NPU.
  virtual void computed(uint32_t, uint32_t /*layer*/, uint32_t /*pass*/, uint64_t /*start*/, uint64_t /*end*/) {}
  virtual void communicated(const Call&, uint64_t /*issue*/, uint64_t /*end*/) {}
};

/// Times of one NPU (ps).
struct NpuTimes {
  uint64_t compute = 0, exposed = 0, comm_busy = 0, end = 0;
  std::vector<uint64_t> iteration_end;  ///< per iteration: the end of its backward pass
  std::vector<uint64_t> iteration_compute, iteration_exposed;
  /// Per layer and pass: compute, exposed communication, collective time (issue to result).
  std::vector<std::array<uint64_t, 3>> layer_compute, layer_exposed, layer_comm;
};

/// A training run's Perfetto tracks (when tracing is on): process "workload", per NPU (or host: `unit`) a
/// compute track and a collectives track.
class Tracks {
 public:
  Tracks(uint32_t npus, const char* unit);
  /// A compute span of `npu` named `name`, for node or layer `node`.
  void compute(uint32_t npu, const char* name, const std::string& node, uint64_t start, uint64_t end) const;
  /// A collective's life at one NPU (issue to result), of layer or node `layer`.
  void collective(const Call& call, const std::string& layer, uint64_t issue, uint64_t end) const;

 private:
  uint32_t m_pid = 0;  // 0: tracing is off
};

class TrainingLoop {
 public:
  /// Checks the workload against the platform (throws core::ConfigError).
  TrainingLoop(const Workload& w, Platform& p, uint32_t iterations);
  ~TrainingLoop();
  TrainingLoop(const TrainingLoop&) = delete;
  TrainingLoop& operator=(const TrainingLoop&) = delete;
  /// Start every NPU at the current time.
  void start();
  /// Every NPU finished every iteration and every collective.
  bool done() const;
  const NpuTimes& times(uint32_t npu) const;
  /// Dimensions a pass's collective spans for layer `layer` (empty: none).
  const std::vector<uint32_t>& dims(uint32_t layer, uint32_t pass) const;
  /// "npu3: iteration 1, backward layer 4 waiting for wg ALLREDUCE" (a stuck run).
  std::string progress() const;
  /// Share of the program steps every NPU has taken, 0..1 (for an ETA).
  double fraction_done() const;
  /// The schedule read ahead (an optical control plane's traffic estimate,
  /// as GraphRun::ahead): for every NPU, f(npu, layer, pass) for each
  /// collective it has issued and not had back, then for each it will issue
  /// whose issue lies within `horizon_ps` of now when only the compute before
  /// it is counted (the running one for what is left of it; no waiting for
  /// collectives or peers), into the following iterations too (at most two
  /// iterations' steps: the program repeats).
  void ahead(uint64_t horizon_ps, const std::function<void(uint32_t npu, uint32_t layer, uint32_t pass)>& f) const;
  /// Program steps taken so far, over every NPU (grows while the run progresses).
  uint64_t steps_taken() const;
  /// Whether some NPU is computing.
  bool computing() const;

 private:
  struct Npu;
  struct Program;
  void step(Npu& n);
  void issue(Npu& n, uint32_t layer, uint32_t pass);
  /// Wait for the collective of (layer, pass) if it is outstanding; true if the NPU must wait.
  bool wait(Npu& n, uint32_t layer, uint32_t pass);
  const Workload& m_w;
  Platform& m_p;
  uint32_t m_iterations;
  std::vector<std::array<std::vector<uint32_t>, 3>> m_dims;  // [layer][pass]
  std::unique_ptr<Program> m_program;                        // one iteration, the same at every NPU
  std::vector<std::unique_ptr<Npu>> m_npus;
};

}  // namespace fabricvp::training
