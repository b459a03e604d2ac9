/* fabricvp PsPIN-compatible handler API: small helpers. printf goes to the
   simulator's log (one line per newline, prefixed with time and core). */
#pragma once

#include <stdio.h>

#define MIN(a, b) (((a) < (b)) ? (a) : (b))
#define MAX(a, b) (((a) > (b)) ? (a) : (b))
#define DIV_CEIL(a, b) (((a) + (b) - 1) / (b))
#define FAST_DIV(a, log2_b) ((a) >> (log2_b)) /* powers of two only */
#define FAST_MOD(a, b) ((a) & ((b) - 1))
#define AND(a, b) ((a) & (b))

#define STRINGIFY(x) #x
#define read_register(reg, val) __asm__ __volatile__("addi %0, " STRINGIFY(reg) ", 0" : "=r"(val))

/* Stops the simulation (PsPIN's TERMINATE register). */
#define TERMINATE \
  { *(volatile unsigned int *)0x1B200000 = 1; }

#define SPIN_PRINTF(format, ...) printf("%s:%s:%d: " format, __FILE__, __FUNCTION__, __LINE__, ##__VA_ARGS__)
#ifdef LOG
#define DEBUG_PRINT(format, ...) SPIN_PRINTF(format, ##__VA_ARGS__)
#else
#define DEBUG_PRINT(...)
#endif

/* tp holds (cluster << 5) | core while a handler runs */
static inline __attribute__((always_inline)) unsigned int user_core_id(void) {
  unsigned int id;
  read_register(tp, id);
  return id & 0x1f;
}
static inline __attribute__((always_inline)) unsigned int user_cluster_id(void) {
  unsigned int id;
  read_register(tp, id);
  return (id >> 5) & 0x3f;
}
