// Compiler for the Cholesky factorization A = L L^T on TSPs (seed 000 §5.5,
// Fig 19; docs/compute.md "Cholesky").
//
// The seed's algorithm, column by column (left-looking): for column i,
//   U = L[i:n, 0:i] . L[i, 0:i]^T       (the MXM: one [1 x 160] x [160 x 320]
//                                        sub-operation per 320 rows and 160 columns)
//   I = S[i:n, i] - U                   (VXM SUB)
//   updates = I * rsqrt(I[0])           (VXM SPLAT, RSQRT, MUL)
// The vector operations run in fly-bys (docs/isa.md "Fly-by"; the seed's
// "single fly-by"): rsqrt(splat(S - U)) of the pivot's vector on the diagonal's
// owner, then ((S - U) x mask) x rsqrt on every block, each reading SRAM once
// and writing once.
// The loop-carried dependence: column i's MXMs need row i of L, which the
// previous column completes.
//
// Distribution (Fig 19 a, b): block-cyclic, 320 rows per block, block rb on
// TSP rb mod T. A chip holds its blocks' columns as vectors whose lanes are the
// block's 320 rows: A (then L) in binary32, 4 vectors per column, and L rounded
// to fp16, 2 vectors per column. Consecutive fp16 columns of a block are an
// MXM weight tile as LW loads it (row k of the tile = column k0 + k), so
// U for a block is the input "row i of L" (one fp16 vector per 160 columns)
// times the block's tiles, accumulated with ACC in column order. Row i is
// built with SXM TRANSPOSEs (lane i of 160 columns -> one vector) by every TSP
// with work in column i, from its own copy of the fp16 columns of row i's
// block: each finished fp16 column (2 vectors) goes over C2C from its owner to
// the TSPs that will need it, once, instead of every row (up to n / 160
// vectors) to every TSP every column. The owner of the diagonal also sends
// rsqrt(I[0]) (one splat vector) so that the other TSPs finish their blocks of
// column i. Across a Dragonfly's global cable each of these goes once, to the
// first TSP of the other node that needs it, which forwards it inside its node. Lanes above the diagonal are cleared by
// a mask (1 on and below the diagonal, else 0) multiplied into the scale, so they hold +-0 and never feed a NaN into a
// later sum.
//
// Rows past n in the last block are zero and stay zero. Every instruction's
// cycle is fixed here (sched::Engine) and the completion predicted; the
// simulation must agree to the picosecond, and the host reference
// (systems/groq/cholesky_data.h) repeats every rounding in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sw/asm/program.h"
#include "sw/sched/machine.h"

namespace fabricvp::sched {

/// Layout units: rows per block (the lanes of an MXM result), columns of L per
/// fp16 sub-operation, vectors of one block column in binary32 and in fp16.
constexpr uint32_t kCholeskyRows = 320, kCholeskyK = 160, kCholeskyF32 = 4, kCholeskyF16 = 2;

struct CholeskyRequest {
  uint64_t n = 0;     ///< A is n x n, symmetric positive definite
  uint32_t tsps = 1;  ///< job ranks 0 .. tsps-1
};

/// One TSP's share.
struct CholeskyPart {
  uint32_t rank = 0, chip = 0;
  std::vector<uint32_t> blocks;  ///< global 320-row blocks it owns, ascending (rb = rank + k * T)
  std::vector<uint32_t> col0;    ///< per local block: its first stored column's slot (columns 0 .. cols(rb) - 1)
  uint32_t s_vec = 0;            ///< binary32 column j of local block b: s_vec + (col0[b] + j) * 4 (A, then L)
  uint32_t l_vec =
      0;  ///< fp16 column j of global block rb (its own or a copy): l_vec + (CholeskyPlan::lcol0[rb] + j) * 2
  uint32_t mask_vec = 0;      ///< mask for diagonal lane l: mask_vec + l * 4 (binary32 1 / 0)
  uint32_t sram_vectors = 0;  ///< vectors used, scratch excluded
};

struct CholeskyPlan {
  CholeskyRequest req;
  uint32_t blocks = 0;          ///< ceil(n / 320)
  std::vector<uint32_t> lcol0;  ///< per global block: its first fp16 column's slot in every TSP's l_vec
  std::vector<CholeskyPart> parts;
  std::vector<sw::Program> programs;  ///< per physical chip
  uint64_t predicted_ps = 0;          ///< last SRAM write of the schedule
  uint64_t subops = 0, weight_loads = 0, transposes = 0, vxm_ops = 0;
  uint64_t sent_vectors = 0;  ///< fp16 columns and splats sent over C2C (forwards inside a node included)

  /// Stored columns of global block rb: min(n, 320 (rb + 1)).
  uint64_t cols(uint32_t rb) const;
  /// FLOPs of the factorization, n^3 / 3 (the seed's count).
  double flops() const { return static_cast<double>(req.n) * req.n * req.n / 3.0; }
};

/// Throws core::ConfigError for what the machine cannot run (too few chips,
/// SRAM or instruction memory too small).
CholeskyPlan plan_cholesky(const Machine& m, const CholeskyRequest& r);

}  // namespace fabricvp::sched
