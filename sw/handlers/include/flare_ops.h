/* Flare's element operators, shared by the aggregation kernels
   (sw/handlers/flare): acc[i] = op(acc[i], in[i]) on int32, fp32, fp16 or
   bf16 elements. The checks' host reference computes the same
   (models/flare combine(); its 16-bit sums with fabricvp's own IEEE adders).

   FLARE_USER: a user operator, `uint32_t flare_user_op(uint32_t acc,
   uint32_t in)` on 32-bit elements' words, from the C file given with
   `fabricvp run ... --operator FILE.c` (compiled into the kernel, and for
   the host reference into a shared object: it must compute the same bits on
   both, e.g. integer or IEEE +, -, *, / arithmetic). */
#pragma once

#include <stdint.h>

#include <flare.h>

uint32_t flare_user_op(uint32_t acc, uint32_t in);

static inline float as_f32(uint32_t v) {
  union {
    uint32_t u;
    float f;
  } x = {v};
  return x.f;
}
static inline uint32_t as_u32(float f) {
  union {
    float f;
    uint32_t u;
  } x = {f};
  return x.u;
}

/* IEEE binary16 and bfloat16 to and from binary32 (round to nearest even).
   A 16-bit sum is computed in binary32 and rounded once: binary32 has more
   than 2p + 2 bits for both, so that is the correctly rounded 16-bit sum. */
static inline float flare_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0x1fu) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    u = sign;
  } else { /* subnormal: normalize */
    exp = 113;
    while (!(man & 0x400u)) {
      man <<= 1;
      --exp;
    }
    u = sign | (exp << 23) | ((man & 0x3ffu) << 13);
  }
  return as_f32(u);
}

static inline uint16_t flare_f32_to_f16(float f) {
  const uint32_t u = as_u32(f), sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu;
  uint32_t man = u & 0x7fffffu;
  if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf, quiet NaN */
  const int32_t e = (int32_t)exp - 112;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u); /* overflow */
  if (e <= 0) {                                     /* subnormal or zero */
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000u;
    const uint32_t shift = (uint32_t)(14 - e), mid = 1u << (shift - 1);
    uint32_t half = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = ((uint32_t)e << 10) | (man >> 13);
  const uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half; /* a carry may reach infinity: right */
  return (uint16_t)(sign | half);
}

static inline float flare_bf16_to_f32(uint16_t h) { return as_f32((uint32_t)h << 16); }

static inline uint16_t flare_f32_to_bf16(float f) {
  uint32_t u = as_u32(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline uint32_t flare_esize(uint8_t dtype) { return dtype >= FLARE_FP16 ? 2u : 4u; }
/* The block's payload in bytes, and in (whole, for copies) words. */
static inline uint32_t flare_bytes(const flare_hdr_t *h) { return (uint32_t)h->count * flare_esize(h->dtype); }
static inline uint32_t flare_words(const flare_hdr_t *h) { return (flare_bytes(h) + 3u) / 4u; }

static inline void combine16(uint8_t dtype, uint8_t op, uint16_t *acc, const uint16_t *in, uint32_t n) {
  const int bf = dtype == FLARE_BF16;
  for (uint32_t i = 0; i < n; ++i) {
    const float a = bf ? flare_bf16_to_f32(acc[i]) : flare_f16_to_f32(acc[i]);
    const float b = bf ? flare_bf16_to_f32(in[i]) : flare_f16_to_f32(in[i]);
    if (op == FLARE_SUM)
      acc[i] = bf ? flare_f32_to_bf16(a + b) : flare_f32_to_f16(a + b);
    else if (op == FLARE_MIN)
      acc[i] = b < a ? in[i] : acc[i];
    else
      acc[i] = b > a ? in[i] : acc[i];
  }
}

/* acc[i] = op(acc[i], in[i]) for the n elements of a block (words: any alignment of 4). */
static inline void combine(uint8_t dtype, uint8_t op, uint32_t *acc, const uint32_t *in, uint32_t n) {
  if (op == FLARE_USER) {
#ifdef FLARE_USER_OP
    for (uint32_t i = 0; i < n; ++i) acc[i] = flare_user_op(acc[i], in[i]);
#endif
    return;
  }
  if (dtype >= FLARE_FP16) {
    combine16(dtype, op, (uint16_t *)acc, (const uint16_t *)in, n);
    return;
  }
  if (dtype == FLARE_INT32) {
    int32_t *a = (int32_t *)acc;
    const int32_t *b = (const int32_t *)in;
    if (op == FLARE_SUM)
      for (uint32_t i = 0; i < n; ++i) a[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
    else if (op == FLARE_MIN)
      for (uint32_t i = 0; i < n; ++i) a[i] = b[i] < a[i] ? b[i] : a[i];
    else
      for (uint32_t i = 0; i < n; ++i) a[i] = b[i] > a[i] ? b[i] : a[i];
    return;
  }
  if (op == FLARE_SUM)
    for (uint32_t i = 0; i < n; ++i) acc[i] = as_u32(as_f32(acc[i]) + as_f32(in[i]));
  else if (op == FLARE_MIN)
    for (uint32_t i = 0; i < n; ++i) acc[i] = as_f32(in[i]) < as_f32(acc[i]) ? in[i] : acc[i];
  else
    for (uint32_t i = 0; i < n; ++i) acc[i] = as_f32(in[i]) > as_f32(acc[i]) ? in[i] : acc[i];
}
