/* Start-up of fabricvp's bare-metal RV32 C programs (link.ld): stack at the
   top of RAM, gp, zeroed .bss, main(), then its return value through HTIF
   (0 = pass). A trap prints its cause and pc and fails with code 1000. */
  .section .text.init
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  la sp, __stack_top
  la t0, trap_entry
  csrw mtvec, t0
#ifdef __riscv_flen
  li t0, 0x2000
  csrs mstatus, t0   /* mstatus.FS = Initial: the F registers are usable */
#endif
  la t0, __bss_start
  la t1, __bss_end
1:bgeu t0, t1, 2f
  sw zero, 0(t0)
  addi t0, t0, 4
  j 1b
2:call main
  call htif_exit
3:j 3b

  .align 2
trap_entry:
  csrr a0, mcause
  csrr a1, mepc
  csrr a2, mtval
  call htif_trap
4:j 4b

  .section .tohost, "aw", @progbits
  .align 6
  .globl tohost
  .type tohost, @object
  .size tohost, 8
tohost: .dword 0
  .align 6
  .globl fromhost
  .type fromhost, @object
  .size fromhost, 8
fromhost: .dword 0
