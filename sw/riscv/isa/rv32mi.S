/* Machine mode: CSRs, traps (mcause, mepc, mtval), mret to user mode,
   physical memory protection, counters. */
#include "test.h"

RVTEST_BEGIN
  /* misa: RV32 with I, M, A, C, U */
  li TESTNUM, 1
  csrr a0, misa
  srli a1, a0, 30
  li t6, 1
  bne a1, t6, fail
  li t6, (1 << 0) | (1 << 2) | (1 << 8) | (1 << 12) | (1 << 20)
  and a1, a0, t6
  bne a1, t6, fail
  /* mscratch: csrrw / csrrs / csrrc and their immediate forms */
  li TESTNUM, 2
  li a0, 0x0f0f0000
  csrw mscratch, a0
  csrrsi a1, mscratch, 0x1f
  bne a1, a0, fail
  csrrci a1, mscratch, 0x3
  li t6, 0x0f0f001f
  bne a1, t6, fail
  li t5, 0x0f000000
  csrrc a1, mscratch, t5
  li t6, 0x0f0f001c
  bne a1, t6, fail
  csrrw a1, mscratch, zero
  li t6, 0x000f001c
  bne a1, t6, fail
  csrr a1, mscratch
  bnez a1, fail
  /* mhartid of the only hart is 0 */
  li TESTNUM, 3
  csrr a0, mhartid
  bnez a0, fail
  /* minstret advances (by how much is the implementation's business) */
  li TESTNUM, 4
  csrr a0, minstret
  nop
  nop
  csrr a1, minstret
  bgeu a0, a1, fail
  /* mcycle advances */
  li TESTNUM, 5
  csrr a0, mcycle
  nop
  csrr a1, mcycle
  beq a0, a1, fail
  /* ecall from M-mode: cause 11, mepc at the ecall */
  la s1, 1f
  TEST_TRAP(6, 11, 1: ecall)
  bne s8, s1, fail
  bnez s9, fail
  /* ebreak: cause 3 */
  la s1, 2f
  TEST_TRAP(7, 3, 2: ebreak)
  bne s8, s1, fail
  /* an illegal instruction: cause 2, mepc at it */
  la s1, 3f
  TEST_TRAP(8, 2, 3: .word 0x00000000 | 0xffffffff)
  bne s8, s1, fail
  /* an unknown CSR is illegal */
  TEST_TRAP(9, 2, csrr a0, 0x7c0)
  /* writing a read-only CSR is illegal */
  TEST_TRAP(10, 2, csrw mhartid, a0)
  /* misaligned loads and stores are carried out (as on RI5CY and QEMU) */
  li TESTNUM, 11
  la s0, tdata
  li a0, 0x44332211
  sw a0, 0(s0)
  li a0, 0x88776655
  sw a0, 4(s0)
  lw a1, 1(s0)
  li t6, 0x55443322
  bne a1, t6, fail
  lh a1, 3(s0)
  li t6, 0x00005544
  bne a1, t6, fail
  li TESTNUM, 12
  li a0, 0xaabbccdd
  sw a0, 2(s0)
  lw a1, 0(s0)
  li t6, 0xccdd2211
  bne a1, t6, fail
  lhu a1, 4(s0)
  li t6, 0xaabb
  bne a1, t6, fail
  /* load from an address where nothing is: access fault, cause 5 */
  li s1, 0x40000000
  TEST_TRAP(13, 5, lw a0, 0(s1))
  bne s9, s1, fail
  TEST_TRAP(14, 7, sw a0, 0(s1))
  bne s9, s1, fail
  /* jumping there: instruction access fault, cause 1 */
  TEST_TRAP(15, 1, jr s1)
  bne s8, s1, fail
  /* mret to user mode: mstatus.MPP = U; ecall from U-mode is cause 8.
     Without any PMP entry, user mode may touch nothing: set one entry
     covering all memory (NAPOT, RWX) first. */
  li TESTNUM, 16
  li t0, -1
  csrw pmpaddr0, t0
  li t0, 0x1f             /* NAPOT | X | W | R */
  csrw pmpcfg0, t0
  li t0, 0x1800
  csrc mstatus, t0        /* MPP = U */
  la t0, 4f
  csrw mepc, t0
  li s11, 8
  la s10, 5f
  mret
4:ecall                   /* runs in U-mode */
  j fail
5:li t6, -1
  bne s11, t6, fail
  /* in U-mode, an M-mode CSR is illegal */
  li TESTNUM, 17
  li t0, 0x1800
  csrc mstatus, t0
  la t0, 6f
  csrw mepc, t0
  li s11, 2
  la s10, 7f
  mret
6:csrr a0, mstatus
  j fail
7:li t6, -1
  bne s11, t6, fail
  /* PMP: entry 0 makes [tdata, tdata+16) read-only (NAPOT 16 bytes),
     entry 1 allows everything else. A U-mode store there faults (cause 7),
     a load works; the same store from M-mode works (entry not locked). */
  li TESTNUM, 18
  la s0, tdata
  srli t0, s0, 2
  ori t0, t0, 1           /* NAPOT 16 bytes: base >> 2 | 0b1 */
  csrw pmpaddr0, t0
  li t0, -1
  csrw pmpaddr1, t0
  li t0, (0x1f << 8) | 0x19  /* entry 1 NAPOT RWX, entry 0 NAPOT R */
  csrw pmpcfg0, t0
  li t0, 0x1800
  csrc mstatus, t0
  la t0, 8f
  csrw mepc, t0
  li s11, 7
  la s10, 9f
  mret
8:lw a0, 0(s0)            /* U-mode: allowed */
  sw a0, 4(s0)            /* U-mode: store access fault */
  j fail
9:li t6, -1
  bne s11, t6, fail
  addi t6, s0, 4
  bne s9, t6, fail
  li TESTNUM, 19
  li a0, 77
  sw a0, 4(s0)            /* M-mode: allowed */
  lw a1, 4(s0)
  bne a0, a1, fail
  /* TOR entries: [0, tdata) and [tdata+16, top) RWX, the 16 bytes between none */
  li TESTNUM, 20
  srli t0, s0, 2
  csrw pmpaddr0, t0
  addi t0, s0, 16
  srli t0, t0, 2
  csrw pmpaddr1, t0
  li t0, -1
  csrw pmpaddr2, t0
  li t0, (0x0f << 16) | (0x08 << 8) | 0x0f  /* TOR RWX, TOR none, TOR RWX */
  csrw pmpcfg0, t0
  li t0, 0x1800
  csrc mstatus, t0
  la t0, 10f
  csrw mepc, t0
  li s11, 5
  la s10, 11f
  mret
10:
  lw a0, 16(s0)           /* just past the hole: allowed */
  lw a0, 8(s0)            /* in the hole: load access fault */
  j fail
11:
  li t6, -1
  bne s11, t6, fail
  addi t6, s0, 8
  bne s9, t6, fail
  /* mstatus.MPRV with MPP = U makes M-mode loads obey the user's PMP */
  li TESTNUM, 21
  li t0, 0x1800
  csrc mstatus, t0        /* MPP = U */
  li t0, 1 << 17
  csrs mstatus, t0        /* MPRV */
  li s11, 5
  la s10, 12f
  lw a0, 8(s0)
  j fail
12:
  li t6, -1
  bne s11, t6, fail
  /* back in M-mode with MPP = M after the handler: MPRV no longer restricts */
  li t0, 1 << 17
  csrc mstatus, t0
  lw a0, 8(s0)
  /* mtvec: modes 2 and 3 are reserved and read back as 0 */
  li TESTNUM, 22
  la t0, trap_vector
  ori t1, t0, 3
  csrw mtvec, t1
  csrr a0, mtvec
  bne a0, t0, fail
RVTEST_END

TEST_DATA
  .align 4
tdata: .word 1, 2, 3, 4
