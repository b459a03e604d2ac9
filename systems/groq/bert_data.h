// Host side of a checked BERT encoder pipeline on a Groq system
// (docs/compute.md "BERT"): seeded weights written into every stage's SRAM in
// the compiler's layout (sw/sched/bert.h), the inferences' inputs written
// over PCIe at the compiler's times, and the reference encoder stack computed
// on the host with every rounding of the chips in the same order — each MXM
// sub-operation's k-sequential binary32 sum of exact fp16 products, chunks
// accumulated in order, the VXM's binary32 operations, EXP and RSQRT
// (models/tsp/vxm.h), the LayerNorm trees and every NARROW to fp16. So every
// inference's output is checked bit for bit in host memory, where HOSTW put it.
#pragma once

#include <cstdint>
#include <vector>

#include "sw/sched/bert.h"
#include "systems/groq/system.h"

namespace fabricvp::groq {

class BertData {
 public:
  BertData(System& sys, const sched::BertPlan& plan, uint64_t seed);
  /// Write every stage's weights, constants and ones rows into its SRAM and,
  /// unless the plan is launched, schedule the inputs' PCIe writes at the
  /// compiler's times (timing_only: the writes carry no data and nothing is loaded).
  void load(bool timing_only);
  /// Inference i's input written over PCIe into stage 0 (launched runs: by the host runtime).
  Host::TimedWrite input_write(uint32_t inference, bool timing_only) const;
  /// Launched runs: compare run r's output in host memory with the
  /// reference before the next run overwrites it (check() then reports them).
  void capture(uint32_t run);

  struct Mismatch {
    uint32_t inference, position, feature;
    float expected, got;
  };
  struct Result {
    uint64_t elements = 0, mismatched = 0;
    uint64_t nonfinite = 0;       ///< elements that are inf or NaN (in the output or the reference): never verified
    std::vector<Mismatch> first;  ///< the first few
    double max_abs = 0;           ///< largest |output| (a sanity figure: LayerNorm keeps it O(1))
  };
  /// Compare every inference's output in host memory with the reference
  /// (launched runs: what capture() found).
  Result check(uint32_t runs) const;

  /// The reference output of inference i: [seq][hidden] binary32, row-major.
  std::vector<float> reference(uint32_t inference) const;

 private:
  /// Element idx of tensor `tensor` of global encoder e (fp16-representable for weights).
  float element(uint32_t e, uint32_t tensor, uint64_t idx) const;
  float input(uint32_t inference, uint64_t s, uint64_t f) const;
  /// Compare inference i's output, read from host memory at host vector `vec`, with the reference.
  void compare(uint32_t inference, uint64_t vec, Result& res) const;
  void input_vectors(uint32_t inference, uint8_t* out) const;

  System& m_sys;
  const sched::BertPlan& m_plan;
  uint64_t m_seed;
  Result m_launched;  // launched runs, compared as each ends
};

}  // namespace fabricvp::groq
