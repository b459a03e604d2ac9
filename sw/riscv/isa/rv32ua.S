/* RV32A: atomic memory operations (they return the old value) and the
   load-reserved / store-conditional pair. */
#include "test.h"

#define TEST_AMO(n, inst, old, operand, new) \
  li TESTNUM, n;                             \
  la s0, word;                               \
  li t0, old;                                \
  sw t0, 0(s0);                              \
  li t1, operand;                            \
  inst a0, t1, (s0);                         \
  li t6, old;                                \
  bne a0, t6, fail;                          \
  lw a1, 0(s0);                              \
  li t6, new;                                \
  bne a1, t6, fail;

RVTEST_BEGIN
  TEST_AMO(1, amoswap.w, 0x80000000, 0x12345678, 0x12345678)
  TEST_AMO(2, amoadd.w, 0x7fffffff, 1, 0x80000000)
  TEST_AMO(3, amoadd.w, 0xffffffff, 0xffffffff, 0xfffffffe)
  TEST_AMO(4, amoxor.w, 0xff00ff00, 0x0f0f0f0f, 0xf00ff00f)
  TEST_AMO(5, amoand.w, 0xff00ff00, 0x0f0f0f0f, 0x0f000f00)
  TEST_AMO(6, amoor.w, 0xff00ff00, 0x0f0f0f0f, 0xff0fff0f)
  TEST_AMO(7, amomin.w, 0x80000000, 0x7fffffff, 0x80000000)
  TEST_AMO(8, amomin.w, 5, -5, -5)
  TEST_AMO(9, amomax.w, 0x80000000, 0x7fffffff, 0x7fffffff)
  TEST_AMO(10, amomax.w, -5, -6, -5)
  TEST_AMO(11, amominu.w, 0x80000000, 0x7fffffff, 0x7fffffff)
  TEST_AMO(12, amomaxu.w, 0x80000000, 0x7fffffff, 0x80000000)
  TEST_AMO(13, amoadd.w.aqrl, 40, 2, 42)
  /* rd = x0 discards the old value, the memory still changes */
  li TESTNUM, 14
  la s0, word
  sw zero, 0(s0)
  li t1, 9
  amoadd.w x0, t1, (s0)
  lw a0, 0(s0)
  li t6, 9
  bne a0, t6, fail
  /* lr / sc: success writes and returns 0 */
  li TESTNUM, 15
  la s0, word
  li t0, 100
  sw t0, 0(s0)
  lr.w a0, (s0)
  addi a0, a0, 1
  sc.w a1, a0, (s0)
  bnez a1, fail
  lw a2, 0(s0)
  li t6, 101
  bne a2, t6, fail
  /* a second sc without a reservation fails and writes nothing */
  li TESTNUM, 16
  li a0, 7
  sc.w a1, a0, (s0)
  beqz a1, fail
  lw a2, 0(s0)
  li t6, 101
  bne a2, t6, fail
  /* an sc to another address than the reservation fails */
  li TESTNUM, 17
  la s1, word2
  lr.w a0, (s0)
  sc.w a1, a0, (s1)
  beqz a1, fail
  /* a counter incremented in an lr/sc loop */
  li TESTNUM, 18
  sw zero, 0(s0)
  li t2, 10
1:lr.w a0, (s0)
  addi a0, a0, 3
  sc.w a1, a0, (s0)
  bnez a1, 1b
  addi t2, t2, -1
  bnez t2, 1b
  lw a0, 0(s0)
  li t6, 30
  bne a0, t6, fail
RVTEST_END

TEST_DATA
word: .word 0
word2: .word 0
