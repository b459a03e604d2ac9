// The TSP matrix unit (MXM, seed 000 §5.2; docs/isa.md "LW and MXM").
//
// A chip has `mxm_planes` planes (4). An int8 unit is one plane, an fp16 unit
// a pair of planes (fp16 unit u = planes 2u, 2u+1), so a chip runs four int8
// or two fp16 [1 x K] x [K x 320] sub-operations per cycle. Every plane has
// two weight buffers: LW fills one while an MXM streams through the other.
//
// Arithmetic of one sub-operation (the contract the host references follow):
//   fp16: r_j = (((+0 + a_0 w_0j) + a_1 w_1j) + ... + a_159 w_159,j), every
//         product exact in binary32 (11 x 11 significand bits), every sum
//         rounded to nearest even in binary32; subnormals kept; a NaN result
//         is the canonical quiet NaN 0x7fc00000.
//   int8: r_j = sum_k a_k w_kj in int32 (exact: |sum| < 2^23).
// With ACC the result written is dst_j + r_j (binary32 or wrapping int32
// addition), dst read at the write cycle; without ACC it is r_j.
#pragma once

#include <cstdint>
#include <memory>

#include "models/core/dtype.h"
#include "models/tsp/isa.h"

namespace fabricvp::tsp {

/// The weights in one buffer of a unit, held as the multiplier uses them.
class WeightTile {
 public:
  /// Prepare for an LW of `vectors` vectors of type dt: rows past them read as zero.
  void begin(core::Dtype dt, uint32_t vectors);
  /// Store vector v (0 <= v < kTileVectors) of the tile from SRAM.
  void load(uint32_t v, const uint8_t* vec);
  /// One sub-operation: 320 results (binary32 or int32 bits) of the input vector.
  void multiply(const uint8_t* in, uint32_t* out) const;
  core::Dtype dtype() const { return m_dt; }

 private:
  core::Dtype m_dt = core::Dtype::none;
  uint32_t m_rows = 0;             ///< rows holding loaded data (later ones are zero)
  std::unique_ptr<float[]> m_f;    ///< fp16 weights as binary32, [160][320]
  std::unique_ptr<int16_t[]> m_i;  ///< int8 weights, [320][320]
};

}  // namespace fabricvp::tsp
