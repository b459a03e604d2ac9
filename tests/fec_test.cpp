// Reed-Solomon FEC codec (models/c2c/fec.h): the field, the generator and the
// encoder against an independent bit-serial reference; correction of up to t
// errors, of erasures and of errors with erasures; detection of words with
// more than t errors (miscorrection rate against its theoretical bound); the
// shortened code's out-of-range roots; bit packing; the `fabricvp fec` command.
//
// Random tests print their seed; FABRICVP_TEST_SEED=<n> replaces it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "models/c2c/fec.h"

namespace fs = std::filesystem;
using namespace fabricvp::c2c;

namespace {

// ---- Independent reference arithmetic (bit-serial, no tables) --------------

uint32_t ref_mul(uint32_t a, uint32_t b) {
  uint32_t r = 0;
  while (b) {
    if (b & 1) r ^= a;
    b >>= 1;
    a <<= 1;
    if (a & 0x400) a ^= 0x409;  // x^10 = x^3 + 1
  }
  return r;
}

uint32_t ref_pow(uint32_t base, uint64_t e) {
  uint32_t r = 1;
  for (; e; e >>= 1, base = ref_mul(base, base))
    if (e & 1) r = ref_mul(r, base);
  return r;
}

/// g(x) = prod_{j<2t} (x - a^j), ascending coefficients.
std::vector<uint32_t> ref_generator(int parity) {
  std::vector<uint32_t> g{1};
  for (int j = 0; j < parity; ++j) {
    const uint32_t root = ref_pow(2, j);
    std::vector<uint32_t> next(g.size() + 1, 0);
    for (size_t i = 0; i < g.size(); ++i) {
      next[i + 1] ^= g[i];             // x * g
      next[i] ^= ref_mul(g[i], root);  // + root * g
    }
    g = next;
  }
  return g;
}

/// Word (highest degree first) evaluated at x by Horner's rule.
uint32_t ref_eval(const std::vector<uint16_t>& w, uint32_t x) {
  uint32_t v = 0;
  for (uint16_t s : w) v = ref_mul(v, x) ^ s;
  return v;
}

/// poly (highest degree first) mod g (monic, ascending): the last 2t symbols.
std::vector<uint16_t> ref_mod(std::vector<uint16_t> w, const std::vector<uint32_t>& g) {
  const size_t p = g.size() - 1;
  for (size_t i = 0; i + p < w.size(); ++i) {
    const uint32_t c = w[i];
    if (!c) continue;
    for (size_t j = 0; j <= p; ++j) w[i + j] = static_cast<uint16_t>(w[i + j] ^ ref_mul(c, g[p - j]));
  }
  return std::vector<uint16_t>(w.end() - static_cast<long>(p), w.end());
}

/// Systematic encoding by long division: message, then m(x) x^2t mod g.
std::vector<uint16_t> ref_encode(const std::vector<uint16_t>& msg, const std::vector<uint32_t>& g) {
  std::vector<uint16_t> w = msg;
  w.resize(msg.size() + g.size() - 1, 0);
  std::vector<uint16_t> rem = ref_mod(w, g);
  std::copy(rem.begin(), rem.end(), w.begin() + static_cast<long>(msg.size()));
  return w;
}

bool ref_is_codeword(const std::vector<uint16_t>& w, int parity) {
  for (int j = 0; j < parity; ++j)
    if (ref_eval(w, ref_pow(2, j)) != 0) return false;
  return true;
}

// ---- Helpers ---------------------------------------------------------------------

uint64_t test_seed(uint64_t fixed) {
  if (const char* s = std::getenv("FABRICVP_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return fixed;
}

/// A generator seeded and announced (the seed is printed and traced).
struct Rng {
  explicit Rng(uint64_t fixed) : seed(test_seed(fixed)), gen(seed) {
    std::printf("[ seed     ] %s: %llu\n", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                static_cast<unsigned long long>(seed));
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(gen() % n); }
  uint16_t symbol() { return static_cast<uint16_t>(gen() & kFecSymbolMax); }
  uint16_t nonzero() { return static_cast<uint16_t>(1 + below(kFecSymbolMax)); }
  /// `count` distinct positions in 0 .. n-1.
  std::vector<int> positions(int n, int count) {
    std::vector<int> out;
    while (static_cast<int>(out.size()) < count) {
      const int p = static_cast<int>(below(static_cast<uint32_t>(n)));
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
    return out;
  }
  uint64_t seed;
  std::mt19937_64 gen;
};

std::vector<uint16_t> random_codeword(const RsCodec& c, Rng& rng) {
  std::vector<uint16_t> msg(static_cast<size_t>(c.k())), cw(static_cast<size_t>(c.n()));
  for (auto& m : msg) m = rng.symbol();
  c.encode(msg.data(), cw.data());
  return cw;
}

const FecCode kCodes[] = {FecCode::kp4, FecCode::kr4};

int distance(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  int d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

}  // namespace

// ---- Field, generator, encoder ----------------------------------------------------

TEST(Fec, ParametersOfKp4AndKr4) {
  RsCodec kp4(FecCode::kp4), kr4(FecCode::kr4), dflt;
  EXPECT_EQ(kp4.n(), 544);
  EXPECT_EQ(kp4.k(), 514);
  EXPECT_EQ(kp4.t(), 15);
  EXPECT_EQ(kp4.parity(), 30);
  EXPECT_EQ(kr4.n(), 528);
  EXPECT_EQ(kr4.k(), 514);
  EXPECT_EQ(kr4.t(), 7);
  EXPECT_EQ(kr4.parity(), 14);
  EXPECT_EQ(dflt.code(), FecCode::kp4);
  FecCode c = FecCode::kp4;
  EXPECT_TRUE(parse_fec_code("kr4", c));
  EXPECT_EQ(c, FecCode::kr4);
  EXPECT_FALSE(parse_fec_code("KP4", c));
  EXPECT_FALSE(parse_fec_code("rs544", c));
  EXPECT_STREQ(fec_code_name(FecCode::kp4), "kp4");
}

TEST(Fec, FieldPolynomialIsPrimitiveAndGeneratorMatchesReference) {
  // a = x has order exactly 1023 under x^10 + x^3 + 1: a^1023 = 1 and a^(1023/q) != 1 for q = 3, 11, 31.
  EXPECT_EQ(ref_pow(2, 1023), 1u);
  for (uint64_t q : {3u, 11u, 31u}) EXPECT_NE(ref_pow(2, 1023 / q), 1u) << q;
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const std::vector<uint32_t> g = ref_generator(c.parity());
    ASSERT_EQ(g.size(), static_cast<size_t>(c.parity() + 1));
    for (int i = 0; i <= c.parity(); ++i) EXPECT_EQ(c.generator()[i], g[i]) << fec_code_name(code) << " g_" << i;
    EXPECT_EQ(c.generator()[c.parity()], 1u);  // monic
    // Roots exactly a^0 .. a^(2t-1) among the first powers.
    std::vector<uint16_t> gw(g.rbegin(), g.rend());
    for (int j = 0; j < c.parity(); ++j) EXPECT_EQ(ref_eval(gw, ref_pow(2, j)), 0u) << j;
    EXPECT_NE(ref_eval(gw, ref_pow(2, c.parity())), 0u);
    EXPECT_NE(ref_eval(gw, ref_pow(2, 1022)), 0u);
  }
}

TEST(Fec, EncodeIsSystematicMatchesLongDivisionAndVanishesAtTheRoots) {
  Rng rng(20261201);
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const std::vector<uint32_t> g = ref_generator(c.parity());
    std::vector<uint16_t> msg(static_cast<size_t>(c.k())), cw(static_cast<size_t>(c.n()));
    // Known answers: zero message -> zero codeword; a unit message symbol -> the row of x^d x^2t mod g.
    c.encode(msg.data(), cw.data());
    EXPECT_TRUE(std::all_of(cw.begin(), cw.end(), [](uint16_t s) { return s == 0; }));
    msg.back() = 1;
    c.encode(msg.data(), cw.data());
    EXPECT_EQ(cw, ref_encode(msg, g));
    for (int i = 0; i < c.parity(); ++i)  // x^2t mod g = g - x^2t: the generator's lower coefficients
      EXPECT_EQ(cw[static_cast<size_t>(c.k() + i)], g[static_cast<size_t>(c.parity() - 1 - i)]) << i;
    for (int trial = 0; trial < 12; ++trial) {
      for (auto& m : msg) m = rng.symbol();
      c.encode(msg.data(), cw.data());
      ASSERT_TRUE(std::equal(msg.begin(), msg.end(), cw.begin())) << "message symbols come first";
      ASSERT_EQ(cw, ref_encode(msg, g)) << fec_code_name(code) << " trial " << trial;
      for (int j = 0; j < c.parity(); ++j) ASSERT_EQ(ref_eval(cw, ref_pow(2, j)), 0u) << "root a^" << j;
      EXPECT_NE(ref_eval(cw, ref_pow(2, c.parity())), 0u);  // a^2t is not a root (almost surely)
      EXPECT_TRUE(c.is_codeword(cw.data()));
      // In place: msg and codeword in one buffer.
      std::vector<uint16_t> buf = msg;
      buf.resize(cw.size());
      c.encode(buf.data(), buf.data());
      ASSERT_EQ(buf, cw);
    }
  }
}

TEST(Fec, SimdDivisionRegisterAndSyndromesMatchReference) {
  Rng rng(7001);
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const std::vector<uint32_t> g = ref_generator(c.parity());
    for (int len : {1, 2, 3, 17, 64, 513, 514, 528, 544}) {
      std::vector<uint16_t> in(static_cast<size_t>(len));
      for (auto& s : in) s = rng.symbol();
      std::vector<uint16_t> fast(static_cast<size_t>(c.parity())), slow(fast.size());
      detail::rs_remainder(code, in.data(), len, fast.data());
      detail::rs_remainder_portable(code, in.data(), len, slow.data());
      std::vector<uint16_t> shifted = in;
      shifted.resize(in.size() + static_cast<size_t>(c.parity()), 0);
      EXPECT_EQ(fast, ref_mod(shifted, g)) << fec_code_name(code) << " len " << len;
      EXPECT_EQ(slow, fast) << fec_code_name(code) << " len " << len;
    }
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<uint16_t> w(static_cast<size_t>(c.n()));
      for (auto& s : w) s = rng.symbol();
      std::vector<uint16_t> s(static_cast<size_t>(c.parity()));
      c.syndromes(w.data(), s.data());
      for (int j = 0; j < c.parity(); ++j) ASSERT_EQ(s[static_cast<size_t>(j)], ref_eval(w, ref_pow(2, j))) << j;
      EXPECT_FALSE(c.is_codeword(w.data()));
    }
  }
}

// ---- Correction ----------------------------------------------------------------------

TEST(Fec, CorrectsEveryPatternOfUpToTErrors) {
  Rng rng(424242);
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const int n = c.n(), t = c.t();
    for (int trial = 0; trial < 1500; ++trial) {
      const std::vector<uint16_t> cw = random_codeword(c, rng);
      std::vector<uint16_t> rx = cw;
      const int e = trial % (t + 1);
      std::vector<int> pos = rng.positions(n, e);
      // Cover the edges: the first symbol, the last message symbol, the last parity symbol.
      if (e >= 3 && trial % 7 == 0) {
        pos.clear();
        for (int p : {0, c.k() - 1, n - 1}) pos.push_back(p);
        for (int p : rng.positions(n, e)) {
          if (static_cast<int>(pos.size()) == e) break;
          if (std::find(pos.begin(), pos.end(), p) == pos.end()) pos.push_back(p);
        }
      }
      ASSERT_EQ(static_cast<int>(pos.size()), e);
      for (int p : pos) rx[static_cast<size_t>(p)] ^= rng.nonzero();
      const DecodeResult r = c.decode(rx.data());
      ASSERT_TRUE(r.ok) << fec_code_name(code) << " trial " << trial << " with " << e << " errors";
      ASSERT_EQ(r.corrected, e);
      ASSERT_EQ(rx, cw) << fec_code_name(code) << " trial " << trial;
      std::sort(pos.begin(), pos.end());
      ASSERT_TRUE(std::equal(pos.begin(), pos.end(), r.positions.begin())) << "positions, trial " << trial;
    }
  }
}

TEST(Fec, WordsWithMoreThanTErrorsAreDetectedOrCountedAsMiscorrections) {
  // A bounded-distance decoder fails silently only when the received word lies
  // within distance t of another codeword. For RS codes McEliece and Swanson
  // (1986) bound that probability per word by about 1/t!; for a word far from
  // every codeword it is the fraction of space the decoding spheres cover,
  // V(n, t) / q^2t (kp4 4.7e-17, kr4 1.8e-6, see docs/fec.md). The test
  // allows the count a Poisson law with the 1/t! mean exceeds with probability
  // < 1e-6; a decoder that skips its consistency checks miscorrects most
  // of these words.
  Rng rng(1234567);
  const int kTrials = 2000;
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const int n = c.n(), t = c.t();
    int detected = 0, miscorrected = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      const int e = t + 1 + trial % 5;
      const std::vector<uint16_t> cw = random_codeword(c, rng);
      std::vector<uint16_t> rx = cw;
      for (int p : rng.positions(n, e)) rx[static_cast<size_t>(p)] ^= rng.nonzero();
      const std::vector<uint16_t> received = rx;
      const DecodeResult r = c.decode(rx.data());
      if (!r.ok) {
        ++detected;
        ASSERT_EQ(r.corrected, 0);
        ASSERT_EQ(rx, received) << "an uncorrectable word must be left unchanged";
        continue;
      }
      // Accepted: it must be a codeword within t of the received word, and cannot be the original.
      ++miscorrected;
      ASSERT_NE(rx, cw);
      ASSERT_LE(r.corrected, t);
      ASSERT_EQ(distance(rx, received), r.corrected);
      ASSERT_TRUE(ref_is_codeword(rx, c.parity()));
    }
    const double lambda = kTrials / std::tgamma(t + 1.0);  // mean count under the 1/t! bound
    int allowed = 0;
    double tail = 1.0 - std::exp(-lambda);  // P(X > 0)
    for (double term = std::exp(-lambda); tail >= 1e-6;) {
      ++allowed;
      term *= lambda / allowed;
      tail -= term;
    }
    std::printf("[ fec      ] %s: %d words with %d..%d errors: %d detected, %d miscorrected (rate %.3g, allowed %d)\n",
                fec_code_name(code), kTrials, t + 1, t + 5, detected, miscorrected,
                static_cast<double>(miscorrected) / kTrials, allowed);
    EXPECT_EQ(detected + miscorrected, kTrials);
    EXPECT_LE(miscorrected, allowed) << fec_code_name(code);
  }
}

TEST(Fec, CorrectsUpTo2tErasures) {
  Rng rng(99);
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const int n = c.n(), p = c.parity();
    for (int trial = 0; trial < 300; ++trial) {
      const std::vector<uint16_t> cw = random_codeword(c, rng);
      std::vector<uint16_t> rx = cw;
      const int f = trial % 3 == 0 ? p : 1 + static_cast<int>(rng.below(static_cast<uint32_t>(p)));
      const std::vector<int> er = rng.positions(n, f);
      std::vector<int> changed;
      for (int q : er) {
        // An erased symbol holds anything, sometimes even the right value.
        const uint16_t v = rng.below(4) == 0 ? cw[static_cast<size_t>(q)] : rng.symbol();
        rx[static_cast<size_t>(q)] = v;
        if (v != cw[static_cast<size_t>(q)]) changed.push_back(q);
      }
      const DecodeResult r = c.decode(rx.data(), er.data(), f);
      ASSERT_TRUE(r.ok) << fec_code_name(code) << " trial " << trial << " with " << f << " erasures";
      ASSERT_EQ(rx, cw);
      ASSERT_EQ(r.corrected, static_cast<int>(changed.size()));
      std::sort(changed.begin(), changed.end());
      ASSERT_TRUE(std::equal(changed.begin(), changed.end(), r.positions.begin()));
    }
  }
}

TEST(Fec, CorrectsErrorsWithErasuresWhenTwiceErrorsPlusErasuresIsAtMost2t) {
  Rng rng(31337);
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const int n = c.n(), p = c.parity();
    for (int trial = 0; trial < 800; ++trial) {
      const std::vector<uint16_t> cw = random_codeword(c, rng);
      std::vector<uint16_t> rx = cw;
      const int e = static_cast<int>(rng.below(static_cast<uint32_t>(p / 2 + 1)));
      const int f_max = p - 2 * e;
      const int f = trial % 4 == 0 ? f_max : static_cast<int>(rng.below(static_cast<uint32_t>(f_max + 1)));
      const std::vector<int> all = rng.positions(n, e + f);
      const std::vector<int> err(all.begin(), all.begin() + e), er(all.begin() + e, all.end());
      int changed = 0;
      for (int q : err) {
        rx[static_cast<size_t>(q)] ^= rng.nonzero();
        ++changed;
      }
      for (int q : er) {
        const uint16_t v = rng.symbol();
        changed += v != rx[static_cast<size_t>(q)];
        rx[static_cast<size_t>(q)] = v;
      }
      const DecodeResult r = c.decode(rx.data(), er.data(), f);
      ASSERT_TRUE(r.ok) << fec_code_name(code) << " trial " << trial << ": " << e << " errors, " << f << " erasures";
      ASSERT_EQ(rx, cw) << fec_code_name(code) << " trial " << trial;
      ASSERT_EQ(r.corrected, changed);
    }
  }
}

TEST(Fec, TooManyErasuresAndBadErasureLists) {
  Rng rng(5);
  RsCodec c(FecCode::kr4);
  const std::vector<uint16_t> cw = random_codeword(c, rng);
  std::vector<uint16_t> rx = cw;
  const std::vector<int> er = rng.positions(c.n(), c.parity() + 1);
  rx[static_cast<size_t>(er[0])] ^= 1;
  const DecodeResult r = c.decode(rx.data(), er.data(), static_cast<int>(er.size()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(rx[static_cast<size_t>(er[0])], cw[static_cast<size_t>(er[0])] ^ 1);
  const int out_of_range[] = {3, 528};
  EXPECT_THROW(c.decode(rx.data(), out_of_range, 2), std::invalid_argument);
  const int negative[] = {-1};
  EXPECT_THROW(c.decode(rx.data(), negative, 1), std::invalid_argument);
  const int repeated[] = {4, 9, 4};
  EXPECT_THROW(c.decode(rx.data(), repeated, 3), std::invalid_argument);
  // Erasures on a word that is already a codeword: nothing to change.
  rx = cw;
  const DecodeResult ok = c.decode(rx.data(), er.data(), 5);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.corrected, 0);
  EXPECT_EQ(rx, cw);
}

TEST(Fec, LocatorRootsInTheShortenedAwayPositionsAreUncorrectable) {
  // The codes are shortened from length 1023: positions n .. 1022 (degrees
  // x^n .. x^1022) do not exist. Adding Y x^d mod g(x) for such a degree d
  // gives a word whose syndromes are those of one error at the missing
  // position d (plus any real errors): the locator then has a root outside
  // the word, and the decoder must refuse rather than correct elsewhere.
  Rng rng(8080);
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const int n = c.n(), t = c.t(), p = c.parity();
    const std::vector<uint32_t> g = ref_generator(p);
    for (int trial = 0; trial < 40; ++trial) {
      const std::vector<uint16_t> cw = random_codeword(c, rng);
      const int d = n + static_cast<int>(rng.below(static_cast<uint32_t>(1023 - n)));
      std::vector<uint16_t> ghost(static_cast<size_t>(d + 1), 0);
      ghost[0] = rng.nonzero();  // Y x^d, highest degree first
      const std::vector<uint16_t> rem = ref_mod(ghost, g);
      // The n-symbol word holding the remainder has the syndromes of Y x^d.
      std::vector<uint16_t> remw(static_cast<size_t>(n), 0);
      std::copy(rem.begin(), rem.end(), remw.end() - p);
      for (int j = 0; j < p; ++j)
        ASSERT_EQ(ref_eval(remw, ref_pow(2, j)), ref_mul(ghost[0], ref_pow(2, uint64_t(j) * d))) << j;
      std::vector<uint16_t> rx = cw;
      for (int i = 0; i < n; ++i) rx[static_cast<size_t>(i)] ^= remw[static_cast<size_t>(i)];
      const int real = trial % 2 == 0 ? 0 : 1 + static_cast<int>(rng.below(static_cast<uint32_t>(t - 1)));
      for (int q : rng.positions(n - p, real)) rx[static_cast<size_t>(q)] ^= rng.nonzero();  // in the message part
      const std::vector<uint16_t> received = rx;
      const DecodeResult r = c.decode(rx.data());
      EXPECT_FALSE(r.ok) << fec_code_name(code) << " ghost degree " << d << ", " << real << " real errors";
      EXPECT_EQ(rx, received);
    }
  }
}

// ---- Bit packing ------------------------------------------------------------------------

TEST(Fec, PackBitsIsMsbFirstWithinEachTenBitSymbol) {
  const uint8_t a[] = {0x80, 0x40};
  uint16_t s[2] = {7, 7};
  pack_bits(a, 2, s, 2);
  EXPECT_EQ(s[0], 0x201);                              // bits 1000000001
  EXPECT_EQ(s[1], 0x000);                              // 000000 + 4 zero pad bits
  const uint8_t b[] = {0xff, 0xc0, 0x12, 0x34, 0x56};  // 11111111 11 | 000000 0001 | 0010 001101 | 000101 0110
  uint16_t u[4];
  pack_bits(b, 5, u, 4);
  EXPECT_EQ(u[0], 0x3ff);
  EXPECT_EQ(u[1], 0x001);
  EXPECT_EQ(u[2], 0x08d);
  EXPECT_EQ(u[3], 0x056);
  uint8_t back[5];
  unpack_bits(u, 4, back, 5);
  EXPECT_TRUE(std::equal(b, b + 5, back));
  EXPECT_EQ(fec_symbols_for_bytes(320), 256u);
  EXPECT_EQ(fec_symbols_for_bytes(1), 1u);
  EXPECT_EQ(fec_symbols_for_bytes(5), 4u);
  EXPECT_EQ(fec_symbols_for_bytes(6), 5u);
  EXPECT_THROW(pack_bits(b, 5, u, 3), std::invalid_argument);
  EXPECT_THROW(unpack_bits(u, 3, back, 5), std::invalid_argument);
  // Bits above bit 9 of a symbol are ignored.
  const uint16_t high[] = {0xfc01, 0x0000};
  uint8_t hb[2];
  unpack_bits(high, 2, hb, 2);
  EXPECT_EQ(hb[0], 0x00);
  EXPECT_EQ(hb[1], 0x40);
}

TEST(Fec, PackRoundTripsAndTwoVectorsRideOneCodeword) {
  Rng rng(2718);
  for (size_t nbytes : {size_t(1), size_t(2), size_t(3), size_t(4), size_t(5), size_t(9), size_t(320), size_t(641)}) {
    std::vector<uint8_t> bytes(nbytes), back(nbytes);
    for (auto& x : bytes) x = static_cast<uint8_t>(rng.gen());
    std::vector<uint16_t> sym(fec_symbols_for_bytes(nbytes) + 3, 0xffff);
    pack_bits(bytes.data(), nbytes, sym.data(), sym.size());
    for (uint16_t s : sym) ASSERT_LE(s, kFecSymbolMax);
    for (size_t i = fec_symbols_for_bytes(nbytes); i < sym.size(); ++i) ASSERT_EQ(sym[i], 0) << "padding";
    unpack_bits(sym.data(), sym.size(), back.data(), nbytes);
    ASSERT_EQ(back, bytes) << nbytes;
  }
  // Two 320-byte vectors = 512 symbols in the 514-symbol message, through 15 errors.
  RsCodec c(FecCode::kp4);
  std::vector<uint8_t> payload(640), out(640);
  for (auto& x : payload) x = static_cast<uint8_t>(rng.gen());
  std::vector<uint16_t> msg(static_cast<size_t>(c.k())), cw(static_cast<size_t>(c.n()));
  pack_bits(payload.data(), payload.size(), msg.data(), msg.size());
  c.encode(msg.data(), cw.data());
  for (int p : rng.positions(c.n(), c.t())) cw[static_cast<size_t>(p)] ^= rng.nonzero();
  ASSERT_TRUE(c.decode(cw.data()).ok);
  unpack_bits(cw.data(), static_cast<size_t>(c.k()), out.data(), out.size());
  EXPECT_EQ(out, payload);
}

// ---- Command line --------------------------------------------------------------------------

namespace {

struct CliRun {
  int code;
  std::string out;  // stdout
  std::string err;  // stderr
};

class FecDir {
 public:
  FecDir() : path(fs::temp_directory_path() / ("fabricvp-fec-" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  ~FecDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
  /// Runs `fabricvp <args> < stdin_file`, capturing stdout and stderr separately.
  CliRun fabricvp(const std::string& args, const std::string& stdin_text) const {
    const std::string in = file("stdin.txt", stdin_text);
    const std::string err = (path / "stderr.txt").string();
    const fabricvp::test::Result r =
        fabricvp::test::shell(std::string(FABRICVP_BIN) + " " + args + " < " + in + " 2> " + err);
    std::ifstream ef(err);
    std::stringstream es;
    es << ef.rdbuf();
    return {r.code, r.out, es.str()};
  }
  fs::path path;
};

std::string join(const std::vector<uint16_t>& v, size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

std::vector<uint16_t> parse_line(const std::string& line) {
  std::vector<uint16_t> v;
  std::istringstream is(line);
  unsigned x;
  while (is >> x) v.push_back(static_cast<uint16_t>(x));
  return v;
}

}  // namespace

TEST(FecCli, EncodeFlipSymbolsDecodeRoundTrip) {
  Rng rng(77);
  FecDir d;
  for (FecCode code : kCodes) {
    RsCodec c(code);
    const std::string name = fec_code_name(code);
    std::vector<uint16_t> msg(static_cast<size_t>(c.k()));
    for (auto& m : msg) m = rng.symbol();
    // Any white space between the symbols.
    std::string text = join(msg, msg.size());
    std::replace(text.begin(), text.begin() + 40, ' ', '\n');
    CliRun enc = d.fabricvp("fec encode --code " + name, text + "\n");
    ASSERT_EQ(enc.code, 0) << enc.err;
    ASSERT_EQ(std::count(enc.out.begin(), enc.out.end(), '\n'), 1) << "one line";
    std::vector<uint16_t> cw = parse_line(enc.out);
    std::vector<uint16_t> expect(static_cast<size_t>(c.n()));
    c.encode(msg.data(), expect.data());
    ASSERT_EQ(cw, expect);
    ASSERT_EQ(enc.out, join(expect, expect.size()) + "\n") << "single spaces";

    std::vector<uint16_t> rx = cw;
    for (int p : rng.positions(c.n(), c.t())) rx[static_cast<size_t>(p)] ^= rng.nonzero();
    CliRun dec = d.fabricvp("fec decode --code " + name, join(rx, rx.size()));
    ASSERT_EQ(dec.code, 0) << dec.err;
    EXPECT_EQ(dec.out, join(msg, msg.size()) + "\n" + std::to_string(c.t()) + "\n");

    // Uncorrectable: exit 3, nothing on stdout.
    std::vector<uint16_t> bad = cw;
    for (int p : rng.positions(c.n(), c.t() + 3)) bad[static_cast<size_t>(p)] ^= rng.nonzero();
    std::vector<uint16_t> probe = bad;
    ASSERT_FALSE(c.decode(probe.data()).ok) << "the library says uncorrectable for this word";
    CliRun unc = d.fabricvp("fec decode --code " + name, join(bad, bad.size()));
    EXPECT_EQ(unc.code, 3) << unc.out << unc.err;
    EXPECT_TRUE(unc.out.empty());
    EXPECT_NE(unc.err.find("uncorrectable"), std::string::npos) << unc.err;
  }
}

TEST(FecCli, ErasuresOptionAndDefaultCode) {
  Rng rng(78);
  FecDir d;
  RsCodec c(FecCode::kp4);
  std::vector<uint16_t> msg(static_cast<size_t>(c.k()));
  for (auto& m : msg) m = rng.symbol();
  std::vector<uint16_t> cw(static_cast<size_t>(c.n()));
  c.encode(msg.data(), cw.data());
  // 20 erasures + 5 errors = 30 = 2t: beyond t errors alone, within the erasure budget.
  const std::vector<int> all = rng.positions(c.n(), 25);
  std::string list;
  for (int i = 0; i < 20; ++i) {
    cw[static_cast<size_t>(all[i])] = static_cast<uint16_t>(cw[static_cast<size_t>(all[i])] ^ (1 + i));
    list += (i ? "," : "") + std::to_string(all[i]);
  }
  for (int i = 20; i < 25; ++i) cw[static_cast<size_t>(all[i])] ^= rng.nonzero();
  CliRun dec = d.fabricvp("fec decode --erasures " + list, join(cw, cw.size()));  // kp4 is the default
  ASSERT_EQ(dec.code, 0) << dec.err;
  EXPECT_EQ(dec.out, join(msg, msg.size()) + "\n25\n");
  CliRun without = d.fabricvp("fec decode", join(cw, cw.size()));
  EXPECT_EQ(without.code, 3) << "25 errors without the erasure positions";
}

TEST(FecCli, BadInputIsNamed) {
  FecDir d;
  std::vector<uint16_t> msg(514, 5);
  std::string text = join(msg, msg.size());
  // A value out of range, named by its position (0-based) and value.
  std::string t2;
  for (size_t i = 0; i < msg.size(); ++i) t2 += (i ? " " : "") + std::string(i == 37 ? "1500" : "5");
  CliRun r = d.fabricvp("fec encode --code kp4", t2);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("symbol 37 value 1500 out of range 0..1023"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  // Wrong counts.
  r = d.fabricvp("fec encode --code kp4", text + " 5");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("expected 514 message symbols on stdin, got 515"), std::string::npos) << r.err;
  r = d.fabricvp("fec decode --code kr4", text);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("expected 528 codeword symbols on stdin, got 514"), std::string::npos) << r.err;
  // Not a number.
  r = d.fabricvp("fec encode --code kr4", "1 2 x3");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("symbol 2 'x3' is not a decimal integer"), std::string::npos) << r.err;
  // Bad options.
  r = d.fabricvp("fec encode --code kp5", text);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--code 'kp5'"), std::string::npos) << r.err;
  r = d.fabricvp("fec transcode", text);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown mode 'transcode'"), std::string::npos) << r.err;
  std::vector<uint16_t> cw(544, 0);
  r = d.fabricvp("fec decode --erasures 3,544", join(cw, cw.size()));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("position 544 out of range 0..543"), std::string::npos) << r.err;
  r = d.fabricvp("fec decode --erasures 3,3", join(cw, cw.size()));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("position 3 given twice"), std::string::npos) << r.err;
  r = d.fabricvp("fec decode --erasures 3,a", join(cw, cw.size()));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("'a' is not a symbol position"), std::string::npos) << r.err;
  // The all-zero word is a codeword; 31 erasures exceed 2t.
  r = d.fabricvp("fec decode", join(cw, cw.size()));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, join(cw, 514) + "\n0\n");
  std::string many;
  for (int i = 0; i < 31; ++i) many += (i ? "," : "") + std::to_string(i);
  r = d.fabricvp("fec decode --erasures " + many, join(cw, cw.size()));
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("31 erasures"), std::string::npos) << r.err;
}
