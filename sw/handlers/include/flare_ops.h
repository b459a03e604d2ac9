/* Flare's element operators, shared by the aggregation kernels
   (sw/handlers/flare): acc[i] = op(acc[i], in[i]) on int32 or fp32 words.
   The checks' host reference computes exactly this (models/flare combine()).

   FLARE_USER: a user operator, `uint32_t flare_user_op(uint32_t acc,
   uint32_t in)` on the elements' 32-bit words, from the C file given with
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

static inline void combine(uint8_t dtype, uint8_t op, uint32_t *acc, const uint32_t *in, uint32_t n) {
  if (op == FLARE_USER) {
#ifdef FLARE_USER_OP
    for (uint32_t i = 0; i < n; ++i) acc[i] = flare_user_op(acc[i], in[i]);
#endif
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
