/* fabricvp PsPIN-compatible handler API: atomics, locks, wait loops.
   Written for fabricvp from the documented PsPIN interface (docs/pspin.md):
   same names, signatures and semantics; AMOs are single RISC-V A-extension
   instructions executed at the memory that owns the address. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "spin_conf.h"

#define MEM_ALIGNMENT 4
#define ALIGN_UP(NUM, ALIGN) ((((uint32_t)(NUM)) + ((ALIGN) - 1)) & ~((ALIGN) - 1))
#define DMA_MAX_XFER_SIZE 32768
#define DMA_NULL 0

typedef uint32_t dma_t;
typedef volatile uint32_t futex_t;

#define PSPIN_ECALL_CYCLES 0x1

static inline void asm_mem_fence(void) { __asm__ __volatile__("" ::: "memory"); }

/* Busy-waits about `cycles` cycles: a 4-cycle loop (addi + taken branch). */
static inline void rt_time_wait_cycles(const unsigned cycles) {
  unsigned n = cycles >> 2;
  if (cycles <= 4) return;
  __asm__ __volatile__("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(n));
}

static inline uint32_t load_reserved(volatile const uint32_t *const addr) {
  uint32_t v;
  asm_mem_fence();
  __asm__ __volatile__("lr.w %0, (%1)" : "=r"(v) : "r"(addr));
  asm_mem_fence();
  return v;
}

/* 0: stored; 1: the reservation was lost, nothing stored. */
static inline unsigned store_conditional(volatile uint32_t *const addr, const uint32_t val) {
  unsigned r;
  asm_mem_fence();
  __asm__ __volatile__("sc.w %0, %1, (%2)" : "=r"(r) : "r"(val), "r"(addr));
  asm_mem_fence();
  return r;
}

/* 0: swapped; -1: memory did not hold `old`; > 0: the reservation was lost. */
static inline int compare_and_swap(volatile uint32_t *const addr, const uint32_t old, const uint32_t new_value) {
  if (load_reserved(addr) != old) return -1;
  return (int)store_conditional(addr, new_value);
}

#define FABRICVP_AMO(name, insn, T)                                          \
  static inline T name(volatile T *const addr, const T val) {                \
    T old;                                                                   \
    asm_mem_fence();                                                         \
    __asm__ __volatile__(insn " %0, %1, (%2)" : "=r"(old) : "r"(val), "r"(addr)); \
    asm_mem_fence();                                                         \
    return old;                                                              \
  }
FABRICVP_AMO(amo_swap, "amoswap.w", uint32_t)
FABRICVP_AMO(amo_add, "amoadd.w", int32_t)
FABRICVP_AMO(amo_and, "amoand.w", uint32_t)
FABRICVP_AMO(amo_or, "amoor.w", uint32_t)
FABRICVP_AMO(amo_xor, "amoxor.w", uint32_t)
FABRICVP_AMO(amo_maxu, "amomaxu.w", uint32_t)
FABRICVP_AMO(amo_max, "amomax.w", int32_t)
FABRICVP_AMO(amo_minu, "amominu.w", uint32_t)
FABRICVP_AMO(amo_min, "amomin.w", int32_t)
#undef FABRICVP_AMO

static inline void amo_store(volatile uint32_t *const addr, const uint32_t val) {
  asm_mem_fence();
  __asm__ __volatile__("amoswap.w x0, %0, (%1)" : : "r"(val), "r"(addr));
  asm_mem_fence();
}

static inline void futex_init(futex_t *f) { amo_store(f, 0); }
static inline int futex_try_lock(futex_t *f) { return amo_or(f, 1) == 0; }
static inline int futex_lock(futex_t *f) {
  while (amo_or(f, 1)) {
  }
  return 1;
}
/* as futex_lock, backing off 32 cycles between attempts */
static inline int futex_lock_s(futex_t *f) {
  while (amo_or(f, 1)) rt_time_wait_cycles(32);
  return 1;
}
static inline void futex_unlock(futex_t *f) { futex_init(f); }

/* The core's cycle counter (an environment call the switch answers). */
static inline uint32_t cycles(void) {
  register uint32_t a0 __asm__("a0");
  register uint32_t a7 __asm__("a7") = PSPIN_ECALL_CYCLES;
  __asm__ __volatile__("ecall" : "=r"(a0) : "r"(a7) : "memory");
  return a0;
}
