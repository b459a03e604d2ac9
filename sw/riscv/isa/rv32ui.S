/* RV32I: integer computation, control transfer, loads and stores. */
#include "test.h"

RVTEST_BEGIN
  /* add / sub */
  TEST_RR(1, add, 0x00000000, 0x00000000, 0x00000000)
  TEST_RR(2, add, 0x0000000a, 0x00000003, 0x00000007)
  TEST_RR(3, add, 0x7fffffff + 0x80000000, 0x7fffffff, 0x80000000)
  TEST_RR(4, add, 0x00000000, 0xffffffff, 0x00000001)
  TEST_RR(5, add, 0x80000000, 0x7fffffff, 0x00000001)
  TEST_RR(6, sub, 0xfffffffc, 0x00000003, 0x00000007)
  TEST_RR(7, sub, 0x80000000, 0x00000000, 0x80000000)
  TEST_RR(8, sub, 0x7fffffff, 0x80000000, 0x00000001)
  TEST_RR_SRC1_EQ_DEST(9, add, 24, 13, 11)
  /* addi and friends */
  TEST_RI(10, addi, 0x000007ff, 0, 0x7ff)
  TEST_RI(11, addi, 0xfffff800, 0, -2048)
  TEST_RI(12, addi, 0x80000000, 0x7fffffff, 1)
  TEST_RI(13, slti, 1, -1, 0)
  TEST_RI(14, slti, 0, 0, -1)
  TEST_RI(15, sltiu, 1, 0, -1)      /* the immediate is sign-extended, then compared unsigned */
  TEST_RI(16, sltiu, 0, 0xffffffff, -1)
  TEST_RI(17, xori, 0xf00ff00f, 0x0ff00f00, -241)  /* -241 = 0xf0f */
  TEST_RI(18, ori, 0xffffff0f, 0x00ff0f00, -241)
  TEST_RI(19, andi, 0x00ff0f00, 0x00ff0f00, -241)
  TEST_RI(20, slli, 0x80000000, 1, 31)
  TEST_RI(21, slli, 0xffffffff, 0xffffffff, 0)
  TEST_RI(22, srli, 0x00000001, 0x80000000, 31)
  TEST_RI(23, srai, 0xffffffff, 0x80000000, 31)
  TEST_RI(24, srai, 0xfff00000, 0x80000000, 11)
  /* register-register */
  TEST_RR(25, sll, 0x00004000, 1, 14)
  TEST_RR(26, sll, 0x80000000, 1, 0xffffffff)   /* only the low 5 bits shift */
  TEST_RR(27, srl, 0x00010000, 0x80000000, 15)
  TEST_RR(28, sra, 0xffff0000, 0x80000000, 15)
  TEST_RR(29, sra, 0x7fffffff, 0x7fffffff, 0xffffffe0)
  TEST_RR(30, slt, 1, 0x80000000, 0x7fffffff)
  TEST_RR(31, slt, 0, 0x7fffffff, 0x80000000)
  TEST_RR(32, sltu, 0, 0x80000000, 0x7fffffff)
  TEST_RR(33, sltu, 1, 0x7fffffff, 0x80000000)
  TEST_RR(34, xor, 0xf00ff00f, 0xff00ff00, 0x0f0f0f0f)
  TEST_RR(35, or, 0xff0fff0f, 0xff00ff00, 0x0f0f0f0f)
  TEST_RR(36, and, 0x0f000f00, 0xff00ff00, 0x0f0f0f0f)
  /* x0 stays zero */
  li TESTNUM, 37
  li a0, 5
  add x0, a0, a0
  bnez x0, fail
  addi x0, x0, 7
  bnez x0, fail
  /* lui / auipc */
  li TESTNUM, 38
  lui a0, 0xfffff
  li t6, 0xfffff000
  bne a0, t6, fail
  li TESTNUM, 39
1:auipc a0, 0x1
  la a1, 1b
  sub a0, a0, a1
  li t6, 0x1000
  bne a0, t6, fail
  /* branches, taken and not taken */
  li TESTNUM, 40
  li a0, -1
  li a1, 1
  blt a1, a0, fail
  bge a0, a1, fail
  bltu a0, a1, fail
  bgeu a1, a0, fail
  beq a0, a1, fail
  bne a0, a0, fail
  li TESTNUM, 41
  blt a0, a1, 2f
  j fail
2:bgeu a0, a1, 3f
  j fail
3:bge a1, a0, 4f
  j fail
4:bltu a1, a0, 5f
  j fail
5:beq a1, a1, 6f
  j fail
6:bne a0, a1, 7f
  j fail
7:
  /* jal / jalr: link register and target */
  li TESTNUM, 42
  jal ra, 8f
8:la a1, 8b
  bne ra, a1, fail
  li TESTNUM, 43
  la a2, 10f
  jalr t0, 1(a2)          /* bit 0 of the target is cleared */
9:j fail
10:
  la a1, 9b
  bne t0, a1, fail
  li TESTNUM, 44
  la a2, 11f
  jalr a2, 0(a2)          /* rd == rs1: the target is read first */
11:
  la a1, 11b
  bne a2, a1, fail
  /* loads and stores of every width, sign and zero extension */
  la s0, data
  li TESTNUM, 45
  lb a0, 0(s0)
  li t6, 0xffffff80
  bne a0, t6, fail
  li TESTNUM, 46
  lbu a0, 0(s0)
  li t6, 0x80
  bne a0, t6, fail
  li TESTNUM, 47
  lh a0, 2(s0)
  li t6, 0xffff8001
  bne a0, t6, fail
  li TESTNUM, 48
  lhu a0, 2(s0)
  li t6, 0x8001
  bne a0, t6, fail
  li TESTNUM, 49
  lw a0, 4(s0)
  li t6, 0xdeadbeef
  bne a0, t6, fail
  li TESTNUM, 50
  lw a0, -4(s0)           /* a negative offset */
  li t6, 0x01234567
  bne a0, t6, fail
  li TESTNUM, 51
  li a1, 0xaabbccdd
  sw a1, 8(s0)
  sb zero, 8(s0)
  sh zero, 10(s0)
  lw a0, 8(s0)
  li t6, 0x0000cc00
  bne a0, t6, fail
  li TESTNUM, 52
  li a1, 0x12345678
  sb a1, 13(s0)           /* only the low byte is stored */
  sh a1, 14(s0)
  lw a0, 12(s0)
  li t6, 0x56787800
  bne a0, t6, fail
  /* fence is accepted */
  li TESTNUM, 53
  fence
  fence rw, rw
  fence.i
RVTEST_END

TEST_DATA
  .word 0x01234567
data:
  .byte 0x80, 0x00
  .half 0x8001
  .word 0xdeadbeef
  .word 0
  .word 0
