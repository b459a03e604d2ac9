#include "models/c2c/phy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "models/core/context.h"

namespace fabricvp::c2c {

namespace {
constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
}  // namespace

Phy::Phy(const sc_core::sc_module_name& nm)
    : core::Module(nm, "c2c.phy"),
      ber(this, "ber", 0.0, "1/bit", "independent bit-error rate on every link (added to each link's own ber)", 0.0,
          0.5),
      burst_rate(this, "burst_rate", 0.0, "1/bit",
                 "error bursts starting per bit on every link (added to each link's own burst_rate)", 0.0, 0.5),
      burst_length_mean(this, "burst_length_mean", 8.0, "bits",
                        "mean length of an error burst on one lane (geometric; first and last bit flipped)", 1.0,
                        1000.0) {}

FecLane::FecLane(const Setup& s)
    : m_codec(s.code),
      m_lanes(s.lanes),
      m_packet_bits(s.packet_bytes * 8),
      m_kbits(static_cast<uint32_t>(m_codec.k()) * kFecSymbolBits),
      m_nbits(static_cast<uint32_t>(m_codec.n()) * kFecSymbolBits),
      m_state(s.seed) {
  if (s.ber > 0) m_inv_ber = 1.0 / std::log1p(-s.ber);
  if (s.burst_rate > 0) m_inv_burst = 1.0 / std::log1p(-s.burst_rate);
  m_burst_p = 1.0 / std::max(1.0, s.burst_length_mean);
  if (m_inv_ber != 0) m_next_bit = skip(m_inv_ber);
  if (m_inv_burst != 0) m_next_burst = skip(m_inv_burst);
  m_flips.reserve(64);
}

uint64_t FecLane::codewords_for(uint64_t count) const { return (count * m_packet_bits + m_kbits - 1) / m_kbits; }

uint64_t FecLane::draw() {
  uint64_t r = core::splitmix64(m_state);
  m_state += kGamma;
  return r;
}

double FecLane::uniform() {  // (0, 1]
  return static_cast<double>((draw() >> 11) + 1) * (1.0 / 9007199254740992.0);
}

uint64_t FecLane::skip(double inv_log) {  // error-free bits before the next error: geometric
  double k = std::floor(std::log(uniform()) * inv_log);
  return k >= 1e18 ? UINT64_MAX / 2 : static_cast<uint64_t>(k);
}

bool FecLane::next_codeword_has_errors() {
  const uint64_t base = m_cw * m_nbits, end = base + m_nbits;
  ++m_cw;
  if (m_next_bit >= end && m_next_burst >= end && m_forced.empty()) return false;
  m_flips.clear();
  m_flips.swap(m_forced);
  while (m_next_bit < end) {
    m_flips.push_back(static_cast<uint32_t>(m_next_bit - base));
    m_next_bit += 1 + skip(m_inv_ber);
  }
  const uint32_t n = static_cast<uint32_t>(m_codec.n());
  while (m_next_burst < end) {
    // The burst starts at this bit and runs along its symbol's lane (symbols
    // are striped over the lanes); it ends at the codeword's end.
    const uint32_t start = static_cast<uint32_t>(m_next_burst - base);
    const uint32_t sym0 = start / kFecSymbolBits, lane = sym0 % m_lanes;
    const uint64_t lane_bit0 = static_cast<uint64_t>(sym0 / m_lanes) * kFecSymbolBits + start % kFecSymbolBits;
    uint64_t len = 1 + static_cast<uint64_t>(std::floor(std::log(uniform()) / std::log1p(-m_burst_p)));
    len = std::min<uint64_t>(len, m_nbits);
    for (uint64_t i = 0; i < len; ++i) {
      const uint64_t q = lane_bit0 + i;
      const uint64_t sym = (q / kFecSymbolBits) * m_lanes + lane;
      if (sym >= n) break;
      if (i == 0 || i + 1 == len || (draw() & 1))
        m_flips.push_back(static_cast<uint32_t>(sym * kFecSymbolBits + q % kFecSymbolBits));
    }
    m_next_burst += 1 + skip(m_inv_burst);
  }
  // A bit flipped twice is not flipped.
  std::sort(m_flips.begin(), m_flips.end());
  size_t w = 0;
  for (size_t i = 0; i < m_flips.size();) {
    if (i + 1 < m_flips.size() && m_flips[i] == m_flips[i + 1]) {
      i += 2;
    } else {
      m_flips[w++] = m_flips[i++];
    }
  }
  m_flips.resize(w);
  return !m_flips.empty();
}

FecLane::Outcome FecLane::decode(const std::vector<const uint8_t*>& wire, uint64_t bit0,
                                 std::vector<uint8_t>& received) {
  const int k = m_codec.k(), n = m_codec.n();
  const uint64_t avail = static_cast<uint64_t>(wire.size()) * m_packet_bits;
  auto bit_at = [&](uint64_t pos) -> uint32_t {  // pos from the first packet's first bit
    if (pos >= avail) return 0;                  // idle fill after the burst
    const uint8_t* p = wire[pos / m_packet_bits];
    const uint64_t in = pos % m_packet_bits;
    return (p[in / 8] >> (7 - in % 8)) & 1u;
  };
  for (int s = 0; s < k; ++s) {
    uint32_t v = 0;
    const uint64_t at = bit0 + static_cast<uint64_t>(s) * kFecSymbolBits;
    for (int b = 0; b < kFecSymbolBits; ++b) v = (v << 1) | bit_at(at + b);
    m_sent[s] = static_cast<uint16_t>(v);
  }
  m_codec.encode(m_sent.data(), m_sent.data());
  std::copy(m_sent.begin(), m_sent.begin() + n, m_word.begin());
  Outcome o;
  o.bit_errors = static_cast<uint32_t>(m_flips.size());
  uint32_t last_sym = UINT32_MAX;
  for (uint32_t f : m_flips) {
    const uint32_t sym = f / kFecSymbolBits;
    m_word[sym] ^= static_cast<uint16_t>(1u << (kFecSymbolBits - 1 - f % kFecSymbolBits));
    if (sym != last_sym) ++o.symbol_errors;
    last_sym = sym;
  }
  const DecodeResult r = m_codec.decode(m_word.data());
  if (!r.ok) {
    o.kind = Outcome::uncorrectable;
    return o;
  }
  if (std::equal(m_word.begin(), m_word.begin() + n, m_sent.begin())) {
    o.kind = Outcome::corrected;
    o.corrected_symbols = static_cast<uint32_t>(r.corrected);
    return o;
  }
  // Miscorrection: deliver the decoder's (wrong) message bits.
  o.kind = Outcome::miscorrected;
  const size_t pbytes = m_packet_bits / 8;
  received.resize(wire.size() * pbytes);
  for (size_t p = 0; p < wire.size(); ++p) std::memcpy(received.data() + p * pbytes, wire[p], pbytes);
  for (int s = 0; s < k; ++s)
    for (int b = 0; b < kFecSymbolBits; ++b) {
      const uint64_t pos = bit0 + static_cast<uint64_t>(s) * kFecSymbolBits + b;
      if (pos >= avail) break;
      const uint8_t bit = static_cast<uint8_t>((m_word[s] >> (kFecSymbolBits - 1 - b)) & 1u);
      uint8_t& byte = received[(pos / m_packet_bits) * pbytes + (pos % m_packet_bits) / 8];
      const uint8_t mask = static_cast<uint8_t>(0x80u >> (pos % 8));
      byte = static_cast<uint8_t>(bit ? (byte | mask) : (byte & ~mask));
    }
  return o;
}

}  // namespace fabricvp::c2c
