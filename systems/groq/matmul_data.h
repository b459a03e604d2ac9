// Host side of a checked matrix multiplication on a Groq system (docs/compute.md):
// seeded A and B loaded straight into every chip's SRAM in the compiler's
// layout, and the reference product computed on the host in the order the
// chips compute it: per sub-operation the k-sequential binary32 (or int32)
// sum of the MXM contract (models/tsp/mxm.h), K tiles accumulated in order,
// then the partial products of a column group added in the plan's reduction
// order. So the check is bit-exact for fp16 as for int8.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sw/sched/matmul.h"
#include "systems/groq/system.h"

namespace fabricvp::groq {

/// The MXM's fp16 sub-operation as the host references compute it (models/tsp/mxm.h):
/// out[e] = (((+0 + a[0] w[0][e]) + a[1] w[1][e]) + ...) in binary32, k in order, for
/// e < width, with row k of w at w + k * stride.
void reference_dot_fp16(const float* a, uint32_t kn, const float* w, uint64_t stride, uint32_t width, float* out);

class MatmulData {
 public:
  MatmulData(System& sys, const sched::MatmulPlan& plan, uint64_t seed);
  /// Generate A and B and write every chip's share into its SRAM (or, with
  /// host inputs, issue the compiler's writes over each chip's PCIe link).
  /// Timing only: no data; only the host's writes are issued, empty.
  void load(bool timing_only = false);

  struct Mismatch {
    uint64_t row, col;  ///< element of C
    double expected, got;
  };
  struct Result {
    uint64_t elements = 0, mismatched = 0;
    std::vector<Mismatch> first;  ///< the first few
  };
  /// Read C from the chips holding it and compare with the reference.
  Result check() const;

  /// Element (row, col) of A [M x N] or B [N x L] (raw bits; for tests).
  static void elements(const sched::MatmulRequest& r, uint64_t seed, bool b, uint64_t row, uint64_t col0, uint64_t n,
                       uint8_t* out);

 private:
  /// A's K tile t, all M rows (one vector each, zero-padded); B's tile (t, j) (tile_vectors(t) vectors).
  /// A's K tile t for `rows` rows from row m0 (zero rows beyond M: a block's padding).
  void a_slice(uint32_t t, uint64_t m0, uint64_t rows, uint8_t* out) const;
  void b_tile(uint32_t t, uint32_t j, uint8_t* out) const;
  /// Partial product of one part: [M][(j1 - j0) * 320] result words, in the chips' order.
  std::vector<uint32_t> partial(const sched::MatmulPart& p) const;

  System& m_sys;
  const sched::MatmulPlan& m_plan;
  uint64_t m_seed;
};

}  // namespace fabricvp::groq
