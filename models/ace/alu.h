// ACE reduction arithmetic: bit-exact element adders and a byte-buffer reduce.
//
// The element adders are the TSP vector ALU's (models/tsp/vxm.h): IEEE 754
// round to nearest even, subnormals kept (no flush to zero), overflow to
// infinity, x + (-x) = +0 and (-0) + (-0) = -0, inf + (-inf) = NaN. NaN rule:
// every NaN result is the canonical quiet NaN with the sign bit clear (fp32
// 0x7fc00000, bf16 0x7fc0, fp16 0x7e00). int32 wraps. The RTL ALU
// (rtl/ace/ace_alu.sv) implements the same functions in hardware and the
// equivalence bench (tb/ace) checks them against these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "models/tsp/vxm.h"

namespace fabricvp::ace {

/// Element types, numbered as the RTL's in_dtype.
enum class Dtype : uint8_t { fp32 = 0, bf16 = 1, fp16 = 2, int32 = 3 };

const char* dtype_name(Dtype d);
/// Bytes per element: 4 or 2.
uint32_t dtype_bytes(Dtype d);
/// Parse "fp32", "bf16", "fp16", "int32"; false if unknown.
bool parse_dtype(const std::string& s, Dtype& out);

using tsp::vxm::kNaN16;
using tsp::vxm::kNaN32;
using tsp::vxm::kNaNbf16;

using tsp::vxm::add_bf16;   ///< uint16_t add_bf16(uint16_t a, uint16_t b)
using tsp::vxm::add_fp16;   ///< uint16_t add_fp16(uint16_t a, uint16_t b)
using tsp::vxm::add_fp32;   ///< uint32_t add_fp32(uint32_t a, uint32_t b): bit patterns in and out
using tsp::vxm::add_int32;  ///< uint32_t add_int32(uint32_t a, uint32_t b): wraps

/// One 32-bit lane of the ACE datapath: 16-bit types take the low halves of a
/// and b and give a zero high half.
inline uint32_t add_lane(Dtype dt, uint32_t a, uint32_t b) {
  switch (dt) {
    case Dtype::fp32: return add_fp32(a, b);
    case Dtype::bf16: return add_bf16(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
    case Dtype::fp16: return add_fp16(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
    case Dtype::int32: return add_int32(a, b);
  }
  return 0;
}

/// dst = a + b element-wise over `bytes` bytes of little-endian elements.
/// `bytes` must be a multiple of the element size (std::invalid_argument
/// otherwise); dst may alias a or b. No allocation.
void reduce(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes);

}  // namespace fabricvp::ace
