#include "models/tsp/vxm.h"

#include <cstring>

namespace fabricvp::tsp::vxm {

namespace {
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return from_bits(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    if (man == 0) return from_bits(sign);
    // Subnormal: value = man * 2^-24; normalize.
    int e = -14;
    while (!(man & 0x400u)) {
      man <<= 1;
      --e;
    }
    man &= 0x3ffu;
    return from_bits(sign | (static_cast<uint32_t>(e + 127) << 23) | (man << 13));
  }
  return from_bits(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t x = bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return kNaN16;
  if (abs == 0x7f800000u) return sign | 0x7c00u;
  int e = static_cast<int>(abs >> 23) - 127;
  if (e > 15) return sign | 0x7c00u;
  if (e >= -14) {
    uint32_t m = abs & 0x7fffffu;
    uint32_t h = (static_cast<uint32_t>(e + 15) << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may reach the exponent / inf: correct
    return static_cast<uint16_t>(sign | h);
  }
  // Result is subnormal or zero in fp16: units of 2^-24.
  uint32_t m = (abs & 0x7fffffu) | 0x800000u;  // value = m * 2^(e-23)
  int shift = -(e + 1);                        // value / 2^-24 = m >> shift
  if (shift > 24) return sign;
  uint32_t h = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float bf16_to_f32(uint16_t h) { return from_bits(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t x = bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return kNaNbf16;
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

uint32_t add_fp32(uint32_t a, uint32_t b) {
  float r = from_bits(a) + from_bits(b);
  return r != r ? kNaN32 : bits(r);
}

uint16_t add_fp16(uint16_t a, uint16_t b) { return f32_to_f16(f16_to_f32(a) + f16_to_f32(b)); }

uint16_t add_bf16(uint16_t a, uint16_t b) { return f32_to_bf16(bf16_to_f32(a) + bf16_to_f32(b)); }

uint32_t add_int32(uint32_t a, uint32_t b) { return a + b; }

namespace {
template <typename T, T (*F)(T, T)>
void lanes(uint8_t* dst, const uint8_t* a, const uint8_t* b) {
  constexpr unsigned n = kVectorBytes / sizeof(T);
  T x[n], y[n], z[n];
  std::memcpy(x, a, kVectorBytes);
  std::memcpy(y, b, kVectorBytes);
  for (unsigned i = 0; i < n; ++i) z[i] = F(x[i], y[i]);
  std::memcpy(dst, z, kVectorBytes);
}
}  // namespace

void add(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b) {
  switch (dt) {
    case Dtype::fp32: lanes<uint32_t, add_fp32>(dst, a, b); break;
    case Dtype::bf16: lanes<uint16_t, add_bf16>(dst, a, b); break;
    case Dtype::fp16: lanes<uint16_t, add_fp16>(dst, a, b); break;
    case Dtype::int32: lanes<uint32_t, add_int32>(dst, a, b); break;
    case Dtype::none: break;
  }
}

}  // namespace fabricvp::tsp::vxm
