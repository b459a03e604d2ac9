// Exact time arithmetic: clock cycles <-> picoseconds, and packet serialization.
//
// SystemC runs with a 1 ps resolution. A 900 MHz cycle is 1111.1... ps, so cycle
// edges are placed at ps(c) = ceil(c * 1e12 / f): never more than 1 ps early or
// late, and never accumulating error. Serialization of n packets of B bits on a
// link of rate R takes ser(n) = ceil(n * B / R) ps, so packet i of a burst ends at
// start + ser(i + 1) exactly, whatever the rate.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>

namespace fabricvp::core {

/// ceil(n * num / den) for a fixed fraction, exact for every n. The fraction is
/// kept in lowest terms so the common cases (900 MHz: 10000/9 ps per cycle,
/// 100 Gb/s: 26240/1 ps per packet) need only 64-bit arithmetic.
class CeilRatio {
 public:
  CeilRatio() = default;
  CeilRatio(unsigned __int128 num, unsigned __int128 den);
  /// The smallest n > 0 for which n * num / den is whole (den in lowest terms).
  uint64_t whole_step() const { return static_cast<uint64_t>(m_den128); }
  /// floor(x * den / num) in 64-bit arithmetic when it cannot overflow
  /// (false otherwise): an inverse within one step of exact.
  bool floor_inverse(uint64_t x, uint64_t& out) const {
    if (m_fast_limit == 0 || m_num == 0 || x > UINT64_MAX / m_den) return false;
    out = x * m_den / m_num;
    return true;
  }
  /// ceil(i * num / den) for i = 0, 1, 2, ... in turn, without dividing
  /// (the bursts' per-packet times).
  class Steps {
   public:
    explicit Steps(const CeilRatio& r)
        : m_r(&r),
          m_fast(r.m_fast_limit != 0),
          m_qstep(m_fast ? r.m_num / r.m_den : 0),
          m_rstep(m_fast ? r.m_num % r.m_den : 0),
          m_den(r.m_den) {}
    uint64_t value() const { return m_fast ? m_q + (m_rem != 0) : (*m_r)(m_i); }
    void next() {
      ++m_i;
      m_q += m_qstep;
      m_rem += m_rstep;
      if (m_rem >= m_den) m_rem -= m_den, ++m_q;
      if (m_i > m_r->m_fast_limit) m_fast = false;  // beyond the 64-bit range: exact division from here
    }

   private:
    const CeilRatio* m_r;
    bool m_fast;
    uint64_t m_qstep, m_rstep, m_den, m_q = 0, m_rem = 0, m_i = 0;
  };
  uint64_t operator()(uint64_t n) const {
    if (n <= m_fast_limit) {
      uint64_t q = n / m_den, r = n % m_den;
      return q * m_num + (r * m_num + m_den - 1) / m_den;
    }
    unsigned __int128 x = static_cast<unsigned __int128>(n) * m_num128;
    return static_cast<uint64_t>((x + m_den128 - 1) / m_den128);
  }

 private:
  uint64_t m_num = 1, m_den = 1, m_fast_limit = 0;
  unsigned __int128 m_num128 = 1, m_den128 = 1;
};

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
/// The end of simulated time for the models: 2^62 ps (53 days). A model whose
/// next event would fall later (a program of NOPs adding up past it) stops
/// with an error instead of letting a time in ps wrap past 2^64.
constexpr uint64_t kEndOfTime_ps = uint64_t{1} << 62;

/// A clock of fixed frequency. Frequencies are held in milli-hertz so that
/// every practical setting (900 MHz, 1.25 GHz, ...) is represented exactly.
class Clock {
 public:
  Clock() = default;
  explicit Clock(double mhz);
  /// Time of rising edge `cycle` in ps (cycle 0 is at `phase_ps`).
  uint64_t ps(uint64_t cycle) const { return m_phase_ps + m_ps(cycle); }
  /// First cycle whose edge is at or after t.
  uint64_t cycle_at_or_after(uint64_t t) const;
  /// Last cycle whose edge is at or before t (t must be >= phase).
  uint64_t cycle_at_or_before(uint64_t t) const;
  double mhz() const { return static_cast<double>(m_mhz_milli) / 1e9; }
  /// The fewest cycles that last a whole number of ps (900 MHz: 9, 10,000 ps):
  /// a period of a multiple of it shifts every edge by the same ps.
  uint64_t whole_ps_cycles() const { return m_ps.whole_step(); }
  /// Duration of n cycles starting at cycle c, in ps.
  uint64_t span_ps(uint64_t c, uint64_t n) const { return ps(c + n) - ps(c); }

 private:
  // ps(c) = ceil(c * 1e12 / f_hz) = ceil(c * 1e15 * 1e6 / f_mHz) ... with f in mHz:
  // c cycles last c / (f_mHz * 1e-3) s = c * 1e3 / f_mHz s = c * 1e15 / f_mHz ps.
  static constexpr uint64_t kScale = 1000000000000000ULL;  // 1e15
  uint64_t m_mhz_milli = 900000000000ULL;                  // 900 MHz in mHz
  uint64_t m_phase_ps = 0;
  CeilRatio m_ps{kScale, 900000000000ULL};
};

/// Serialization time of whole packets on a link.
class SerialRate {
 public:
  SerialRate() = default;
  /// `bits_per_packet` on a link of `lanes` x `lane_gbps`.
  SerialRate(uint64_t bits_per_packet, uint32_t lanes, double lane_gbps);
  /// Time to serialize n back-to-back packets, in ps (exact, rounded up once).
  /// The last two sizes asked are remembered: a link or memory mostly
  /// carries transfers of one or two sizes (an NPU's memory: a message, then
  /// both operands of its reduction), and the exact division costs more than
  /// the rest of a transfer's bookkeeping.
  uint64_t ps(uint64_t n) const {
    if (n == m_memo[0].n) return m_memo[0].ps;
    if (n != m_memo[1].n) m_memo[1] = {n, m_ps(n)};
    std::swap(m_memo[0], m_memo[1]);
    return m_memo[0].ps;
  }
  /// ps(0), ps(1), ps(2), ... in turn (CeilRatio::Steps).
  CeilRatio::Steps steps() const { return CeilRatio::Steps(m_ps); }
  uint64_t rate_kbps() const { return m_rate_kbps; }
  uint64_t bits_per_packet() const { return m_bits; }
  /// Payload bandwidth in GB/s (1e9 bytes/s) for `payload_bytes` per packet.
  double payload_GBps(uint32_t payload_bytes) const;

 private:
  // The memo first: ps() reads nothing else when it hits, so an owner that
  // puts the rate just after its own hot fields touches one cache line less.
  struct Memo {
    uint64_t n, ps;
  };
  mutable Memo m_memo[2] = {{0, 0}, {0, 0}};  // ps(0) = 0; [0]: the last asked
  uint64_t m_bits = 328 * 8;
  uint64_t m_rate_kbps = 100000000;  // 100 Gb/s
  CeilRatio m_ps{static_cast<unsigned __int128>(328 * 8) * 1000000000ULL, 100000000};
};

}  // namespace fabricvp::core
