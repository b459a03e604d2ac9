/* Macros of fabricvp's RV32 ISA tests (sw/riscv/isa/*.S).

   Each test file is a sequence of numbered cases. gp (x3) holds the number of
   the case running; a case that fails jumps to `fail`, which reports the
   number through HTIF (tohost = number << 1 | 1; 1000 before the first
   case); reaching the end reports a
   pass (tohost = 1). The same ELF runs on `fabricvp riscv` and on QEMU's
   spike machine (qemu-system-riscv32 -machine spike -bios none -kernel).

   Traps: mtvec points at `trap_vector`. A case that expects a trap (TEST_TRAP) puts the
   expected mcause in s11 and the address to resume at in s10; the handler
   checks mcause, saves mepc and mtval in s8 and s9, and resumes at s10. An
   unexpected trap fails the running case. */
#define TESTNUM gp

#define RVTEST_BEGIN                     \
  .section .text.init;                   \
  .globl _start;                         \
  _start:                                \
  la t0, trap_vector;                    \
  csrw mtvec, t0;                        \
  li s11, -1;                            \
  li TESTNUM, 0;                         \
  j tests_start;                         \
  .align 2;                              \
  trap_vector:                           \
  csrr t5, mcause;                       \
  bne t5, s11, fail;                     \
  csrr s8, mepc;                         \
  csrr s9, mtval;                        \
  li s11, -1;                            \
  csrw mepc, s10;                        \
  li t5, 0x1800;                         \
  csrs mstatus, t5; /* back to M-mode */ \
  mret;                                  \
  tests_start:

#define RVTEST_END                       \
  pass:                                  \
  fence;                                 \
  li t0, 1;                              \
  la t1, tohost;                         \
  sw t0, 0(t1);                          \
  sw zero, 4(t1);                        \
  1: j 1b;                               \
  fail:                                  \
  fence;                                 \
  bnez TESTNUM, 3f;                      \
  li TESTNUM, 1000; /* before case 1 */  \
  3: slli t0, TESTNUM, 1;                \
  ori t0, t0, 1;                         \
  la t1, tohost;                         \
  sw t0, 0(t1);                          \
  sw zero, 4(t1);                        \
  2: j 2b;                               \
  .section .tohost, "aw", @progbits;     \
  .align 6;                              \
  .globl tohost;                         \
  .type tohost, @object;                 \
  .size tohost, 8;                       \
  tohost: .dword 0;                      \
  .align 6;                              \
  .globl fromhost;                       \
  .type fromhost, @object;               \
  .size fromhost, 8;                     \
  fromhost: .dword 0;

/* Checks: the result register against a constant. */
#define CHECK(n, reg, val) \
  li TESTNUM, n;           \
  li t6, val;              \
  bne reg, t6, fail;

/* rd = op rs1, rs2 on constants */
#define TEST_RR(n, inst, result, v1, v2) \
  li a1, v1;                             \
  li a2, v2;                             \
  inst a0, a1, a2;                       \
  CHECK(n, a0, result)

/* rd = op rs1, imm */
#define TEST_RI(n, inst, result, v1, imm) \
  li a1, v1;                              \
  inst a0, a1, imm;                       \
  CHECK(n, a0, result)

/* rd = op rs1, rs2 with rd == rs1 (operand forwarding through the same register) */
#define TEST_RR_SRC1_EQ_DEST(n, inst, result, v1, v2) \
  li a1, v1;                                          \
  li a2, v2;                                          \
  inst a1, a1, a2;                                    \
  CHECK(n, a1, result)

/* A case that must trap with `cause`: `code` runs with s10 = resume label. */
#define TEST_TRAP(n, cause, ...) \
  li TESTNUM, n;                  \
  li s11, cause;                  \
  la s10, 9f;                     \
  __VA_ARGS__;                    \
  j fail;                         \
  9: li t6, -1;                   \
  bne s11, t6, fail;

#define TEST_DATA .data; .align 4;
