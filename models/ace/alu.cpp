#include "models/ace/alu.h"

#include <cstring>
#include <stdexcept>

namespace fabricvp::ace {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::int32: return "int32";
  }
  return "?";
}

uint32_t dtype_bytes(Dtype d) { return d == Dtype::bf16 || d == Dtype::fp16 ? 2 : 4; }

bool parse_dtype(const std::string& s, Dtype& out) {
  for (Dtype d : {Dtype::fp32, Dtype::bf16, Dtype::fp16, Dtype::int32}) {
    if (s == dtype_name(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

namespace {
template <typename T, T (*F)(T, T)>
void elements(uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, a + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b + i * sizeof(T), sizeof(T));
    T z = F(x, y);
    std::memcpy(dst + i * sizeof(T), &z, sizeof(T));
  }
}
}  // namespace

void reduce(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes) {
  size_t size = dtype_bytes(dt);
  if (bytes % size != 0)
    throw std::invalid_argument(std::string("ace::reduce: ") + std::to_string(bytes) +
                                " bytes is not a whole number of " + dtype_name(dt) + " elements");
  size_t n = bytes / size;
  switch (dt) {
    case Dtype::fp32: elements<uint32_t, add_fp32>(dst, a, b, n); break;
    case Dtype::bf16: elements<uint16_t, add_bf16>(dst, a, b, n); break;
    case Dtype::fp16: elements<uint16_t, add_fp16>(dst, a, b, n); break;
    case Dtype::int32: elements<uint32_t, add_int32>(dst, a, b, n); break;
  }
}

}  // namespace fabricvp::ace
