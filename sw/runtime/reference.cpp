#include "sw/runtime/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "models/core/context.h"

namespace fabricvp::runtime {

namespace {

struct Format {
  int p;     // significand bits including the hidden bit
  int emin;  // smallest normal exponent
  int emax;
  int bias;
  uint32_t nan;
  int bits;
};

Format format_of(tsp::Dtype dt) {
  switch (dt) {
    case tsp::Dtype::fp32: return {24, -126, 127, 127, 0x7fc00000u, 32};
    case tsp::Dtype::bf16: return {8, -126, 127, 127, 0x7fc0u, 16};
    case tsp::Dtype::fp16: return {11, -14, 15, 15, 0x7e00u, 16};
    default: return {0, 0, 0, 0, 0, 0};
  }
}

uint32_t load(const uint8_t* p, int bits) {
  if (bits == 16) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void store(uint8_t* p, int bits, uint32_t v) {
  if (bits == 16) {
    uint16_t h = static_cast<uint16_t>(v);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}

double from_bits64(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

// Format value -> double, by assembling the binary64 bit pattern.
double decode(const Format& f, uint32_t v) {
  int mbits = f.p - 1;
  int ebits = f.bits - 1 - mbits;
  uint64_t sign = static_cast<uint64_t>(v >> (f.bits - 1)) << 63;
  uint32_t exp = (v >> mbits) & ((1u << ebits) - 1);
  uint64_t man = v & ((1u << mbits) - 1);
  if (exp == (1u << ebits) - 1) return from_bits64(sign | (0x7ffULL << 52) | (man ? 1ULL << 51 : 0));
  int e;  // value = man * 2^e with the hidden bit folded into man
  if (exp == 0) {
    if (man == 0) return from_bits64(sign);
    e = f.emin - mbits;
  } else {
    man |= 1ULL << mbits;
    e = static_cast<int>(exp) - f.bias - mbits;
  }
  int top = 63 - __builtin_clzll(man);  // normalize man to 53 bits
  uint64_t frac = (man << (52 - top)) & ((1ULL << 52) - 1);
  return from_bits64(sign | (static_cast<uint64_t>(e + top + 1023) << 52) | frac);
}

// double -> format, rounding the 53-bit significand to nearest, ties to even,
// with integer shifts (gradual underflow, overflow to infinity, canonical NaN).
uint32_t encode(const Format& f, double x) {
  int mbits = f.p - 1;
  int ebits = f.bits - 1 - mbits;
  uint64_t u;
  std::memcpy(&u, &x, 8);
  uint32_t sign = (u >> 63) ? 1u << (f.bits - 1) : 0u;
  uint32_t inf = sign | (((1u << ebits) - 1) << mbits);
  int E = static_cast<int>((u >> 52) & 0x7ff);
  uint64_t M = u & ((1ULL << 52) - 1);
  if (E == 0x7ff) return M ? f.nan : inf;
  if (E == 0) return sign;              // binary64 subnormals are far below every target format
  uint64_t m = M | (1ULL << 52);        // value = m * 2^(E - 1075)
  int L = E - 1023;                     // floor(log2 |x|)
  int q = std::max(L, f.emin) - mbits;  // exponent of the target's unit in the last place
  int shift = q - (E - 1075);
  uint64_t r;
  if (shift > 54) {
    r = 0;
  } else {
    r = m >> shift;
    uint64_t rem = m & ((1ULL << shift) - 1);
    uint64_t half = 1ULL << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
  }
  if (L < f.emin) return sign | static_cast<uint32_t>(r);  // subnormal, or the smallest normal after rounding
  if (r == (1ULL << f.p)) {                                // rounding carried into the next binade
    r >>= 1;
    ++L;
  }
  if (L > f.emax) return inf;
  return sign | (static_cast<uint32_t>(L + f.bias) << mbits) | (static_cast<uint32_t>(r) & ((1u << mbits) - 1));
}

}  // namespace

uint32_t round_to(tsp::Dtype dt, double x) { return encode(format_of(dt), x); }

double element_value(tsp::Dtype dt, const uint8_t* p) {
  if (dt == tsp::Dtype::int32) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  Format f = format_of(dt);
  return decode(f, load(p, f.bits));
}

namespace {
// Element e of the stream takes its bits from word e / kPer of a splitmix64
// stream (word w = splitmix64(seed + w * gamma)), so any slice can be made alone.
template <typename T, int kPer, typename Make>
void fill(uint64_t seed, uint8_t* out, uint64_t n, uint64_t e0, Make make) {
  constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  uint64_t w = e0 / kPer;
  int k = static_cast<int>(e0 % kPer);
  uint64_t r = core::splitmix64(seed + w * kGamma);
  for (uint64_t i = 0; i < n; ++i) {
    T v = make(static_cast<uint32_t>(r >> (k * 64 / kPer)));
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
    if (++k == kPer) {
      k = 0;
      r = core::splitmix64(seed + ++w * kGamma);
    }
  }
}
}  // namespace

void generate(tsp::Dtype dt, uint64_t seed, uint8_t* out, uint64_t bytes, uint64_t offset, uint32_t ranks) {
  const uint32_t es = tsp::dtype_bytes(dt);
  // fp16: the largest binade, 2^top, is chosen so that `ranks` values cannot overflow 65504.
  uint32_t top = 7;
  while (top > 0 && (static_cast<uint64_t>(ranks) << top) > 65504) --top;
  const uint32_t binades = top + 6;
  if (offset % es) throw std::invalid_argument("input stream slices start at element boundaries");
  const uint64_t e0 = offset / es, n = bytes / es;
  switch (dt) {
    case tsp::Dtype::int32: fill<uint32_t, 2>(seed, out, n, e0, [](uint32_t w) { return w; }); break;
    case tsp::Dtype::fp32:  // |x| in [2^-8, 2^9): 17 binades, 23 random fraction bits
      fill<uint32_t, 2>(seed, out, n, e0, [](uint32_t w) {
        return (w & 0x80000000u) | ((127u - 8u + (((w >> 23) & 31u) * 17u >> 5)) << 23) | (w & 0x7fffffu);
      });
      break;
    case tsp::Dtype::bf16:  // |x| in [2^-8, 2^9)
      fill<uint16_t, 4>(seed, out, n, e0, [](uint32_t w) {
        return static_cast<uint16_t>((w & 0x8000u) | ((127u - 8u + (((w >> 7) & 31u) * 17u >> 5)) << 7) | (w & 0x7fu));
      });
      break;
    case tsp::Dtype::fp16:  // |x| in [2^-6, 2^top)
      fill<uint16_t, 4>(seed, out, n, e0, [binades](uint32_t w) {
        return static_cast<uint16_t>((w & 0x8000u) | ((15u - 6u + (((w >> 10) & 15u) * binades >> 4)) << 10) |
                                     (w & 0x3ffu));
      });
      break;
    case tsp::Dtype::none: break;
  }
}

void reference_add(tsp::Dtype dt, uint8_t* acc, const uint8_t* x, uint64_t bytes) {
  if (dt == tsp::Dtype::int32) {
    for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
      uint32_t a, b;
      std::memcpy(&a, acc + i, 4);
      std::memcpy(&b, x + i, 4);
      a += b;
      std::memcpy(acc + i, &a, 4);
    }
    return;
  }
  if (dt == tsp::Dtype::fp32) {
    // binary64 sum rounded to binary32 by the hardware conversion: correctly rounded (53 >= 2*24 + 2).
    for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
      float a, b;
      std::memcpy(&a, acc + i, 4);
      std::memcpy(&b, x + i, 4);
      float s = static_cast<float>(static_cast<double>(a) + static_cast<double>(b));
      uint32_t bits;
      std::memcpy(&bits, &s, 4);
      if (s != s) bits = 0x7fc00000u;
      std::memcpy(acc + i, &bits, 4);
    }
    return;
  }
  Format f = format_of(dt);
  uint32_t es = static_cast<uint32_t>(f.bits / 8);
  for (uint64_t i = 0; i + es <= bytes; i += es) {
    double s = decode(f, load(acc + i, f.bits)) + decode(f, load(x + i, f.bits));
    store(acc + i, f.bits, encode(f, s));
  }
}

}  // namespace fabricvp::runtime
