#include "models/core/dtype.h"

#include <cstring>
#include <stdexcept>

#include "models/core/context.h"

namespace fabricvp::core {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::int32: return "int32";
    case Dtype::int8: return "int8";
    case Dtype::none: break;
  }
  return "none";
}

uint32_t dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::int32: return 4;
    case Dtype::bf16:
    case Dtype::fp16: return 2;
    case Dtype::int8: return 1;
    case Dtype::none: break;
  }
  return 0;
}

bool parse_dtype(const std::string& s, Dtype& out) {
  for (Dtype d : kDtypes)
    if (s == dtype_name(d)) {
      out = d;
      return true;
    }
  if (s == dtype_name(Dtype::int8)) {
    out = Dtype::int8;
    return true;
  }
  return false;
}

bool is_reduction_dtype(Dtype d) {
  for (Dtype k : kDtypes)
    if (d == k) return true;
  return false;
}

namespace ieee {

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    if (man == 0) return float_of(sign);
    // Subnormal: value = man * 2^-24; normalize.
    int e = -14;
    while (!(man & 0x400u)) {
      man <<= 1;
      --e;
    }
    man &= 0x3ffu;
    return float_of(sign | (static_cast<uint32_t>(e + 127) << 23) | (man << 13));
  }
  return float_of(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t x = bits_of(f);
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

float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return kNaNbf16;
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

uint32_t add_fp32(uint32_t a, uint32_t b) {
  float r = float_of(a) + float_of(b);
  return r != r ? kNaN32 : bits_of(r);
}

uint16_t add_fp16(uint16_t a, uint16_t b) { return f32_to_f16(f16_to_f32(a) + f16_to_f32(b)); }

uint16_t add_bf16(uint16_t a, uint16_t b) { return f32_to_bf16(bf16_to_f32(a) + bf16_to_f32(b)); }

uint32_t mul_fp32(uint32_t a, uint32_t b) {
  float r = float_of(a) * float_of(b);
  return r != r ? kNaN32 : bits_of(r);
}

uint16_t mul_fp16(uint16_t a, uint16_t b) { return f32_to_f16(f16_to_f32(a) * f16_to_f32(b)); }

uint16_t mul_bf16(uint16_t a, uint16_t b) { return f32_to_bf16(bf16_to_f32(a) * bf16_to_f32(b)); }

}  // namespace ieee

namespace {

// Whole 320-byte blocks (one TSP vector) go through fixed-size arrays the
// compiler vectorizes; a tail goes element by element.
constexpr size_t kBlock = 320;

template <typename T, T (*F)(T, T)>
void elements(uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes) {
  constexpr size_t n = kBlock / sizeof(T);
  size_t off = 0;
  for (; off + kBlock <= bytes; off += kBlock) {
    T x[n], y[n], z[n];
    std::memcpy(x, a + off, kBlock);
    std::memcpy(y, b + off, kBlock);
    for (size_t i = 0; i < n; ++i) z[i] = F(x[i], y[i]);
    std::memcpy(dst + off, z, kBlock);
  }
  for (; off < bytes; off += sizeof(T)) {
    T x, y;
    std::memcpy(&x, a + off, sizeof(T));
    std::memcpy(&y, b + off, sizeof(T));
    const T z = F(x, y);
    std::memcpy(dst + off, &z, sizeof(T));
  }
}

}  // namespace

void add(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes) {
  const uint32_t size = dtype_bytes(dt);
  if (!is_reduction_dtype(dt))
    throw std::invalid_argument(std::string("core::add: ") + dtype_name(dt) + " elements are not added");
  if (bytes % size != 0)
    throw std::invalid_argument(std::string("core::add: ") + std::to_string(bytes) +
                                " bytes is not a whole number of " + dtype_name(dt) + " elements");
  switch (dt) {
    case Dtype::fp32: elements<uint32_t, ieee::add_fp32>(dst, a, b, bytes); break;
    case Dtype::bf16: elements<uint16_t, ieee::add_bf16>(dst, a, b, bytes); break;
    case Dtype::fp16: elements<uint16_t, ieee::add_fp16>(dst, a, b, bytes); break;
    case Dtype::int32: elements<uint32_t, ieee::add_int32>(dst, a, b, bytes); break;
    case Dtype::int8:
    case Dtype::none: break;
  }
}

namespace {
uint32_t sub_fp32(uint32_t a, uint32_t b) { return ieee::add_fp32(a, b ^ 0x80000000u); }
uint16_t sub_fp16(uint16_t a, uint16_t b) { return ieee::add_fp16(a, static_cast<uint16_t>(b ^ 0x8000u)); }
uint16_t sub_bf16(uint16_t a, uint16_t b) { return ieee::add_bf16(a, static_cast<uint16_t>(b ^ 0x8000u)); }
uint32_t sub_int32(uint32_t a, uint32_t b) { return a - b; }

void check_elements(const char* what, Dtype dt, size_t bytes) {
  if (!is_reduction_dtype(dt) || bytes % dtype_bytes(dt) != 0)
    throw std::invalid_argument(std::string("core::") + what + ": " + std::to_string(bytes) + " bytes of " +
                                dtype_name(dt) + " elements");
}
}  // namespace

void mul(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes) {
  check_elements("mul", dt, bytes);
  switch (dt) {
    case Dtype::fp32: elements<uint32_t, ieee::mul_fp32>(dst, a, b, bytes); break;
    case Dtype::bf16: elements<uint16_t, ieee::mul_bf16>(dst, a, b, bytes); break;
    case Dtype::fp16: elements<uint16_t, ieee::mul_fp16>(dst, a, b, bytes); break;
    case Dtype::int32: elements<uint32_t, ieee::mul_int32>(dst, a, b, bytes); break;
    case Dtype::int8:
    case Dtype::none: break;
  }
}

void sub(Dtype dt, uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t bytes) {
  check_elements("sub", dt, bytes);
  switch (dt) {
    case Dtype::fp32: elements<uint32_t, sub_fp32>(dst, a, b, bytes); break;
    case Dtype::bf16: elements<uint16_t, sub_bf16>(dst, a, b, bytes); break;
    case Dtype::fp16: elements<uint16_t, sub_fp16>(dst, a, b, bytes); break;
    case Dtype::int32: elements<uint32_t, sub_int32>(dst, a, b, bytes); break;
    case Dtype::int8:
    case Dtype::none: break;
  }
}

double element_value(Dtype dt, const uint8_t* p) {
  uint32_t w = 0;
  uint16_t h = 0;
  switch (dt) {
    case Dtype::int32: std::memcpy(&w, p, 4); return static_cast<int32_t>(w);
    case Dtype::fp32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case Dtype::bf16: std::memcpy(&h, p, 2); return ieee::bf16_to_f32(h);
    case Dtype::fp16: std::memcpy(&h, p, 2); return ieee::f16_to_f32(h);
    case Dtype::int8: return static_cast<int8_t>(p[0]);
    case Dtype::none: break;
  }
  return 0;
}

namespace {
// Element e of the stream takes its bits from word e / kPer of a splitmix64
// stream (word w = splitmix64(seed + w * gamma)), so any slice can be made alone.
template <typename T, int kPer, typename Make>
void fill(uint64_t seed, uint8_t* out, uint64_t n, uint64_t e0, Make make) {
  constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  uint64_t w = e0 / kPer;
  int k = static_cast<int>(e0 % kPer);
  uint64_t i = 0;
  // A partial first word, whole words (kPer elements each, no branch: the
  // loop vectorizes), a partial last word.
  if (k != 0) {
    const uint64_t r = splitmix64(seed + w * kGamma);
    for (; k < kPer && i < n; ++k, ++i) {
      const T v = make(static_cast<uint32_t>(r >> (k * 64 / kPer)));
      std::memcpy(out + i * sizeof(T), &v, sizeof(T));
    }
    ++w;
  }
  const uint64_t words = (n - i) / kPer;
  uint8_t* o = out + i * sizeof(T);
  for (uint64_t j = 0; j < words; ++j) {
    const uint64_t r = splitmix64(seed + (w + j) * kGamma);
    T v[kPer];
    for (int q = 0; q < kPer; ++q) v[q] = make(static_cast<uint32_t>(r >> (q * 64 / kPer)));
    std::memcpy(o + j * sizeof v, v, sizeof v);
  }
  i += words * kPer;
  w += words;
  if (i < n) {
    const uint64_t r = splitmix64(seed + w * kGamma);
    for (int q = 0; i < n; ++q, ++i) {
      const T v = make(static_cast<uint32_t>(r >> (q * 64 / kPer)));
      std::memcpy(out + i * sizeof(T), &v, sizeof(T));
    }
  }
}
}  // namespace

void random_elements(Dtype dt, uint64_t seed, uint8_t* out, uint64_t bytes, uint64_t offset, uint32_t ranks) {
  const uint32_t es = dtype_bytes(dt);
  if (es == 0) throw std::invalid_argument("random_elements: no element type");
  // fp16: the largest binade, 2^top, is chosen so that `ranks` values cannot overflow 65504.
  uint32_t top = 7;
  while (top > 0 && (static_cast<uint64_t>(ranks) << top) > 65504) --top;
  const uint32_t binades = top + 6;
  if (offset % es) throw std::invalid_argument("input stream slices start at element boundaries");
  const uint64_t e0 = offset / es, n = bytes / es;
  switch (dt) {
    case Dtype::int32: fill<uint32_t, 2>(seed, out, n, e0, [](uint32_t w) { return w; }); break;
    case Dtype::int8: fill<uint8_t, 8>(seed, out, n, e0, [](uint32_t w) { return static_cast<uint8_t>(w); }); break;
    case Dtype::fp32:  // |x| in [2^-8, 2^9): 17 binades, 23 random fraction bits
      fill<uint32_t, 2>(seed, out, n, e0, [](uint32_t w) {
        return (w & 0x80000000u) | ((127u - 8u + (((w >> 23) & 31u) * 17u >> 5)) << 23) | (w & 0x7fffffu);
      });
      break;
    case Dtype::bf16:  // |x| in [2^-8, 2^9)
      fill<uint16_t, 4>(seed, out, n, e0, [](uint32_t w) {
        return static_cast<uint16_t>((w & 0x8000u) | ((127u - 8u + (((w >> 7) & 31u) * 17u >> 5)) << 7) | (w & 0x7fu));
      });
      break;
    case Dtype::fp16:  // |x| in [2^-6, 2^top)
      fill<uint16_t, 4>(seed, out, n, e0, [binades](uint32_t w) {
        return static_cast<uint16_t>((w & 0x8000u) | ((15u - 6u + (((w >> 10) & 15u) * binades >> 4)) << 10) |
                                     (w & 0x3ffu));
      });
      break;
    case Dtype::none: break;
  }
}

}  // namespace fabricvp::core
