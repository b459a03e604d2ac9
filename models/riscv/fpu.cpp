// The F extension (single precision, IEEE 754-2008 as the RISC-V spec,
// chapter 11, requires it): the host's binary32 arithmetic under the
// requested rounding mode, its exception flags mapped to fflags, every NaN
// result canonical (0x7fc00000). Round-to-nearest-ties-to-max-magnitude
// (RMM), which the host lacks, is derived from the round-to-nearest-even
// result and the exact error of the operation (error-free transformations):
// the two differ only when the exact result lies half-way between two floats.
//
// Built with -frounding-math -fsignaling-nans -ffp-contract=off (see
// CMakeLists.txt) so the compiler neither folds nor reorders the arithmetic
// around the rounding-mode and flag accesses.
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "models/riscv/fpu.h"
#include "models/riscv/hart.h"

namespace fabricvp::riscv {

namespace {

constexpr uint32_t kCanonicalNan = 0x7fc00000u;
enum : uint32_t { kNX = 1, kUF = 2, kOF = 4, kDZ = 8, kNV = 16 };
enum : unsigned { kRNE = 0, kRTZ = 1, kRDN = 2, kRUP = 3, kRMM = 4 };

float as_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t as_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
bool is_nan(uint32_t b) { return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0; }
bool is_snan(uint32_t b) { return is_nan(b) && !(b & 0x00400000u); }

/// Host rounding mode for a RISC-V one (RMM runs as RNE, then is corrected).
int host_mode(unsigned rm) {
  switch (rm) {
    case kRTZ: return FE_TOWARDZERO;
    case kRDN: return FE_DOWNWARD;
    case kRUP: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

uint32_t host_flags() {
  const int e = std::fetestexcept(FE_ALL_EXCEPT);
  uint32_t f = 0;
  if (e & FE_INEXACT) f |= kNX;
  if (e & FE_UNDERFLOW) f |= kUF;
  if (e & FE_OVERFLOW) f |= kOF;
  if (e & FE_DIVBYZERO) f |= kDZ;
  if (e & FE_INVALID) f |= kNV;
  return f;
}

/// Scoped host rounding mode with cleared flags.
struct HostFp {
  int saved;
  explicit HostFp(unsigned rm) : saved(std::fegetround()) {
    std::fesetround(host_mode(rm));
    std::feclearexcept(FE_ALL_EXCEPT);
  }
  ~HostFp() { std::fesetround(saved); }
};

/// The RMM result given the RNE result r and the exact error err = exact - r
/// (a double, exact). Only an exact tie away from zero changes r.
float rmm_fix(float r, double err) {
  if (err == 0.0 || std::isinf(r) || std::isnan(r)) return r;
  const float toward =
      std::nextafter(r, err > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
  const double half_gap = (static_cast<double>(toward) - static_cast<double>(r)) / 2;
  if (err == half_gap && std::fabs(toward) > std::fabs(r)) return toward;
  return r;
}

/// Rounds an exactly known double to binary32 under rm (flags from the host).
float round_exact_double(double d, unsigned rm) {
  volatile double vd = d;
  const float r = static_cast<float>(vd);
  if (rm != kRMM) return r;
  return rmm_fix(r, d - static_cast<double>(r));
}

}  // namespace

namespace fpu {

uint32_t add_s(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, bool allow_fast) {
  uint32_t out;
  if (allow_fast && rm == kRNE && fpu::rne_fast(a, b, false, out, flags)) return out;
  const float fa = as_float(a), fb = as_float(b);
  HostFp h(rm);
  volatile float va = fa, vb = fb;
  const float r = va + vb;
  flags = host_flags();
  float res = r;
  if (rm == kRMM && (flags & kNX) && !(flags & kOF)) {
    // TwoSum: the exact error of r = va + vb
    const float x1 = va, y1 = vb;
    volatile float bb = r - x1;
    volatile float e = (x1 - (r - bb)) + (y1 - bb);
    res = rmm_fix(r, static_cast<double>(e));
  }
  out = as_bits(res);
  return is_nan(out) ? kCanonicalNan : out;
}

uint32_t mul_s(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, bool allow_fast) {
  uint32_t out;
  if (allow_fast && rm == kRNE && fpu::rne_fast(a, b, true, out, flags)) return out;
  const float fa = as_float(a), fb = as_float(b);
  HostFp h(rm);
  volatile float va = fa, vb = fb;
  const float r = va * vb;
  flags = host_flags();
  float res = r;
  if (rm == kRMM && (flags & kNX) && !(flags & kOF))
    res = rmm_fix(r, static_cast<double>(fa) * static_cast<double>(fb) - static_cast<double>(r));
  out = as_bits(res);
  return is_nan(out) ? kCanonicalNan : out;
}

}  // namespace fpu

bool Hart::exec_fp(const Insn& in) {
  unsigned rm = in.rm;
  if (rm == 7) rm = frm_;
  const bool uses_rm = in.op == Op::FaddS || in.op == Op::FsubS || in.op == Op::FmulS || in.op == Op::FdivS ||
                       in.op == Op::FsqrtS || in.op == Op::FcvtWS || in.op == Op::FcvtWuS || in.op == Op::FcvtSW ||
                       in.op == Op::FcvtSWu || (in.op >= Op::FmaddS && in.op <= Op::FnmaddS);
  if (uses_rm && rm > kRMM) return false;  // reserved or invalid dynamic rounding mode

  const uint32_t a = f_[in.rs1], b = f_[in.rs2], c = f_[in.rs3];
  const float fa = as_float(a), fb = as_float(b), fc = as_float(c);
  uint32_t flags = 0;
  auto set_f = [&](float r) {
    uint32_t bits = as_bits(r);
    if (is_nan(bits)) bits = kCanonicalNan;
    f_[in.rd] = bits;
    fp_dirty();
  };
  auto set_x = [&](uint32_t v) {
    if (in.rd) x_[in.rd] = v;
  };

  switch (in.op) {
    case Op::FaddS:
    case Op::FsubS:
      // a - b is a + (-b), except that a signalling NaN b stays signalling
      f_[in.rd] = fpu::add_s(a, in.op == Op::FsubS && !is_nan(b) ? b ^ 0x80000000u : b, rm, flags);
      fp_dirty();
      break;
    case Op::FmulS:
      f_[in.rd] = fpu::mul_s(a, b, rm, flags);
      fp_dirty();
      break;
    case Op::FdivS: {
      // Quotients of binary32 values never fall exactly half-way: RMM = RNE.
      HostFp h(rm);
      volatile float va = fa, vb = fb;
      set_f(va / vb);
      flags = host_flags();
      break;
    }
    case Op::FsqrtS: {
      // Square roots are never exact ties either.
      HostFp h(rm);
      volatile float va = fa;
      set_f(std::sqrt(static_cast<float>(va)));
      flags = host_flags();
      break;
    }
    case Op::FmaddS:
    case Op::FmsubS:
    case Op::FnmsubS:
    case Op::FnmaddS: {
      // fmadd: a*b+c; fmsub: a*b-c; fnmsub: -(a*b)+c; fnmadd: -(a*b)-c.
      const bool neg_prod = in.op == Op::FnmsubS || in.op == Op::FnmaddS;
      const bool neg_add = in.op == Op::FmsubS || in.op == Op::FnmaddS;
      const float pa = neg_prod && !is_nan(a) ? -fa : fa;
      const float pc = neg_add && !is_nan(c) ? -fc : fc;
      HostFp h(rm);
      volatile float va = pa, vb = fb, vc = pc;
      const float r = std::fma(static_cast<float>(va), static_cast<float>(vb), static_cast<float>(vc));
      flags = host_flags();
      // 0 * inf + qNaN: the spec requires the invalid flag (the host may not raise it).
      if ((std::isinf(fa) && fb == 0.0f) || (fa == 0.0f && std::isinf(fb))) flags |= kNV;
      float out = r;
      if (rm == kRMM && (flags & kNX) && !(flags & kOF) && std::isfinite(r)) {
        const double p = static_cast<double>(pa) * static_cast<double>(fb);  // exact
        const double s = p + static_cast<double>(pc);
        const double bb = s - p;
        const double e = (p - (s - bb)) + (static_cast<double>(pc) - bb);  // s + e == p + pc exactly
        out = rmm_fix(r, (s - static_cast<double>(r)) + e);
      }
      set_f(out);
      break;
    }
    case Op::FsgnjS:
      f_[in.rd] = (a & 0x7fffffffu) | (b & 0x80000000u);
      fp_dirty();
      break;
    case Op::FsgnjnS:
      f_[in.rd] = (a & 0x7fffffffu) | (~b & 0x80000000u);
      fp_dirty();
      break;
    case Op::FsgnjxS:
      f_[in.rd] = a ^ (b & 0x80000000u);
      fp_dirty();
      break;
    case Op::FminS:
    case Op::FmaxS: {
      if (is_snan(a) || is_snan(b)) flags |= kNV;
      uint32_t r;
      if (is_nan(a) && is_nan(b)) {
        r = kCanonicalNan;
      } else if (is_nan(a)) {
        r = b;
      } else if (is_nan(b)) {
        r = a;
      } else if (fa == fb) {
        // -0 is smaller than +0
        const bool a_neg = a >> 31;
        r = (in.op == Op::FminS) == a_neg ? a : b;
      } else {
        r = (in.op == Op::FminS) == (fa < fb) ? a : b;
      }
      f_[in.rd] = r;
      fp_dirty();
      break;
    }
    case Op::FcvtWS:
    case Op::FcvtWuS: {
      const bool is_unsigned = in.op == Op::FcvtWuS;
      if (is_nan(a)) {
        flags |= kNV;
        set_x(is_unsigned ? UINT32_MAX : static_cast<uint32_t>(INT32_MAX));
        break;
      }
      double r;
      {
        HostFp h(rm == kRMM ? kRNE : rm);
        volatile double d = static_cast<double>(fa);
        r = rm == kRMM ? std::round(static_cast<double>(d)) : std::nearbyint(static_cast<double>(d));
      }
      const double lo = is_unsigned ? 0.0 : -2147483648.0;
      const double hi = is_unsigned ? 4294967295.0 : 2147483647.0;
      if (r < lo) {
        flags |= kNV;
        set_x(is_unsigned ? 0 : 0x80000000u);
      } else if (r > hi) {
        flags |= kNV;
        set_x(is_unsigned ? UINT32_MAX : static_cast<uint32_t>(INT32_MAX));
      } else {
        if (r != static_cast<double>(fa)) flags |= kNX;
        set_x(is_unsigned ? static_cast<uint32_t>(r) : static_cast<uint32_t>(static_cast<int32_t>(r)));
      }
      break;
    }
    case Op::FcvtSW:
    case Op::FcvtSWu: {
      const double d =
          in.op == Op::FcvtSW ? static_cast<double>(static_cast<int32_t>(x_[in.rs1])) : static_cast<double>(x_[in.rs1]);
      HostFp h(rm);
      set_f(round_exact_double(d, rm));
      flags = host_flags();
      break;
    }
    case Op::FmvXW: set_x(a); break;
    case Op::FmvWX:
      f_[in.rd] = x_[in.rs1];
      fp_dirty();
      break;
    case Op::FeqS:
      if (is_snan(a) || is_snan(b)) flags |= kNV;
      set_x(!is_nan(a) && !is_nan(b) && fa == fb);
      break;
    case Op::FltS:
    case Op::FleS:
      if (is_nan(a) || is_nan(b)) {
        flags |= kNV;
        set_x(0);
      } else {
        set_x(in.op == Op::FltS ? fa < fb : fa <= fb);
      }
      break;
    case Op::FclassS: {
      const bool neg = a >> 31;
      const uint32_t exp = (a >> 23) & 0xff, man = a & 0x7fffff;
      unsigned bit;
      if (exp == 0xff)
        bit = man == 0 ? (neg ? 0 : 7) : (man & 0x400000) ? 9 : 8;
      else if (exp == 0)
        bit = man == 0 ? (neg ? 3 : 4) : (neg ? 2 : 5);
      else
        bit = neg ? 1 : 6;
      set_x(1u << bit);
      break;
    }
    default: return false;
  }
  if (flags) {
    fflags_ |= flags;
    fp_dirty();
  }
  return true;
}

}  // namespace fabricvp::riscv
