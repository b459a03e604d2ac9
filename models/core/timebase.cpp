#include "models/core/timebase.h"

#include <cmath>
#include <stdexcept>

namespace fabricvp::core {

namespace {
unsigned __int128 gcd128(unsigned __int128 a, unsigned __int128 b) {
  while (b) {
    unsigned __int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}
}  // namespace

CeilRatio::CeilRatio(unsigned __int128 num, unsigned __int128 den) {
  if (den == 0) throw std::invalid_argument("zero denominator");
  unsigned __int128 g = gcd128(num, den);
  num /= g;
  den /= g;
  m_num128 = num;
  m_den128 = den;
  const unsigned __int128 max64 = UINT64_MAX;
  if (num <= max64 && den <= max64 && (den == 0 || num <= max64 / den)) {
    // n = q*den + r: q*num <= n*num/den and r*num < den*num both fit as long as
    // n * num / den fits; bound n so the result fits in 64 bits.
    m_num = static_cast<uint64_t>(num);
    m_den = static_cast<uint64_t>(den);
    m_fast_limit = num <= den ? UINT64_MAX - m_den : static_cast<uint64_t>((max64 / num - 1) * den);
  }
}

Clock::Clock(double mhz) {
  if (!(mhz > 0.0) || mhz > 1e6) throw std::invalid_argument("clock frequency must be in (0, 1e6] MHz");
  m_mhz_milli = static_cast<uint64_t>(std::llround(mhz * 1e9));
  m_ps = CeilRatio(kScale, m_mhz_milli);
}

uint64_t Clock::cycle_at_or_after(uint64_t t) const {
  if (t <= m_phase_ps) return 0;
  const uint64_t d = t - m_phase_ps;
  // ceil(c num / den) >= d  <=>  c num > (d - 1) den  <=>  c = floor((d - 1) den / num) + 1: exact, one
  // 64-bit division when it cannot overflow.
  uint64_t c;
  if (m_ps.floor_inverse(d - 1, c)) return c + 1;
  c = static_cast<uint64_t>(static_cast<unsigned __int128>(d) * m_mhz_milli / kScale);
  while (ps(c) < t) ++c;
  while (c > 0 && ps(c - 1) >= t) --c;
  return c;
}

uint64_t Clock::cycle_at_or_before(uint64_t t) const {
  uint64_t c = cycle_at_or_after(t);
  if (ps(c) > t && c > 0) --c;
  return c;
}

SerialRate::SerialRate(uint64_t bits_per_packet, uint32_t lanes, double lane_gbps) : m_bits(bits_per_packet) {
  double kbps = static_cast<double>(lanes) * lane_gbps * 1e6;
  if (!(kbps >= 1.0)) throw std::invalid_argument("link rate must be positive");
  m_rate_kbps = static_cast<uint64_t>(std::llround(kbps));
  m_ps = CeilRatio(static_cast<unsigned __int128>(m_bits) * 1000000000ULL, m_rate_kbps);
}

double SerialRate::payload_GBps(uint32_t payload_bytes) const {
  // packets/s = rate_bps / bits; bytes/s = packets/s * payload
  return static_cast<double>(m_rate_kbps) * 1e3 / static_cast<double>(m_bits) * payload_bytes / 1e9;
}

}  // namespace fabricvp::core
