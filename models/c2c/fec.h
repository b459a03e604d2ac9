// Reed-Solomon forward error correction of the C2C links (IEEE 802.3 RS-FEC).
//
// Systematic RS codes over GF(2^10), field polynomial x^10 + x^3 + 1 (alpha = x
// is primitive), generator g(x) = (x - a^0)(x - a^1)...(x - a^(2t-1)):
//   kp4  RS(544,514), t = 15  (802.3 "KP4", the default)
//   kr4  RS(528,514), t = 7   (802.3 "KR4")
// Both are shortened from the full length 1023.
//
// Symbol order. A word of n symbols is the polynomial
//   c(x) = w[0] x^(n-1) + w[1] x^(n-2) + ... + w[n-1]
// (the first symbol is the highest-degree coefficient). The codeword is the k
// message symbols followed by the 2t parity symbols:
//   c(x) = m(x) x^2t + (m(x) x^2t mod g(x)),
// so every codeword evaluates to 0 at a^0 .. a^(2t-1).
//
// Decoding corrects e errors and f erasures whenever 2e + f <= 2t (errors and
// erasures: syndromes, Forney syndromes, Berlekamp-Massey, Chien search,
// Forney's formula). A word is declared uncorrectable, and left unchanged, when
// the locator's degree exceeds what the parity can correct, when the locator
// does not have exactly as many distinct roots among the n positions of the
// shortened code as its degree (a root at a position >= n, i.e. in the
// shortened-away part, counts as missing), when an error root falls on an
// erased position, or when Forney gives a zero error value at an error
// position or a zero denominator. An accepted result is always a codeword
// within the correction radius of the received word; with more than t errors
// (2e + f > 2t) the decoder can still land on another codeword (miscorrection:
// measured 1.8e-6 per word with t+1..t+5 errors for kr4, theory 4.7e-17 for
// kp4; docs/fec.md).
//
// Speed: log/antilog and multiply-by-constant tables shared by every codec
// (built once), a workspace inside the codec object (no allocation per
// codeword), and an immediate return for a codeword (zero remainder). One codec
// object decodes one word at a time (decode() uses its workspace); encode() is
// const and may run concurrently.
//
// Symbols are 10-bit values held in uint16_t; callers pass values < 1024 (bits
// above are masked off before any table lookup, so a larger value is memory
// safe, but its result is unspecified).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fabricvp::c2c {

enum class FecCode { kp4, kr4 };

namespace detail {
struct RsTables;  // per-code constant tables (generator, encoder rows), shared by every codec of the code
/// in(x) x^2t mod g(x) by the plain shift-register loop (no SIMD): the reference
/// the tests hold the SIMD division register to, and the path on targets without SSE2.
void rs_remainder_portable(FecCode code, const uint16_t* in, int len, uint16_t* out);
/// The same with the codec's fast path.
void rs_remainder(FecCode code, const uint16_t* in, int len, uint16_t* out);
}  // namespace detail

/// "kp4" / "kr4".
const char* fec_code_name(FecCode code);
/// Parses "kp4" / "kr4" (lower case); returns false for anything else.
bool parse_fec_code(const std::string& text, FecCode& code);

constexpr int kFecSymbolBits = 10;
constexpr uint16_t kFecSymbolMax = 1023;  ///< largest symbol value
constexpr int kFecMaxParity = 30;         ///< 2t of the strongest code (kp4)
constexpr int kFecMaxN = 544;             ///< codeword length of the longest code (kp4)

/// Sizes of a code without building a codec (n, k and t symbols).
struct FecSizes {
  int n, k, t;
};
constexpr FecSizes fec_sizes(FecCode code) {
  return code == FecCode::kp4 ? FecSizes{544, 514, (544 - 514) / 2} : FecSizes{528, 514, (528 - 514) / 2};
}

struct DecodeResult {
  bool ok = true;     ///< false: uncorrectable; the word was left unchanged
  int corrected = 0;  ///< symbols whose value the decoder changed (an erasure that held the right value is not counted)
  /// Indices (0 = first symbol of the word) of the changed symbols, ascending; `corrected` entries are valid.
  std::array<uint16_t, kFecMaxParity> positions{};
};

class RsCodec {
 public:
  explicit RsCodec(FecCode code = FecCode::kp4);

  FecCode code() const { return m_code; }
  int n() const { return m_n; }           ///< codeword symbols
  int k() const { return m_k; }           ///< message symbols
  int t() const { return m_t; }           ///< symbol errors corrected without erasures
  int parity() const { return 2 * m_t; }  ///< parity symbols, n - k

  /// Generator polynomial coefficients g_0 .. g_2t (ascending powers; g_2t = 1).
  const uint16_t* generator() const;

  /// codeword[0 .. k-1] = msg[0 .. k-1], codeword[k .. n-1] = parity. msg and
  /// codeword may be the same buffer.
  void encode(const uint16_t* msg, uint16_t* codeword) const;

  /// Syndromes s[j] = c(a^j), j = 0 .. 2t-1, of a received word. All zero iff
  /// the word is a codeword.
  void syndromes(const uint16_t* word, uint16_t* s) const;
  /// True if the word is a codeword (all syndromes zero).
  bool is_codeword(const uint16_t* word) const;

  /// Corrects `codeword` (n symbols) in place. `erasures` lists the indices
  /// (0 .. n-1, distinct) of symbols known to be unreliable, whatever value
  /// they hold. More than 2t erasures make the word uncorrectable. Throws
  /// std::invalid_argument for an erasure index out of range or repeated.
  DecodeResult decode(uint16_t* codeword, const int* erasures = nullptr, int n_erasures = 0);

 private:
  bool chien(int degree);  // fills m_roots with the positions where m_lambda vanishes; true if degree distinct roots

  FecCode m_code;
  int m_n, m_k, m_t;
  const detail::RsTables* m_tab;

  // Decoder workspace (no allocation per codeword).
  std::array<uint16_t, kFecMaxParity> m_synd{};          // S_j
  std::array<uint16_t, kFecMaxParity + 1> m_gamma{};     // erasure locator
  std::array<uint16_t, kFecMaxParity + 3> m_lambda{};    // error locator (Berlekamp-Massey)
  std::array<uint16_t, kFecMaxParity + 3> m_prev_log{};  // BM: locator before the last length change, as logs
  std::array<int, kFecMaxParity> m_roots{};              // error positions found by the Chien search
  std::array<uint16_t, kFecMaxN + 16> m_eval{};          // Chien search: locator value at every position
};

// ---- Payload bytes <-> 10-bit symbols ------------------------------------
//
// The bytes are one bit stream, most significant bit of each byte first; each
// symbol takes the next 10 bits of that stream, the first of them as its most
// significant bit (bit 9). Example: bytes 80 40 -> bits 1000000001 000000...
// -> symbols 0x201, 0x000. One 320-byte vector is exactly 256 symbols.

/// Symbols needed to carry `nbytes` bytes: ceil(8 * nbytes / 10).
constexpr size_t fec_symbols_for_bytes(size_t nbytes) { return (nbytes * 8 + kFecSymbolBits - 1) / kFecSymbolBits; }

/// Packs `nbytes` bytes into `nsymbols` 10-bit symbols; the bits after the
/// payload are zero. Throws std::invalid_argument if 10 * nsymbols < 8 * nbytes.
void pack_bits(const uint8_t* bytes, size_t nbytes, uint16_t* symbols, size_t nsymbols);
/// The inverse: the first 8 * nbytes bits of the symbols' stream (bits above
/// bit 9 of a symbol are ignored). Throws std::invalid_argument if
/// 10 * nsymbols < 8 * nbytes.
void unpack_bits(const uint16_t* symbols, size_t nsymbols, uint8_t* bytes, size_t nbytes);

}  // namespace fabricvp::c2c
