// Independent binary64 oracle of IEEE addition, for the tests of the adders in
// models/core/dtype.h: every element is decoded into binary64 by assembling
// the bit pattern, added, and rounded back to the format by integer
// round-to-nearest-even. The binary64 sum rounded once more is the correctly
// rounded sum (53 >= 2p + 2 for p = 24, 11, 8), so this is exact IEEE
// addition computed without any of the code under test.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "models/core/dtype.h"

namespace fabricvp::test::oracle {

struct Format {
  int p;     // significand bits including the hidden bit
  int emin;  // smallest normal exponent
  int emax;
  int bias;
  uint32_t nan;
  int bits;
};

inline Format format_of(core::Dtype dt) {
  switch (dt) {
    case core::Dtype::fp32: return {24, -126, 127, 127, 0x7fc00000u, 32};
    case core::Dtype::bf16: return {8, -126, 127, 127, 0x7fc0u, 16};
    case core::Dtype::fp16: return {11, -14, 15, 15, 0x7e00u, 16};
    default: return {0, 0, 0, 0, 0, 0};
  }
}

inline uint32_t load(const uint8_t* p, int bits) {
  if (bits == 16) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline void store(uint8_t* p, int bits, uint32_t v) {
  if (bits == 16) {
    uint16_t h = static_cast<uint16_t>(v);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}

inline double from_bits64(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

// Format value -> double, by assembling the binary64 bit pattern.
inline double decode(const Format& f, uint32_t v) {
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
inline uint32_t encode(const Format& f, double x) {
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

/// Round a double to the format (RNE, canonical NaN); returns the bit pattern.
inline uint32_t round_to(core::Dtype dt, double x) { return encode(format_of(dt), x); }

/// An element's value as a double, decoded from its bits.
inline double value(core::Dtype dt, const uint8_t* p) {
  if (dt == core::Dtype::int32) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  const Format f = format_of(dt);
  return decode(f, load(p, f.bits));
}

/// acc = acc + x element-wise with the oracle's arithmetic.
inline void add(core::Dtype dt, uint8_t* acc, const uint8_t* x, uint64_t bytes) {
  const uint32_t es = core::dtype_bytes(dt);
  for (uint64_t i = 0; i + es <= bytes; i += es) {
    if (dt == core::Dtype::int32) {
      uint32_t a, b;
      std::memcpy(&a, acc + i, 4);
      std::memcpy(&b, x + i, 4);
      a += b;
      std::memcpy(acc + i, &a, 4);
      continue;
    }
    const Format f = format_of(dt);
    store(acc + i, f.bits, encode(f, value(dt, acc + i) + value(dt, x + i)));
  }
}

}  // namespace fabricvp::test::oracle
