/* RV32C: every compressed instruction, written with its c. mnemonic so the
   assembler cannot choose the 32-bit form. */
#include "test.h"

RVTEST_BEGIN
  .option push
  .option rvc
  la s0, data            /* s0 = x8, s1 = x9: registers of the 3-bit fields */
  /* c.addi4spn, c.addi16sp, c.lwsp, c.swsp */
  li TESTNUM, 1
  mv t0, sp
  la sp, data
  c.addi4spn s1, sp, 8
  addi t6, sp, 8
  bne s1, t6, fail
  li TESTNUM, 2
  c.addi16sp sp, 32
  c.addi16sp sp, -16
  la t6, data + 16
  bne sp, t6, fail
  li TESTNUM, 3
  li a0, 0x5a5a1234
  c.swsp a0, 4(sp)
  c.lwsp a1, 4(sp)
  bne a0, a1, fail
  mv sp, t0
  /* c.lw / c.sw */
  li TESTNUM, 4
  li s1, 0x13579bdf
  c.sw s1, 12(s0)
  c.lw a5, 12(s0)      /* a5 = x15 */
  bne a5, s1, fail
  /* c.li, c.lui, c.addi, c.nop */
  li TESTNUM, 5
  c.li a0, -32
  li t6, -32
  bne a0, t6, fail
  li TESTNUM, 6
  c.lui a0, 0xfffe1    /* imm -31 << 12 */
  li t6, 0xfffe1000
  bne a0, t6, fail
  li TESTNUM, 7
  c.li a0, 5
  c.addi a0, -6
  c.nop
  li t6, -1
  bne a0, t6, fail
  /* c.srli, c.srai, c.andi, c.slli */
  li TESTNUM, 8
  li s1, 0x80000000
  c.srai s1, 4
  li t6, 0xf8000000
  bne s1, t6, fail
  li TESTNUM, 9
  c.srli s1, 28
  li t6, 0xf
  bne s1, t6, fail
  li TESTNUM, 10
  c.andi s1, -6        /* 0xf & ~5 */
  li t6, 0xa
  bne s1, t6, fail
  li TESTNUM, 11
  c.slli s1, 28
  li t6, 0xa0000000
  bne s1, t6, fail
  /* c.sub, c.xor, c.or, c.and (x8..x15) */
  li TESTNUM, 12
  li s1, 10
  li a4, 3
  c.sub s1, a4
  li t6, 7
  bne s1, t6, fail
  li TESTNUM, 13
  c.xor s1, a4
  li t6, 4
  bne s1, t6, fail
  li TESTNUM, 14
  c.or s1, a4
  li t6, 7
  bne s1, t6, fail
  li TESTNUM, 15
  c.and s1, a4
  li t6, 3
  bne s1, t6, fail
  /* c.mv, c.add */
  li TESTNUM, 16
  li a1, 40
  c.mv a0, a1
  c.add a0, a1
  li t6, 80
  bne a0, t6, fail
  /* c.j, c.jal, c.jr, c.jalr, c.beqz, c.bnez */
  li TESTNUM, 17
  c.j 1f
  j fail
1:li TESTNUM, 18
  c.jal 2f
3:j fail
2:la t6, 3b
  bne ra, t6, fail
  li TESTNUM, 19
  la a2, 4f
  c.jr a2
  j fail
4:li TESTNUM, 20
  la a2, 5f
  c.jalr a2
6:j fail
5:la t6, 6b
  bne ra, t6, fail
  li TESTNUM, 21
  li s1, 0
  c.beqz s1, 7f
  j fail
7:c.bnez s1, fail
  li s1, 1
  c.beqz s1, fail
  c.bnez s1, 8f
  j fail
8:
  /* c.ebreak traps as a breakpoint, mepc at the 2-byte instruction */
  la s1, 10f
  TEST_TRAP(22, 3, 10: c.ebreak)
  bne s8, s1, fail
  .option pop
RVTEST_END

TEST_DATA
data: .fill 16, 4, 0
