// Host side of a checked run: seeded input data and an independent reference.
//
// The reference never uses the model's ALU code: each element is converted to
// binary64, added, and rounded back to the format — by the hardware's
// double->float conversion for fp32, and by a generic integer
// round-to-nearest-even routine for fp16 and bf16. The binary64 sum rounded
// once more is the correctly rounded sum (53 >= 2p + 2 for p = 24, 11, 8), so
// the reference is exact IEEE addition.
#pragma once

#include <cstdint>
#include <vector>

#include "models/tsp/isa.h"

namespace fabricvp::runtime {

/// Bytes [offset, offset + bytes) of the seeded input stream of type dt
/// (splitmix64, counter based, so any slice can be generated on its own;
/// offset must be a whole number of elements): floats with random sign and
/// significand over several binades, small enough that the sum over `ranks`
/// inputs cannot overflow; int32 uniformly random (sums wrap).
void generate(tsp::Dtype dt, uint64_t seed, uint8_t* out, uint64_t bytes, uint64_t offset = 0, uint32_t ranks = 8);

/// acc[i] = acc[i] + x[i] element-wise (reference arithmetic), `bytes` bytes.
void reference_add(tsp::Dtype dt, uint8_t* acc, const uint8_t* x, uint64_t bytes);

/// Element value as a double (for mismatch reports).
double element_value(tsp::Dtype dt, const uint8_t* p);

/// Round a double to the format (RNE, canonical NaN); returns the bit pattern.
uint32_t round_to(tsp::Dtype dt, double x);

}  // namespace fabricvp::runtime
