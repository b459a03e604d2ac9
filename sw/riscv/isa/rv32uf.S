/* RV32F (run with --isa rv32imafc): arithmetic in every rounding mode that
   matters, the exception flags, NaN canonicalization, min/max, comparisons,
   conversions, classification, sign injection, loads and stores. */
#include "test.h"

/* fa0 = op(fa1, fa2[, fa3]) on bit patterns; check the result and the flags */
#define FBITS(reg, v) li t0, v; fmv.w.x reg, t0;
#define FCHECK(n, result, flags)   \
  li TESTNUM, n;                   \
  fmv.x.w a0, fa0;                 \
  li t6, result;                   \
  bne a0, t6, fail;                \
  csrrw a1, fflags, zero;          \
  li t6, flags;                    \
  bne a1, t6, fail;
#define XCHECK(n, reg, result, flags) \
  li TESTNUM, n;                      \
  li t6, result;                      \
  bne reg, t6, fail;                  \
  csrrw a1, fflags, zero;             \
  li t6, flags;                       \
  bne a1, t6, fail;
#define TEST_F2(n, inst, result, flags, v1, v2) \
  FBITS(fa1, v1) FBITS(fa2, v2) inst fa0, fa1, fa2; FCHECK(n, result, flags)
#define TEST_F3(n, inst, result, flags, v1, v2, v3) \
  FBITS(fa1, v1) FBITS(fa2, v2) FBITS(fa3, v3) inst fa0, fa1, fa2, fa3; FCHECK(n, result, flags)

#define ONE 0x3f800000
#define TWO 0x40000000
#define THREE 0x40400000
#define PINF 0x7f800000
#define NINF 0xff800000
#define QNAN 0x7fc00000
#define SNAN 0x7f800001
#define NX 1
#define UF 2
#define OF 4
#define DZ 8
#define NV 16

RVTEST_BEGIN
  li t0, 0x2000
  csrs mstatus, t0         /* mstatus.FS = Initial: F instructions are legal */
  csrw fcsr, zero
  TEST_F2(1, fadd.s, 0x40600000, 0, 0x40200000, ONE)          /* 2.5 + 1 */
  TEST_F2(2, fadd.s, ONE, NX, ONE, 0x30800000)                 /* 1 + 2^-30: inexact */
  TEST_F2(3, fsub.s, QNAN, NV, PINF, PINF)                     /* inf - inf: canonical NaN */
  TEST_F2(4, fmul.s, 0xc0c00000, 0, THREE, 0xc0000000)         /* 3 * -2 */
  TEST_F2(5, fdiv.s, PINF, DZ, ONE, 0)                         /* 1 / 0 */
  TEST_F2(6, fdiv.s, 0x3eaaaaab, NX, ONE, THREE)               /* 1 / 3 */
  TEST_F2(7, fmul.s, PINF, OF | NX, 0x7f000000, 0x7f000000)    /* overflow */
  TEST_F2(8, fmul.s, 0, UF | NX, 0x00800000, 0x00800000)       /* underflow to zero */
  TEST_F2(9, fadd.s, QNAN, NV, SNAN, ONE)                      /* a signalling NaN operand */
  TEST_F2(10, fadd.s, QNAN, 0, 0x7fc12345, ONE)                /* a quiet NaN payload is not kept */
  /* rounding modes on 1 + 2^-24 (exactly half-way between 1 and 1 + 2^-23) */
  TEST_F2(11, fadd.s, ONE, NX, ONE, 0x33800000)                /* rne: to even */
  FBITS(fa1, ONE) FBITS(fa2, 0x33800000) fadd.s fa0, fa1, fa2, rmm
  FCHECK(12, 0x3f800001, NX)                                   /* rmm: away from zero */
  FBITS(fa1, ONE) FBITS(fa2, 0x33800000) fadd.s fa0, fa1, fa2, rup
  FCHECK(13, 0x3f800001, NX)
  FBITS(fa1, ONE) FBITS(fa2, 0x33800000) fadd.s fa0, fa1, fa2, rdn
  FCHECK(14, ONE, NX)
  FBITS(fa1, 0xbf800000) FBITS(fa2, 0xb3800000) fadd.s fa0, fa1, fa2, rmm
  FCHECK(15, 0xbf800001, NX)                                   /* rmm, negative */
  FBITS(fa1, 0xbf800000) FBITS(fa2, 0xb3800000) fadd.s fa0, fa1, fa2, rtz
  FCHECK(16, 0xbf800000, NX)
  /* the dynamic rounding mode comes from frm */
  li t0, 4
  csrw frm, t0
  FBITS(fa1, ONE) FBITS(fa2, 0x33800000) fadd.s fa0, fa1, fa2, dyn
  FCHECK(17, 0x3f800001, NX)
  csrw frm, zero
  /* rmm multiplication: (1 + 2^-22) * 1.25 = 1.25 + 2.5 ulp */
  FBITS(fa1, 0x3f800002) FBITS(fa2, 0x3fa00000) fmul.s fa0, fa1, fa2, rmm
  FCHECK(18, 0x3fa00003, NX)
  FBITS(fa1, 0x3f800002) FBITS(fa2, 0x3fa00000) fmul.s fa0, fa1, fa2
  FCHECK(19, 0x3fa00002, NX)
  /* square root */
  FBITS(fa1, 0x40800000) fsqrt.s fa0, fa1
  FCHECK(20, TWO, 0)
  FBITS(fa1, 0xbf800000) fsqrt.s fa0, fa1
  FCHECK(21, QNAN, NV)
  FBITS(fa1, TWO) fsqrt.s fa0, fa1
  FCHECK(22, 0x3fb504f3, NX)
  /* fused multiply-add, all four forms: a = 2, b = 3, c = 1 */
  TEST_F3(23, fmadd.s, 0x40e00000, 0, TWO, THREE, ONE)         /* 7 */
  TEST_F3(24, fmsub.s, 0x40a00000, 0, TWO, THREE, ONE)         /* 5 */
  TEST_F3(25, fnmsub.s, 0xc0a00000, 0, TWO, THREE, ONE)        /* -5 */
  TEST_F3(26, fnmadd.s, 0xc0e00000, 0, TWO, THREE, ONE)        /* -7 */
  TEST_F3(27, fmadd.s, QNAN, NV, PINF, 0, QNAN)                /* inf * 0 + qNaN is invalid */
  /* one rounding only: (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24, exact in binary32 */
  TEST_F3(28, fmadd.s, 0x3a000400, 0, 0x3f800800, 0x3f800800, 0xbf800000)
  /* min / max */
  TEST_F2(29, fmin.s, 0x80000000, 0, 0x00000000, 0x80000000)
  TEST_F2(30, fmax.s, 0x00000000, 0, 0x80000000, 0x00000000)
  TEST_F2(31, fmin.s, ONE, 0, QNAN, ONE)
  TEST_F2(32, fmax.s, ONE, NV, SNAN, ONE)
  TEST_F2(33, fmin.s, QNAN, 0, QNAN, QNAN)
  TEST_F2(34, fmax.s, THREE, 0, TWO, THREE)
  /* comparisons */
  FBITS(fa1, ONE) FBITS(fa2, TWO)
  flt.s a0, fa1, fa2
  XCHECK(35, a0, 1, 0)
  fle.s a0, fa2, fa1
  XCHECK(36, a0, 0, 0)
  feq.s a0, fa1, fa1
  XCHECK(37, a0, 1, 0)
  FBITS(fa2, QNAN)
  feq.s a0, fa1, fa2
  XCHECK(38, a0, 0, 0)                                         /* quiet compare: no flag */
  flt.s a0, fa1, fa2
  XCHECK(39, a0, 0, NV)                                        /* signalling compare */
  FBITS(fa2, SNAN)
  feq.s a0, fa1, fa2
  XCHECK(40, a0, 0, NV)
  FBITS(fa1, 0x80000000) FBITS(fa2, 0)
  feq.s a0, fa1, fa2
  XCHECK(41, a0, 1, 0)                                         /* -0 == +0 */
  /* float -> int */
  FBITS(fa1, 0x3fc00000)                                       /* 1.5 */
  fcvt.w.s a0, fa1
  XCHECK(42, a0, 2, NX)
  fcvt.w.s a0, fa1, rtz
  XCHECK(43, a0, 1, NX)
  FBITS(fa1, 0xbfc00000)                                       /* -1.5 */
  fcvt.w.s a0, fa1, rdn
  XCHECK(44, a0, -2, NX)
  fcvt.w.s a0, fa1, rup
  XCHECK(45, a0, -1, NX)
  FBITS(fa1, 0x40200000)                                       /* 2.5 */
  fcvt.w.s a0, fa1, rmm
  XCHECK(46, a0, 3, NX)
  fcvt.w.s a0, fa1, rne
  XCHECK(47, a0, 2, NX)
  FBITS(fa1, QNAN)
  fcvt.w.s a0, fa1
  XCHECK(48, a0, 0x7fffffff, NV)
  FBITS(fa1, 0x4f32d05e)                                       /* 3e9 */
  fcvt.w.s a0, fa1
  XCHECK(49, a0, 0x7fffffff, NV)
  fcvt.wu.s a0, fa1
  XCHECK(50, a0, 3000000000, 0)
  FBITS(fa1, 0xcf32d05e)                                       /* -3e9 */
  fcvt.w.s a0, fa1
  XCHECK(51, a0, 0x80000000, NV)
  FBITS(fa1, 0xbf800000)
  fcvt.wu.s a0, fa1
  XCHECK(52, a0, 0, NV)                                        /* -1 unsigned: invalid */
  FBITS(fa1, 0xbf000000)
  fcvt.wu.s a0, fa1, rtz
  XCHECK(53, a0, 0, NX)                                        /* -0.5 rounds to 0: inexact only */
  FBITS(fa1, NINF)
  fcvt.wu.s a0, fa1
  XCHECK(54, a0, 0, NV)
  /* int -> float */
  li a1, 16777217
  fcvt.s.w fa0, a1
  FCHECK(55, 0x4b800000, NX)
  li a1, 16777217          /* FCHECK used a1 */
  fcvt.s.w fa0, a1, rmm
  FCHECK(56, 0x4b800001, NX)
  li a1, -7
  fcvt.s.w fa0, a1
  FCHECK(57, 0xc0e00000, 0)
  li a1, -1
  fcvt.s.wu fa0, a1
  FCHECK(58, 0x4f800000, NX)
  /* classification */
  FBITS(fa1, NINF)
  fclass.s a0, fa1
  XCHECK(59, a0, 1 << 0, 0)
  FBITS(fa1, 0xbf800000)
  fclass.s a0, fa1
  XCHECK(60, a0, 1 << 1, 0)
  FBITS(fa1, 0x80000001)
  fclass.s a0, fa1
  XCHECK(61, a0, 1 << 2, 0)
  FBITS(fa1, 0x80000000)
  fclass.s a0, fa1
  XCHECK(62, a0, 1 << 3, 0)
  FBITS(fa1, 0)
  fclass.s a0, fa1
  XCHECK(63, a0, 1 << 4, 0)
  FBITS(fa1, 1)
  fclass.s a0, fa1
  XCHECK(64, a0, 1 << 5, 0)
  FBITS(fa1, ONE)
  fclass.s a0, fa1
  XCHECK(65, a0, 1 << 6, 0)
  FBITS(fa1, PINF)
  fclass.s a0, fa1
  XCHECK(66, a0, 1 << 7, 0)
  FBITS(fa1, SNAN)
  fclass.s a0, fa1
  XCHECK(67, a0, 1 << 8, 0)
  FBITS(fa1, QNAN)
  fclass.s a0, fa1
  XCHECK(68, a0, 1 << 9, 0)
  /* sign injection */
  TEST_F2(69, fsgnj.s, 0xbf800000, 0, ONE, 0x80000000)
  TEST_F2(70, fsgnjn.s, 0x3f800000, 0, ONE, 0x80000000)
  TEST_F2(71, fsgnjx.s, 0x3f800000, 0, 0xbf800000, 0xbf800000)
  TEST_F2(72, fsgnj.s, 0xffc00001, 0, 0x7fc00001, 0x80000000)  /* bits, not values: NaN kept */
  /* loads and stores, compressed forms included */
  li TESTNUM, 73
  la s0, fdata
  flw fa1, 0(s0)
  fsw fa1, 4(s0)
  lw a0, 4(s0)
  li t6, 0x12345678
  bne a0, t6, fail
  li TESTNUM, 74
  .option push
  .option rvc
  c.flw fa5, 0(s0)
  c.fsw fa5, 8(s0)
  .option pop
  lw a0, 8(s0)
  bne a0, t6, fail
  /* fcsr packs frm and fflags */
  li TESTNUM, 75
  li t0, (3 << 5) | 0x1f
  csrw fcsr, t0
  csrr a0, frm
  li t6, 3
  bne a0, t6, fail
  csrr a0, fflags
  li t6, 0x1f
  bne a0, t6, fail
  /* an invalid dynamic rounding mode makes the instruction illegal */
  li t0, 5
  csrw frm, t0
  TEST_TRAP(76, 2, fadd.s fa0, fa1, fa2, dyn)
  csrw fcsr, zero
  /* mstatus.SD reports the dirty state */
  li TESTNUM, 77
  csrr a0, mstatus
  bgez a0, fail
  /* with mstatus.FS = Off, F instructions are illegal */
  li t0, 0x6000
  csrc mstatus, t0
  TEST_TRAP(78, 2, fadd.s fa0, fa1, fa2)
RVTEST_END

TEST_DATA
fdata: .word 0x12345678, 0, 0
