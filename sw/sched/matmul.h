// Compiler for distributed matrix multiplication on TSPs (seed 000 §5.2;
// docs/compute.md).
//
// C [M x L] = A [M x N] x B [N x L], A and B fp16 (C in fp32) or int8 (C in
// int32). B is the weight matrix: it is cut into [K x 320] tiles (K = 160 for
// fp16, 320 for int8); a chip streams A's rows through one installed tile at a
// time, one [1 x K] x [K x 320] sub-operation per row per cycle per unit.
//
// Splits: `col` column-wise weight splits give each group of chips a share of
// B's 320-column tiles (results concatenated); `row` row-wise weight splits
// give each chip of a group a share of B's K-row tiles and the matching
// columns of A, and the group's partial products are reduced. A group's chips
// share a node when they fit (several groups per node), else fill whole
// nodes of their own (the seed: "cluster row-wise splits in a single node");
// densely in rank order if the job is too small for that. A group's
// reduction follows the packaging: the chips of each node reduce-scatter
// their partial products (C's rows in as many pieces as every node can share
// evenly, a run of them per member), then every other node's holder of piece
// p sends its sum to the holder in the node with the most members, which adds
// them in node order. The order of every addition is part of the plan
// (MatmulPlan::groups), so the host reference reproduces the results bit for
// bit. The transfers of a column tile are booked together, chunk by chunk,
// each on the route where it lands first (MatmulRequest::chunk_vectors).
//
// On a chip, the rows of A are split over the MXM units (2 for fp16, 4 for
// int8), every unit installs every tile of its chip in turn into its two
// weight buffers (loading the next while streaming the current), column tile
// by column tile, K tile by K tile, accumulating into C with ACC. Every
// instruction's cycle is fixed here and the completion predicted; the
// simulation must agree to the picosecond.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/core/dtype.h"
#include "sw/asm/program.h"
#include "sw/sched/machine.h"

namespace fabricvp::sched {

struct MatmulRequest {
  uint64_t M = 0, N = 0, L = 0;
  core::Dtype dtype = core::Dtype::fp16;  ///< fp16 or int8
  uint32_t col = 1, row = 1;              ///< column-wise and row-wise weight splits
  /// A partial product of the row-split reduction goes in runs of
  /// chunk_vectors, each on the route where it would land first given
  /// everything already scheduled (the minimal one or a detour: through
  /// another chip of the node, or between nodes through another node); one
  /// transfer uses at most max_paths different routes.
  uint32_t max_paths = 7;
  uint32_t chunk_vectors = 64;
  /// Inputs streamed from the host over PCIe as the MXMs need them (else
  /// loaded into SRAM before the run); in row order (K tile by K tile: every
  /// A slice sent once) or column order (column tile by column tile: A sent
  /// again for every column tile, seed 000 §5.2).
  bool host_inputs = false;
  bool row_order = true;
  /// C written back to the host over PCIe (HOSTW) as each part of it is
  /// final, into host memory at the same vector addresses it has in SRAM; the
  /// completion is then its last vector in host memory.
  bool host_outputs = false;
  /// Rows of A per block (0: automatic). With inputs from and outputs to the
  /// host and no row splits, a C larger than the SRAM is computed in blocks
  /// of rows: every block streams its rows of A and all of the chip's B
  /// again, and writes its C back, in the same SRAM buffers; the blocks are
  /// one period apart and the program is one block's, repeated by LOOP
  /// (docs/isa.md). Automatic: all of M if it fits, else as few blocks as
  /// fit, balanced (ceil(M / blocks) rows each).
  uint64_t block_rows = 0;
  /// Column splits only: compile and simulate just the TSP with the widest
  /// share of B's columns (the first such). Column splits never communicate
  /// and every TSP has its own PCIe link, so it finishes last and the
  /// cluster's completion is its own; the others run the same program on
  /// narrower shares. MatmulPlan::parts holds that one part; tsps is col.
  bool widest_share = false;
};

/// A positive decimal integer, strictly (core::ConfigError naming `what` and showing `example` otherwise).
uint64_t parse_positive(const std::string& text, const std::string& what, const char* example);
/// Parse "800x32576x8192" into M, N, L (core::ConfigError naming `what` otherwise).
void parse_shape(const std::string& text, MatmulRequest& r, const std::string& what = "--shape");
/// Parse "col=8,row=13" (either may be left out).
void parse_split(const std::string& text, MatmulRequest& r, const std::string& what = "--split");

/// One chip's share.
struct MatmulPart {
  uint32_t rank = 0, chip = 0;    ///< job rank and physical chip
  uint32_t group = 0, index = 0;  ///< column group g, row split i
  uint32_t t0 = 0, t1 = 0;        ///< K tiles of B (rows t*K .. t*K + K) it multiplies
  uint32_t j0 = 0, j1 = 0;        ///< 320-column tiles of B it holds
  uint32_t a_vec = 0;             ///< A: vector (t - t0) * M + m = A[m][t*K .. t*K + K), zero-padded
  uint32_t b_vec = 0;  ///< B: tile (t, j) at b_vec + ((j - j0) * (t1 - t0) + t - t0) * 320 (tile_vectors(t) used)
  uint32_t c_vec = 0;  ///< C: vector ((j - j0) * M + m) * 4 + q = C[m][j*320 + 80q .. + 80)
  uint32_t sram_vectors = 0;  ///< highest vector used (A, B, C, reduction staging)
};

/// A host write over a chip's PCIe link (MatmulRequest::host_inputs), in the
/// order the host must issue them per chip: n vectors into `addr` of part
/// `part`, ready at `ready_ps`: A's K tile t (all M rows) or B's tile (t, j).
struct MatmulDma {
  uint32_t part = 0, addr = 0, n = 0;
  uint64_t ready_ps = 0;
  bool b = false;
  uint32_t t = 0, j = 0;
};

/// How a column group's partial products are reduced (row > 1).
struct MatmulGroup {
  std::vector<std::vector<uint32_t>> nodes;  ///< part indices per node, in rank order; the largest node first
  struct Piece {
    uint64_t m0 = 0, m1 = 0;       ///< rows of C
    std::vector<uint32_t> holder;  ///< per node: the part that sums this piece there
  };
  std::vector<Piece> pieces;  ///< the final result of piece p is on holder[0]
};

struct MatmulPlan {
  MatmulRequest req;
  uint32_t K = 0;                     ///< tile rows: 160 (fp16) or 320 (int8)
  uint32_t T = 0, J = 0;              ///< K tiles and 320-column tiles of B
  uint32_t units = 0;                 ///< MXM units per chip used
  uint64_t tsps = 0;                  ///< TSPs of the decomposition (col x row), simulated or not
  std::vector<MatmulPart> parts;      ///< part g * row + i: column group g, row split i
  std::vector<MatmulGroup> groups;    ///< by column group
  std::vector<sw::Program> programs;  ///< per physical chip
  std::vector<MatmulDma> dmas;        ///< host inputs: the writes over PCIe, in issue order
  uint64_t host_bytes = 0;            ///< bytes of those writes
  uint64_t host_out_bytes = 0;        ///< bytes of C written back to the host (host_outputs)
  double host_GBps_at_peak = 0;       ///< PCIe bandwidth a chip needs for its MXMs never to wait (GB/s)
  uint64_t predicted_ps = 0;          ///< last SRAM write of the schedule
  uint64_t compute_end_ps = 0;        ///< last MXM result written
  uint64_t subops = 0;                ///< sub-operations over all chips
  uint64_t weight_loads = 0;          ///< tiles installed over all chips
  uint64_t bursts = 0, reduced_vectors = 0;
  uint32_t max_hops = 0;
  /// Blocks of rows (MatmulRequest::block_rows): `blocks` of `block_rows` rows
  /// (the last padded with zero rows of A), block b the first shifted by b *
  /// block_period_ps; dmas are block 0's (block b sends rows b * block_rows
  /// on, at ready_ps + b * block_period_ps).
  uint64_t blocks = 1, block_rows = 0, block_period_ps = 0;
  /// Where row m of C's column tile j of part p is when the run ends: an SRAM
  /// vector address (C in SRAM), or a host vector address (C written to the host).
  uint64_t c_vector(const MatmulPart& p, uint32_t j, uint64_t m) const;

  /// Vectors of SRAM a tile of K-tile t takes (fp16: 2 per row, int8: 1).
  uint32_t tile_vectors(uint32_t t) const;
  /// Useful multiply-accumulates: M * N * L.
  double macs() const { return static_cast<double>(req.M) * req.N * req.L; }
  /// Peak multiply-accumulates per cycle of one chip (fp16 2 x 160 x 320, int8 4 x 320 x 320 with 4 planes).
  double peak_macs_per_cycle = 0;
};

/// Throws core::ConfigError for requests the machine cannot run (too few
/// chips, a share larger than the SRAM, an unknown type).
MatmulPlan plan_matmul(const Machine& m, const MatmulRequest& r);

}  // namespace fabricvp::sched
