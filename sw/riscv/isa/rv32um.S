/* RV32M: multiplication and division, with the spec's corner cases
   (division by zero, the overflowing signed division). */
#include "test.h"

RVTEST_BEGIN
  TEST_RR(1, mul, 0x00000000, 0x00000000, 0x00000000)
  TEST_RR(2, mul, 0x00000015, 0x00000003, 0x00000007)
  TEST_RR(3, mul, 0x00000001, 0xffffffff, 0xffffffff)
  TEST_RR(4, mul, 0x80000000, 0x00008000, 0x00010000)
  TEST_RR(5, mul, 0xff000000, 0x00ff0000, 0x00000100)
  TEST_RR(6, mulh, 0x00000000, 0x00000003, 0x00000007)
  TEST_RR(7, mulh, 0x00000000, 0xffffffff, 0xffffffff)
  TEST_RR(8, mulh, 0xffffffff, 0xffffffff, 0x00000001)
  TEST_RR(9, mulh, 0x40000000, 0x80000000, 0x80000000)
  TEST_RR(10, mulh, 0xc0000000, 0x80000000, 0x7fffffff)
  TEST_RR(11, mulhu, 0xfffffffe, 0xffffffff, 0xffffffff)
  TEST_RR(12, mulhu, 0x00000000, 0xffffffff, 0x00000001)
  TEST_RR(13, mulhu, 0x40000000, 0x80000000, 0x80000000)
  TEST_RR(14, mulhsu, 0xffffffff, 0xffffffff, 0xffffffff)   /* -1 * (2^32-1) */
  TEST_RR(15, mulhsu, 0xc0000000, 0x80000000, 0x80000000)   /* -2^31 * 2^31 */
  TEST_RR(16, mulhsu, 0x00000000, 0x00000001, 0xffffffff)
  TEST_RR(17, div, 3, 20, 6)
  TEST_RR(18, div, -3, -20, 6)
  TEST_RR(19, div, -3, 20, -6)
  TEST_RR(20, div, 3, -20, -6)
  TEST_RR(21, div, 0x80000000, 0x80000000, 0xffffffff)      /* overflow: the dividend */
  TEST_RR(22, div, 0xffffffff, 1, 0)                        /* by zero: -1 */
  TEST_RR(23, div, 0xffffffff, 0, 0)
  TEST_RR(24, divu, 3, 20, 6)
  TEST_RR(25, divu, 715827879, -20, 6)
  TEST_RR(26, divu, 0, 20, -6)
  TEST_RR(27, divu, 0xffffffff, 7, 0)                       /* by zero: all ones */
  TEST_RR(28, rem, 2, 20, 6)
  TEST_RR(29, rem, -2, -20, 6)
  TEST_RR(30, rem, 2, 20, -6)
  TEST_RR(31, rem, -2, -20, -6)
  TEST_RR(32, rem, 0, 0x80000000, 0xffffffff)               /* overflow: 0 */
  TEST_RR(33, rem, 0x12345678, 0x12345678, 0)               /* by zero: the dividend */
  TEST_RR(34, remu, 2, 20, 6)
  TEST_RR(35, remu, 2, -20, 6)
  TEST_RR(36, remu, 20, 20, -6)
  TEST_RR(37, remu, 0xfedcba98, 0xfedcba98, 0)
  TEST_RR_SRC1_EQ_DEST(38, mul, 143, 13, 11)
RVTEST_END
