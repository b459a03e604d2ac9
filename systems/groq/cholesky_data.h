// Host side of a checked Cholesky factorization on a Groq system
// (docs/compute.md "Cholesky"): a symmetric positive definite A (seeded, or
// the user's from a Matrix Market file) written into every chip's SRAM in the compiler's layout
// (sw/sched/cholesky.h), and the reference factorization computed on the host
// with every rounding of the chips in the same order: each sub-operation's
// k-sequential binary32 sum of exact fp16 products (models/tsp/mxm.h), the
// 160-column chunks accumulated in order, the binary32 SUB and MULs, the
// VXM's reciprocal square root and the rounding of L to fp16 that the next
// columns multiply. So L is checked bit for bit; the residual
// ||L L^T - A||_F / ||A||_F of the chips' L is reported beside it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/core/matrix_market.h"
#include "sw/sched/cholesky.h"
#include "systems/groq/system.h"

namespace fabricvp::groq {

/// A: seeded (CholeskyData::a_element) or read from a Matrix Market file.
struct CholeskyInput {
  uint64_t n = 0;
  uint64_t seed = 1;
  std::shared_ptr<const core::MatrixMarket> file;  ///< null: seeded
  std::string path;                                ///< the file (errors name it)
  float at(uint64_t r, uint64_t c) const;
  /// The user's A from `path`: square, symmetric (bit for bit), at most `max_n` rows; ConfigError naming the file
  /// otherwise.
  static CholeskyInput read(const std::string& path, uint64_t max_n);
};

class CholeskyData {
 public:
  CholeskyData(System& sys, const sched::CholeskyPlan& plan, CholeskyInput a);
  /// Write every chip's blocks of A (and the diagonal masks) into its SRAM and
  /// compute the reference (ConfigError naming A's source if A is not
  /// positive definite in the chips' binary32 arithmetic).
  void load();

  struct Mismatch {
    uint64_t row, col;
    double expected, got;
  };
  struct Result {
    uint64_t elements = 0, mismatched = 0;
    std::vector<Mismatch> first;  ///< the first few
    double residual = 0;          ///< ||L L^T - A||_F / ||A||_F of the chips' L (binary32 values), in binary64
  };
  /// Read L (on and below the diagonal) from the chips and compare with the reference.
  Result check() const;

  /// Element (r, c) of A (symmetric: off-diagonal uniform in [-1, 1), diagonal n + [0, 1): diagonally dominant).
  static float a_element(uint64_t n, uint64_t seed, uint64_t r, uint64_t c);
  /// The reference L in binary32, column-major with `rows` (n rounded up to
  /// 320) per column. Throws ConfigError at the first column whose pivot is
  /// not positive (A is not positive definite in binary32).
  static std::vector<float> reference(const CholeskyInput& a, uint64_t& rows);

 private:
  System& m_sys;
  const sched::CholeskyPlan& m_plan;
  CholeskyInput m_a;
  std::vector<float> m_want;  ///< the reference L (load)
  uint64_t m_rows = 0;
};

}  // namespace fabricvp::groq
