/* What Flare's aggregation kernels (sw/handlers/flare) share: the element
   operators, acc[i] = op(acc[i], in[i]) on int32, fp32, fp16 or bf16
   elements, and the steps every kernel takes with a block (at the end). The checks' host reference computes the same
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

/* A float that may alias the uint32_t words of a block (the kernels' buffers are words). */
typedef float flare_f32_alias __attribute__((may_alias));

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

static inline uint32_t flare_esize(uint8_t dtype) { return (dtype & FLARE_DTYPE) >= FLARE_FP16 ? 2u : 4u; }
/* The block's payload in bytes (sparse: 8 per pair), and in (whole, for copies) words. */
static inline uint32_t flare_bytes(const flare_hdr_t *h) {
  return (uint32_t)h->count * ((h->dtype & FLARE_SPARSE) ? 8u : flare_esize(h->dtype));
}
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

/* acc[i] += in[i] over n elements of type T, four at a time with the pointers stepping (the compiler's own
   unrolling keeps an index per element), then the rest. */
#define FLARE_SUM_STEP4(T, acc, in, n)                                                   \
  do {                                                                                   \
    T *p_ = (T *)(acc);                                                                  \
    const T *q_ = (const T *)(in);                                                       \
    for (const T *end_ = q_ + ((n) & ~3u); q_ != end_; p_ += 4, q_ += 4) {               \
      p_[0] += q_[0];                                                                    \
      p_[1] += q_[1];                                                                    \
      p_[2] += q_[2];                                                                    \
      p_[3] += q_[3];                                                                    \
    }                                                                                    \
    for (uint32_t i_ = 0; i_ < ((n) & 3u); ++i_) p_[i_] += q_[i_];                       \
  } while (0)

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
      FLARE_SUM_STEP4(uint32_t, acc, in, n);
    else if (op == FLARE_MIN)
      for (uint32_t i = 0; i < n; ++i) a[i] = b[i] < a[i] ? b[i] : a[i];
    else
      for (uint32_t i = 0; i < n; ++i) a[i] = b[i] > a[i] ? b[i] : a[i];
    return;
  }
  if (op == FLARE_SUM) /* as floats in place (may_alias: the words are the same memory) */
    FLARE_SUM_STEP4(flare_f32_alias, acc, in, n);
  else if (op == FLARE_MIN)
    for (uint32_t i = 0; i < n; ++i) acc[i] = as_f32(in[i]) < as_f32(acc[i]) ? in[i] : acc[i];
  else
    for (uint32_t i = 0; i < n; ++i) acc[i] = as_f32(in[i]) > as_f32(acc[i]) ? in[i] : acc[i];
}

/* ---- the kernels' common steps */

static inline void flare_copy_words(uint32_t *dst, const uint32_t *src, uint32_t words) {
  for (const uint32_t *end = src + (words & ~3u); src != end; dst += 4, src += 4) {
    dst[0] = src[0];
    dst[1] = src[1];
    dst[2] = src[2];
    dst[3] = src[3];
  }
  for (uint32_t i = 0; i < (words & 3u); ++i) dst[i] = src[i];
}

/* A result coming down from a spine: a leaf multicasts it to its hosts (ports
   0 .. down-1). Returns 1 if the packet was one. */
static inline int flare_pass_down(const task_t *task, const pkt_hdr_t *pkt, const flare_hdr_t *h) {
  if (h->host != FLARE_FROM_SWITCH) return 0;
  fabricvp_nic_command(FABRICVP_NID_FIRST(flare_switch(task)->down), 0, task->pkt_mem, pkt->ip_hdr.length);
  return 1;
}

/* Block b's buffer of `slot_bytes` in its home cluster's scratchpad (flare.h). */
static inline void *flare_buffer_of(const task_t *task, uint32_t block, uint32_t slot_bytes) {
  const uint32_t home = task->home_cluster_id;
  const uint32_t nslots = task->scratchpad_size[home] / slot_bytes;
  return (void *)((uintptr_t)task->scratchpad[home] + ((block / NB_CLUSTERS) % nslots) * slot_bytes);
}

/* Take `lock` once the buffer it guards is free or already block b's (`held`
   is the block + 1, 0 when free): the block that held it is being answered
   and frees it soon (were it still open, the hosts' window would be wider
   than the switch memory, and the watchdog ends the wait). Returns with the
   lock held. */
static inline void flare_lock_block(volatile uint32_t *lock, volatile uint32_t *held, uint32_t block) {
  for (;;) {
    futex_lock(lock);
    if (*held == 0 || *held == block + 1) return;
    futex_unlock(lock);
    rt_time_wait_cycles(32);
  }
}

/* The last contribution's answer, from the block's result packet (`pkt`,
   `hdr` and the elements after it): a leaf sends it up to spine block mod
   spines as a contribution of its own; a spine or a single switch
   multicasts it to every port. Returns the command's handle. */
static inline spin_cmd_t flare_answer(const task_t *task, pkt_hdr_t *pkt, flare_hdr_t *hdr) {
  const flare_switch_t *sw = flare_switch(task);
  const uint32_t len = sizeof(pkt_hdr_t) + sizeof(flare_hdr_t) + flare_bytes(hdr);
  pkt->ip_hdr.length = (uint16_t)len;
  if (sw->role == FLARE_LEAF) {
    hdr->host = (uint16_t)sw->index;
    hdr->hosts = (uint16_t)sw->leaves;
    return fabricvp_nic_command(sw->down + hdr->block % sw->spines, 0, pkt, len);
  }
  hdr->host = FLARE_FROM_SWITCH;
  return fabricvp_nic_command(FABRICVP_NID_ALL, 0, pkt, len);
}

/* Log the order a block's contributions were applied in (2 bytes each) to
   the switch's host memory at block x contributions x 2, for the check. */
static inline spin_cmd_t flare_log_order(const task_t *task, uint32_t block, uint32_t contributions,
                                         const uint16_t *order) {
  const uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
  return fabricvp_host_dma(host + (uint64_t)block * contributions * 2u, (uint32_t)order, contributions * 2u, 1, 0);
}

