// Reed-Solomon codec over GF(2^10) (see fec.h for the code definitions).
//
// Field tables. exp[i] = a^(i mod 1023) for 0 <= i < 2046 and 0 above;
// log[x] is the discrete logarithm of x != 0 and log[0] = kLogZero = 2046, so
// a product is exp[log[x] + log[y]] without a branch on zero (the index stays
// below 4096), and so is x * a^e for 0 <= e < 1023. mulpow[j][x] = x * a^j
// (one load per multiplication by a constant) serves Horner's rule at a^j and
// the Chien search (locator term i steps by a^i per position).
//
// Where the time goes (KP4, per codeword):
//  - Remainder. Encoding computes m(x) x^2t mod g(x); the decoder computes
//    r(x) = c(x) x^2t mod g(x) with the same division register, and then
//    S_j = c(a^j) = r(a^j) a^(-2tj) since g(a^j) = 0. The register (2t
//    symbols) lives in SIMD registers and moves one symbol per input symbol;
//    the product g * f of the feedback f is a row of two 32-entry tables
//    (row(f) = row(f & 31) ^ row(f & 0x3e0): multiplication is GF(2)-linear).
//    The feedback chain (one table load and one XOR per symbol) runs in scalar
//    registers two symbols ahead of the vector register.
//  - A zero remainder means a codeword: the decoder returns at once.
//  - Horner's rule (syndromes from the remainder) and the Chien search are
//    chains of dependent table loads; 10 to 12 of them run together (the two
//    halves of the polynomial x 5 or 6 powers), as many as there are registers.
#include "models/c2c/fec.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fabricvp::c2c {

namespace {

constexpr uint32_t kPoly = 0x409;  // x^10 + x^3 + 1
constexpr uint32_t kOrder = 1023;  // multiplicative order of a
constexpr uint32_t kLogZero = 2 * kOrder;
constexpr uint32_t kMask = 0x3ff;
constexpr int kPowTables = 32;  // a^0 .. a^31: syndromes need up to a^(2t-1) = a^29, Chien a^t = a^15

struct Gf {
  alignas(64) uint16_t exp[4096];
  alignas(64) uint16_t log[1024];
  alignas(64) uint16_t mulpow[kPowTables][1024];

  Gf() {
    uint32_t x = 1;
    for (uint32_t i = 0; i < kOrder; ++i) {
      if (i > 0 && x == 1) throw std::logic_error("fec: x^10 + x^3 + 1 is not primitive");
      exp[i] = static_cast<uint16_t>(x);
      log[x] = static_cast<uint16_t>(i);
      x <<= 1;
      if (x & 0x400) x ^= kPoly;
    }
    if (x != 1) throw std::logic_error("fec: x^10 + x^3 + 1 is not primitive");
    for (uint32_t i = kOrder; i < 2 * kOrder; ++i) exp[i] = exp[i - kOrder];
    for (uint32_t i = 2 * kOrder; i < 4096; ++i) exp[i] = 0;
    log[0] = static_cast<uint16_t>(kLogZero);
    for (int j = 0; j < kPowTables; ++j)
      for (uint32_t v = 0; v < 1024; ++v) mulpow[j][v] = exp[log[v] + j];
  }
  uint32_t mul(uint32_t a, uint32_t b) const { return exp[log[a] + log[b]]; }
};

const Gf& gf() {
  static const Gf g;
  return g;
}

/// (e mod 1023) for e >= 0.
inline uint32_t mod_order(uint64_t e) { return static_cast<uint32_t>(e % kOrder); }
/// (-e mod 1023) for e >= 0.
inline uint32_t neg_mod_order(uint64_t e) { return (kOrder - mod_order(e)) % kOrder; }

// Hides a value's range from the optimizer so that it keeps the table chains
// in full-width registers (otherwise GCC narrows them to 16 bits and spends a
// zero-extension per step and a stack store per chain).
inline void opaque(size_t& v) { asm("" : "+r"(v)); }

// ---- Horner's rule at several powers of a ----------------------------------

constexpr int kBlock = 6;  // powers per pass: 2 x 6 chains + operands fit the 15 usable registers

// For the powers a^j0 .. a^(j0+NJ-1), evaluates the two halves of the
// polynomial w (2h symbols, highest degree first; w(x) = A(x) x^h + B(x)):
// ha[q] = A(a^(j0+q)), hb[q] = B(a^(j0+q)).
template <int NJ>
void horner_block(const uint16_t* w, size_t h, const uint16_t (*tab)[1024], uint32_t* ha, uint32_t* hb) {
  size_t sa[NJ], sb[NJ];
  for (int q = 0; q < NJ; ++q) sa[q] = sb[q] = 0;
  const uint16_t* b = w + h;
  for (size_t i = 0; i < h; ++i) {
    size_t ca = w[i] & kMask, cb = b[i] & kMask;
    opaque(ca);
    opaque(cb);
#pragma GCC unroll 8
    for (int q = 0; q < NJ; ++q) {
      sa[q] = tab[q][sa[q]] ^ ca;
      sb[q] = tab[q][sb[q]] ^ cb;
    }
  }
  for (int q = 0; q < NJ; ++q) {
    ha[q] = static_cast<uint32_t>(sa[q]);
    hb[q] = static_cast<uint32_t>(sb[q]);
  }
}

void horner(int nj, const uint16_t* w, size_t h, const uint16_t (*tab)[1024], uint32_t* ha, uint32_t* hb) {
  switch (nj) {
    case 1: return horner_block<1>(w, h, tab, ha, hb);
    case 2: return horner_block<2>(w, h, tab, ha, hb);
    case 3: return horner_block<3>(w, h, tab, ha, hb);
    case 4: return horner_block<4>(w, h, tab, ha, hb);
    case 5: return horner_block<5>(w, h, tab, ha, hb);
    case 6: return horner_block<6>(w, h, tab, ha, hb);
    default: throw std::logic_error("fec: bad Horner block");
  }
}

// ---- Chien search -----------------------------------------------------------

// Adds locator terms i0 .. i0+NI-1, evaluated at every position, into ev[]
// (positions pos and pos + h together). ra/rb hold the terms at pos = 0 and h.
template <int NI>
void chien_block(const uint32_t* ra0, const uint32_t* rb0, size_t h, const uint16_t (*tab)[1024], uint16_t* ev) {
  size_t ra[NI], rb[NI];
  for (int q = 0; q < NI; ++q) {
    ra[q] = ra0[q];
    rb[q] = rb0[q];
  }
  uint16_t* eb = ev + h;
  for (size_t i = 0; i < h; ++i) {
    size_t va = 0, vb = 0;
#pragma GCC unroll 8
    for (int q = 0; q < NI; ++q) {
      va ^= ra[q];
      vb ^= rb[q];
      ra[q] = tab[q][ra[q]];
      rb[q] = tab[q][rb[q]];
    }
    ev[i] = static_cast<uint16_t>(ev[i] ^ va);
    eb[i] = static_cast<uint16_t>(eb[i] ^ vb);
  }
}

constexpr int kChienBlock = 5;  // terms per pass: 2 x 5 chains + 2 sums + operands fit the registers

void chien_pass(int ni, const uint32_t* ra, const uint32_t* rb, size_t h, const uint16_t (*tab)[1024], uint16_t* ev) {
  switch (ni) {
    case 1: return chien_block<1>(ra, rb, h, tab, ev);
    case 2: return chien_block<2>(ra, rb, h, tab, ev);
    case 3: return chien_block<3>(ra, rb, h, tab, ev);
    case 4: return chien_block<4>(ra, rb, h, tab, ev);
    case 5: return chien_block<5>(ra, rb, h, tab, ev);
    default: throw std::logic_error("fec: bad Chien block");
  }
}

/// Appends to roots[] the indices i < n with ev[i] == 0, at most `cap` of
/// them; returns how many there are in all (so > cap means too many).
int zero_positions(const uint16_t* ev, int n, int* roots, int cap) {
  int found = 0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    uint64_t w;
    std::memcpy(&w, ev + i, sizeof w);
    // Some 16-bit lane is zero iff this is nonzero (lanes hold values < 1024).
    if (((w - 0x0001000100010001ull) & ~w & 0x8000800080008000ull) == 0) continue;
    for (int q = 0; q < 4; ++q)
      if (ev[i + q] == 0) {
        if (found < cap) roots[found] = i + q;
        ++found;
      }
  }
  for (; i < n; ++i)
    if (ev[i] == 0) {
      if (found < cap) roots[found] = i;
      ++found;
    }
  return found;
}

}  // namespace

const char* fec_code_name(FecCode code) { return code == FecCode::kp4 ? "kp4" : "kr4"; }

bool parse_fec_code(const std::string& text, FecCode& code) {
  if (text == "kp4") {
    code = FecCode::kp4;
    return true;
  }
  if (text == "kr4") {
    code = FecCode::kr4;
    return true;
  }
  return false;
}

// ---- Per-code tables ----------------------------------------------------------

namespace detail {

// The division register R holds 2t symbols, R[0] the coefficient of x^(2t-1).
// Per input symbol u:  f = u ^ R[0];  R[i] = R[i+1] ^ g_(2t-1-i) f  (R[2t] = 0).
// row_lo[f & 31] ^ row_hi[f >> 5] is the row (g_(2t-1-i) f)_i, zero-padded to
// the register width (16 or 32 symbols). top0/top1 are its first two entries
// for the scalar look-ahead of the feedback.
struct RsTables {
  FecCode code;
  int n = 0, k = 0, t = 0, p = 0;
  uint16_t gen[kFecMaxParity + 1] = {};
  alignas(64) uint16_t row_lo[32][32] = {};
  alignas(64) uint16_t row_hi[32][32] = {};
  uint16_t top0[1024] = {};
  uint16_t top1[1024] = {};
  // Syndromes from the remainder halves: S_j = A(a^j) a^(-jh) + B(a^j) a^(-2tj), h = t.
  uint16_t log_a[kFecMaxParity] = {};
  uint16_t log_b[kFecMaxParity] = {};

  RsTables(FecCode code_, int n_, int k_) : code(code_), n(n_), k(k_), t((n_ - k_) / 2), p(n_ - k_) {
    // The decoder evaluates words and remainders as two equal halves.
    if (n % 2 != 0 || p > kFecMaxParity || n > kFecMaxN) throw std::logic_error("fec: unsupported code");
    const Gf& g = gf();
    // g(x) = prod_{j<p} (x + a^j), ascending coefficients.
    gen[0] = 1;
    for (int j = 0; j < p; ++j) {
      const uint32_t root = g.exp[j];
      for (int i = j + 1; i >= 1; --i) gen[i] = static_cast<uint16_t>(gen[i - 1] ^ g.mul(gen[i], root));
      gen[0] = static_cast<uint16_t>(g.mul(gen[0], root));
    }
    for (uint32_t f = 0; f < 32; ++f)
      for (int i = 0; i < p; ++i) {
        row_lo[f][i] = static_cast<uint16_t>(g.mul(gen[p - 1 - i], f));
        row_hi[f][i] = static_cast<uint16_t>(g.mul(gen[p - 1 - i], f << 5));
      }
    for (uint32_t f = 0; f < 1024; ++f) {
      top0[f] = static_cast<uint16_t>(g.mul(gen[p - 1], f));
      top1[f] = static_cast<uint16_t>(g.mul(gen[p - 2], f));
    }
    for (int j = 0; j < p; ++j) {
      log_a[j] = static_cast<uint16_t>(neg_mod_order(uint64_t(j) * t));
      log_b[j] = static_cast<uint16_t>(neg_mod_order(uint64_t(j) * p));
    }
  }
};

}  // namespace detail

namespace {

const detail::RsTables* tables_for(FecCode code) {
  static const detail::RsTables kp4(FecCode::kp4, fec_sizes(FecCode::kp4).n, fec_sizes(FecCode::kp4).k);
  static const detail::RsTables kr4(FecCode::kr4, fec_sizes(FecCode::kr4).n, fec_sizes(FecCode::kr4).k);
  return code == FecCode::kp4 ? &kp4 : &kr4;
}

#if defined(__SSE2__)
/// out[0 .. 2t-1] = in(x) x^2t mod g(x), highest degree first, for the `len`
/// symbols of `in` (highest degree first). The register is NV SSE2 vectors of
/// 8 symbols (lane 0 of r[0] is R[0]).
template <int NV>
void remainder_sse2(const detail::RsTables& tb, const uint16_t* in, int len, uint16_t* out) {
  __m128i r[NV + 1];
  for (auto& v : r) v = _mm_setzero_si128();  // r[NV] stays zero
  uint32_t r1 = 0;                            // R[1] of the next register, computed a step ahead
  uint32_t f = len > 0 ? in[0] & kMask : 0u;
  for (int i = 0; i < len; ++i) {
    const __m128i* lo = reinterpret_cast<const __m128i*>(tb.row_lo[f & 31]);
    const __m128i* hi = reinterpret_cast<const __m128i*>(tb.row_hi[f >> 5]);
    const uint32_t pre = (i + 1 < len ? (in[i + 1] & kMask) : 0u) ^ r1;
    r1 = static_cast<uint32_t>(_mm_extract_epi16(r[0], 2)) ^ tb.top1[f];
    const uint32_t next = pre ^ tb.top0[f];  // the next feedback: next input ^ R[0] of the next register
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __m128i moved = _mm_or_si128(_mm_srli_si128(r[v], 2), _mm_slli_si128(r[v + 1], 14));
      r[v] = _mm_xor_si128(moved, _mm_xor_si128(_mm_load_si128(lo + v), _mm_load_si128(hi + v)));
    }
    f = next;
  }
  alignas(16) uint16_t tmp[8 * NV];
  for (int v = 0; v < NV; ++v) _mm_store_si128(reinterpret_cast<__m128i*>(tmp) + v, r[v]);
  std::memcpy(out, tmp, sizeof(uint16_t) * tb.p);
}
#endif

}  // namespace

namespace detail {

void rs_remainder_portable(FecCode code, const uint16_t* in, int len, uint16_t* out) {
  const RsTables& tb = *tables_for(code);
  uint16_t r[33] = {};  // r[p] stays zero
  for (int i = 0; i < len; ++i) {
    const uint32_t f = (in[i] & kMask) ^ r[0];
    const uint16_t* lo = tb.row_lo[f & 31];
    const uint16_t* hi = tb.row_hi[f >> 5];
    for (int q = 0; q < tb.p; ++q) r[q] = static_cast<uint16_t>(r[q + 1] ^ lo[q] ^ hi[q]);
  }
  std::memcpy(out, r, sizeof(uint16_t) * tb.p);
}

}  // namespace detail

namespace {

void remainder(const detail::RsTables& tb, const uint16_t* in, int len, uint16_t* out) {
#if defined(__SSE2__)
  if (tb.p <= 16)
    remainder_sse2<2>(tb, in, len, out);
  else
    remainder_sse2<4>(tb, in, len, out);
#else
  detail::rs_remainder_portable(tb.code, in, len, out);
#endif
}

}  // namespace

void detail::rs_remainder(FecCode code, const uint16_t* in, int len, uint16_t* out) {
  remainder(*tables_for(code), in, len, out);
}

namespace {

/// Syndromes of a word from its remainder rem = word(x) x^2t mod g(x):
/// S_j = rem(a^j) a^(-2tj), j = 0 .. 2t-1.
void syndromes_of_remainder(const detail::RsTables& tb, const uint16_t* rem, uint16_t* s) {
  const Gf& g = gf();
  const int p = tb.p;
  const size_t h = static_cast<size_t>(p / 2);  // rem(x) = A(x) x^h + B(x)
  uint32_t ha[kBlock], hb[kBlock];
  for (int j0 = 0; j0 < p; j0 += kBlock) {
    const int nj = std::min(kBlock, p - j0);
    horner(nj, rem, h, g.mulpow + j0, ha, hb);
    for (int q = 0; q < nj; ++q) {
      const int j = j0 + q;
      s[j] = static_cast<uint16_t>(g.exp[g.log[ha[q]] + tb.log_a[j]] ^ g.exp[g.log[hb[q]] + tb.log_b[j]]);
    }
  }
}

/// True if every symbol of rem[0 .. p-1] is zero.
bool all_zero(const uint16_t* rem, int p) {
  uint32_t any = 0;
  for (int i = 0; i < p; ++i) any |= rem[i];
  return any == 0;
}

}  // namespace

namespace {

DecodeResult& fail(DecodeResult& r) {
  r.ok = false;
  r.corrected = 0;
  return r;
}

}  // namespace

// ---- RsCodec --------------------------------------------------------------------

RsCodec::RsCodec(FecCode code) : m_code(code), m_tab(tables_for(code)) {
  gf();
  m_n = m_tab->n;
  m_k = m_tab->k;
  m_t = m_tab->t;
}

const uint16_t* RsCodec::generator() const { return m_tab->gen; }

void RsCodec::encode(const uint16_t* msg, uint16_t* codeword) const {
  uint16_t parity[kFecMaxParity];
  remainder(*m_tab, msg, m_k, parity);  // before writing: msg and codeword may be the same buffer
  for (int i = 0; i < m_k; ++i) codeword[i] = static_cast<uint16_t>(msg[i] & kMask);
  std::memcpy(codeword + m_k, parity, sizeof(uint16_t) * m_tab->p);
}

void RsCodec::syndromes(const uint16_t* word, uint16_t* s) const {
  uint16_t rem[kFecMaxParity];
  remainder(*m_tab, word, m_n, rem);
  syndromes_of_remainder(*m_tab, rem, s);
}

bool RsCodec::is_codeword(const uint16_t* word) const {
  uint16_t rem[kFecMaxParity];
  remainder(*m_tab, word, m_n, rem);
  return all_zero(rem, m_tab->p);
}

bool RsCodec::chien(int degree) {
  const Gf& g = gf();
  const int n = m_n, h = n / 2;
  if (degree == 1) {
    // 1 + L1 x vanishes at x = 1 / L1 = a^-(n-1-pos): the error's locator is L1.
    const uint32_t d = g.log[m_lambda[1]];
    if (d >= static_cast<uint32_t>(n)) return false;  // in the shortened-away part
    m_roots[0] = n - 1 - static_cast<int>(d);
    return true;
  }
  // Position pos is the power x^(n-1-pos); its locator is X = a^(n-1-pos) and
  // the test point X^-1 = a^(pos - (n-1)). Term i at pos = 0 is
  // lambda_i * a^(-i (n-1)); every step multiplies it by a^i.
  std::fill(m_eval.begin(), m_eval.begin() + n, static_cast<uint16_t>(m_lambda[0]));
  uint32_t ra[kChienBlock], rb[kChienBlock];
  for (int i0 = 1; i0 <= degree; i0 += kChienBlock) {
    const int ni = std::min(kChienBlock, degree + 1 - i0);
    for (int q = 0; q < ni; ++q) {
      const uint64_t i = static_cast<uint64_t>(i0 + q);
      const uint32_t l = g.log[m_lambda[i]];
      ra[q] = g.exp[l + neg_mod_order(i * uint64_t(n - 1))];
      rb[q] = g.exp[l + neg_mod_order(i * uint64_t(n - 1 - h))];
    }
    chien_pass(ni, ra, rb, static_cast<size_t>(h), g.mulpow + i0, m_eval.data());
  }
  // A locator of degree L with exactly L distinct roots among the n positions
  // is the locator of an error pattern; fewer roots (some outside the
  // shortened code or not in the field) means more errors than t.
  return zero_positions(m_eval.data(), n, m_roots.data(), degree) == degree;
}

DecodeResult RsCodec::decode(uint16_t* cw, const int* erasures, int n_erasures) {
  const Gf& g = gf();
  const int n = m_n, p = 2 * m_t;
  DecodeResult res;
  if (n_erasures < 0 || (n_erasures > 0 && erasures == nullptr))
    throw std::invalid_argument("fec decode: bad erasure list");
  for (int a = 0; a < n_erasures; ++a) {
    if (erasures[a] < 0 || erasures[a] >= n)
      throw std::invalid_argument("fec decode: erasure position " + std::to_string(erasures[a]) + " out of range 0.." +
                                  std::to_string(n - 1));
    for (int b = 0; b < a; ++b)
      if (erasures[b] == erasures[a])
        throw std::invalid_argument("fec decode: erasure position " + std::to_string(erasures[a]) + " repeated");
  }
  if (n_erasures > p) return fail(res);

  uint16_t rem[kFecMaxParity];
  remainder(*m_tab, cw, n, rem);
  if (all_zero(rem, p)) return res;  // a codeword: nothing to correct
  syndromes_of_remainder(*m_tab, rem, m_synd.data());

  // Erasures: locator Gamma(x) = prod (1 + X x), X = a^(n-1-pos), and the
  // Forney syndromes T_j = sum_i Gamma_i S_(j-i), j = f .. p-1, which are the
  // syndromes of the errors alone (the erasures' terms cancel).
  const int f = n_erasures;
  const int len = p - f;         // syndromes left to locate errors with
  uint16_t lsyn[kFecMaxParity];  // logs of the Berlekamp-Massey input T_f .. T_(p-1)
  m_gamma.fill(0);
  m_gamma[0] = 1;
  if (f == 0) {
    for (int r = 0; r < len; ++r) lsyn[r] = g.log[m_synd[r]];
  } else {
    for (int a = 0; a < f; ++a) {
      const uint32_t lx = static_cast<uint32_t>(n - 1 - erasures[a]);
      for (int i = a + 1; i >= 1; --i)
        m_gamma[i] = static_cast<uint16_t>(m_gamma[i] ^ g.exp[g.log[m_gamma[i - 1]] + lx]);
    }
    for (int r = 0; r < len; ++r) {
      const int j = f + r;
      uint32_t v = m_synd[j];
      for (int i = 1; i <= f; ++i) v ^= g.mul(m_gamma[i], m_synd[j - i]);
      lsyn[r] = g.log[v];
    }
  }

  // Berlekamp-Massey: the shortest LFSR (error locator Lambda, length L) that
  // generates T. B = the locator before the last length change (kept as
  // logs), b = the discrepancy then; each step subtracts (d / b) x^shift B.
  m_lambda.fill(0);
  m_lambda[0] = 1;
  m_prev_log.fill(static_cast<uint16_t>(kLogZero));
  m_prev_log[0] = 0;
  int L = 0, deg_prev = 0, shift = 1;
  uint32_t lb = 0;
  for (int r = 0; r < len; ++r) {
    uint32_t d = g.exp[lsyn[r]];
    for (int i = 1; i <= L; ++i) d ^= g.exp[g.log[m_lambda[i]] + lsyn[r - i]];
    if (d == 0) {
      ++shift;
      continue;
    }
    const uint32_t ld = g.log[d];
    const uint32_t lc = ld >= lb ? ld - lb : ld + kOrder - lb;  // log(d / b)
    // shift + deg_prev <= r + 1 - L <= len (Massey); the bound only guards the array.
    const int top = std::min(deg_prev, static_cast<int>(m_lambda.size()) - 1 - shift);
    if (2 * L <= r) {
      uint16_t old_log[kFecMaxParity + 1];
      for (int i = 0; i <= L; ++i) old_log[i] = g.log[m_lambda[i]];
      for (int i = 0; i <= top; ++i)
        m_lambda[i + shift] = static_cast<uint16_t>(m_lambda[i + shift] ^ g.exp[lc + m_prev_log[i]]);
      for (int i = 0; i <= L; ++i) m_prev_log[i] = old_log[i];
      deg_prev = L;
      L = r + 1 - L;
      lb = ld;
      shift = 1;
    } else {
      for (int i = 0; i <= top; ++i)
        m_lambda[i + shift] = static_cast<uint16_t>(m_lambda[i + shift] ^ g.exp[lc + m_prev_log[i]]);
      ++shift;
    }
  }
  // More errors than the syndromes left after the erasures can locate, or a
  // locator whose degree is below its length: uncorrectable.
  if (2 * L > len || m_lambda[L] == 0) return fail(res);
  for (int i = L + 1; i < static_cast<int>(m_lambda.size()); ++i)
    if (m_lambda[i] != 0) return fail(res);
  if (L > 0 && !chien(L)) return fail(res);
  for (int e = 0; e < L; ++e)
    for (int a = 0; a < f; ++a)
      if (m_roots[e] == erasures[a]) return fail(res);  // a double root of the errata locator

  // Errata locator Psi = Lambda * Gamma (degree nu = L + f) and evaluator
  // Omega = S * Psi mod x^nu (the key equation makes its terms of degree
  // nu .. p-1 vanish).
  const int nu = L + f;
  uint16_t lpsi[2 * kFecMaxParity + 1];
  if (f == 0) {
    for (int i = 0; i <= nu; ++i) lpsi[i] = g.log[m_lambda[i]];
  } else {
    uint16_t psi[2 * kFecMaxParity + 1] = {};
    for (int i = 0; i <= L; ++i) {
      const uint32_t li = g.log[m_lambda[i]];
      for (int j = 0; j <= f; ++j) psi[i + j] = static_cast<uint16_t>(psi[i + j] ^ g.exp[li + g.log[m_gamma[j]]]);
    }
    for (int i = 0; i <= nu; ++i) lpsi[i] = g.log[psi[i]];
  }
  uint16_t lsynd[kFecMaxParity];
  for (int i = 0; i < nu; ++i) lsynd[i] = g.log[m_synd[i]];
  uint16_t lomega[kFecMaxParity];
  for (int i = 0; i < nu; ++i) {
    uint32_t v = 0;
    for (int l = 0; l <= i; ++l) v ^= g.exp[lsynd[i - l] + lpsi[l]];
    lomega[i] = g.log[v];
  }

  // Forney: error value Y = X Omega(1/X) / Psi'(1/X), where
  // Psi'(x) = sum over odd i of Psi_i x^(i-1). With e = -log X (mod 1023) and
  // the running power ex = i * e, term i of Omega is exp[lomega_i + ex] and
  // term i of Psi' is exp[lpsi_i + ex - e].
  int fix_pos[kFecMaxParity];
  uint16_t fix_val[kFecMaxParity];
  int nfix = 0;
  for (int e = 0; e < nu; ++e) {
    const bool is_error = e < L;
    const int pos = is_error ? m_roots[e] : erasures[e - L];
    const uint32_t lx = static_cast<uint32_t>(n - 1 - pos);  // log X
    const uint32_t step = lx == 0 ? 0 : kOrder - lx;         // log (1/X)
    uint32_t ov = 0, dv = 0;
    uint32_t ex = 0;  // i * step mod 1023
    for (int i = 0; i <= nu; ++i) {
      if (i < nu) ov ^= g.exp[lomega[i] + ex];
      if (i & 1) dv ^= g.exp[lpsi[i] + (ex >= step ? ex - step : ex + kOrder - step)];
      ex += step;
      if (ex >= kOrder) ex -= kOrder;
    }
    if (dv == 0) return fail(res);  // a repeated root
    if (ov == 0) {
      if (is_error) return fail(res);  // a located error of value 0: not an error pattern
      continue;                        // the erased symbol was right
    }
    uint32_t ly = lx + g.log[ov] + kOrder - g.log[dv];  // < 3 * 1023
    if (ly >= kOrder) ly -= kOrder;
    if (ly >= kOrder) ly -= kOrder;
    fix_pos[nfix] = pos;
    fix_val[nfix] = g.exp[ly];
    ++nfix;
  }
  for (int i = 0; i < nfix; ++i) cw[fix_pos[i]] = static_cast<uint16_t>((cw[fix_pos[i]] & kMask) ^ fix_val[i]);
  if (f > 0) std::sort(fix_pos, fix_pos + nfix);  // Chien's roots come in ascending order; erasures do not
  res.corrected = nfix;
  for (int i = 0; i < nfix; ++i) res.positions[i] = static_cast<uint16_t>(fix_pos[i]);
  return res;
}

// ---- Bit packing ------------------------------------------------------------------

void pack_bits(const uint8_t* bytes, size_t nbytes, uint16_t* symbols, size_t nsymbols) {
  if (nsymbols * kFecSymbolBits < nbytes * 8)
    throw std::invalid_argument("pack_bits: " + std::to_string(nsymbols) + " symbols cannot hold " +
                                std::to_string(nbytes) + " bytes");
  uint32_t acc = 0;  // bits not yet emitted, right-aligned
  int have = 0;
  size_t s = 0;
  for (size_t i = 0; i < nbytes; ++i) {
    acc = (acc << 8) | bytes[i];
    have += 8;
    if (have >= kFecSymbolBits) {
      have -= kFecSymbolBits;
      symbols[s++] = static_cast<uint16_t>((acc >> have) & kMask);
    }
  }
  if (have > 0) symbols[s++] = static_cast<uint16_t>((acc << (kFecSymbolBits - have)) & kMask);
  for (; s < nsymbols; ++s) symbols[s] = 0;
}

void unpack_bits(const uint16_t* symbols, size_t nsymbols, uint8_t* bytes, size_t nbytes) {
  if (nsymbols * kFecSymbolBits < nbytes * 8)
    throw std::invalid_argument("unpack_bits: " + std::to_string(nsymbols) + " symbols cannot fill " +
                                std::to_string(nbytes) + " bytes");
  uint32_t acc = 0;
  int have = 0;
  size_t s = 0;
  for (size_t i = 0; i < nbytes; ++i) {
    if (have < 8) {
      acc = (acc << kFecSymbolBits) | (symbols[s++] & kMask);
      have += kFecSymbolBits;
    }
    have -= 8;
    bytes[i] = static_cast<uint8_t>(acc >> have);
    acc &= (1u << have) - 1;
  }
}

}  // namespace fabricvp::c2c
