// A chip's hardware aligned counter (HAC) and software aligned counter (SAC),
// seed 000 §3.1 and §3.3, as a function of the chip's local cycle.
//
// The HAC is an 8-bit counter with a 252-cycle epoch (4 codes are reserved for
// link control codes, one of which carries TRANSMIT notifications). It counts
// local cycles 0..251 and overflows back to 0 at an *epoch boundary*. Alignment
// to a parent changes the length of an epoch: an adjustment of +a cycles makes
// the next epoch a cycles shorter (the counter skips its top a values), -a
// makes it a cycles longer (the counter holds at 251). An adjustment decided at
// cycle d applies to the first epoch that starts after d, so the end of the
// current epoch never moves once it has started.
//
// The SAC counts local cycles with the same period and is never adjusted; it
// is set equal to the HAC at a resynchronization (program start and
// RUNTIME_DESKEW). SAC - HAC, wrapped to [-126, 125], is the drift of local time
// against the aligned (global) time since the last resynchronization.
//
// Epochs are advanced lazily when the counter is asked about a cycle; with no
// adjustment pending, any number of epochs is skipped in O(1). The last few
// epochs are remembered, so a value sampled a little in the past (a HAC code
// processed after it arrived) is read as it was at that cycle.
#pragma once

#include <array>
#include <cstdint>

namespace fabricvp::clock {

constexpr int64_t kEpoch = 252;     ///< HAC period in cycles (8-bit counter, 4 reserved codes)
constexpr int64_t kHacCodes = 256;  ///< values of the 8-bit counter

/// Wrap a difference of HAC values into [-126, 125].
inline int64_t wrap_epoch(int64_t d) {
  d %= kEpoch;
  if (d < 0) d += kEpoch;
  return d >= kEpoch / 2 ? d - kEpoch : d;
}

class HacCounter {
 public:
  /// HAC value `phase` (0..251) at local cycle 0.
  explicit HacCounter(int64_t phase = 0) { reset(phase); }
  void reset(int64_t phase) {
    m_start = -phase;
    m_len = kEpoch;
    m_index = 0;
    m_pending = 0;
    m_pending_at = -1;
    m_sac_cycle = 0;
    m_sac_h = phase;
    m_total = 0;
    m_hist_n = 0;
  }

  /// HAC register at local cycle c.
  int64_t hac(uint64_t c) {
    const Epoch e = locate(c);
    const int64_t v = static_cast<int64_t>(c) - e.start;
    return v > kEpoch - 1 ? kEpoch - 1 : v;
  }
  /// SAC register at local cycle c.
  int64_t sac(uint64_t c) const {
    int64_t v = (m_sac_h + static_cast<int64_t>(c) - static_cast<int64_t>(m_sac_cycle)) % kEpoch;
    return v < 0 ? v + kEpoch : v;
  }
  /// First local cycle > c that is an epoch boundary (the HAC overflows to 0).
  uint64_t next_boundary(uint64_t c) {
    advance(c);
    return static_cast<uint64_t>(m_start + m_len);
  }
  /// Unwrapped aligned time at cycle c: kEpoch * epochs + HAC value.
  int64_t aligned(uint64_t c) {
    const Epoch e = locate(c);
    const int64_t v = static_cast<int64_t>(c) - e.start;
    return e.index * kEpoch + (v > kEpoch - 1 ? kEpoch - 1 : v);
  }
  /// SAC - HAC at cycle c, wrapped to [-126, 125] (what the hardware can see).
  int64_t drift(uint64_t c) {
    const int64_t local = static_cast<int64_t>(c) - static_cast<int64_t>(m_sac_cycle);
    return wrap_epoch(local - (aligned(c) - m_sac_h));
  }
  /// SAC := HAC at cycle c.
  void resync(uint64_t c) {
    m_sac_h = aligned(c);
    m_sac_cycle = c;
  }
  /// Request an adjustment of `a` cycles (positive: the HAC moves ahead) for
  /// the first epoch that starts after cycle `decided`. Replaces an earlier
  /// request that has not taken effect.
  void adjust(int64_t a, uint64_t decided) {
    advance(decided);
    m_pending = a;
    m_pending_at = static_cast<int64_t>(decided);
  }
  /// Sum of all adjustments applied so far (cycles).
  int64_t total_adjustment() const { return m_total; }

 private:
  struct Epoch {
    int64_t start, len, index;
  };
  static constexpr size_t kHistory = 4;

  void remember() {
    for (size_t i = kHistory - 1; i > 0; --i) m_hist[i] = m_hist[i - 1];
    m_hist[0] = Epoch{m_start, m_len, m_index};
    if (m_hist_n < kHistory) ++m_hist_n;
  }
  void next_epoch() {
    remember();
    m_start += m_len;
    ++m_index;
    m_len = kEpoch;
    if (m_pending != 0 && m_pending_at < m_start) {
      m_len = kEpoch - m_pending;
      m_total += m_pending;
      m_pending = 0;
    }
  }
  void advance(uint64_t c) {
    const int64_t t = static_cast<int64_t>(c);
    for (int k = 0; k < 3 && t >= m_start + m_len; ++k) next_epoch();
    if (t < m_start + m_len) return;
    // No adjustment can be pending any more: skip whole plain epochs at once.
    const int64_t skip = (t - m_start - m_len) / kEpoch + 1;
    m_start += m_len + (skip - 1) * kEpoch;
    m_index += skip;
    m_len = kEpoch;
    m_hist_n = 0;
    for (int64_t k = static_cast<int64_t>(kHistory); k >= 1; --k) {
      m_hist_n = m_hist_n < kHistory ? m_hist_n + 1 : kHistory;
      for (size_t i = kHistory - 1; i > 0; --i) m_hist[i] = m_hist[i - 1];
      m_hist[0] = Epoch{m_start - k * kEpoch, kEpoch, m_index - k};
    }
  }
  /// The epoch that contains cycle c (the current one, a remembered one, or
  /// an older one extrapolated with plain 252-cycle epochs).
  Epoch locate(uint64_t c) {
    const int64_t t = static_cast<int64_t>(c);
    if (t >= m_start + m_len) advance(c);
    if (t >= m_start) return Epoch{m_start, m_len, m_index};
    for (size_t i = 0; i < m_hist_n; ++i)
      if (t >= m_hist[i].start) return m_hist[i];
    Epoch e = m_hist_n ? m_hist[m_hist_n - 1] : Epoch{m_start, m_len, m_index};
    const int64_t back = (e.start - t + kEpoch - 1) / kEpoch;
    return Epoch{e.start - back * kEpoch, kEpoch, e.index - back};
  }

  int64_t m_start = 0;  // local cycle of the current epoch's boundary (may be negative before cycle 0)
  int64_t m_len = kEpoch;
  int64_t m_index = 0;  // epochs since the reference
  int64_t m_pending = 0, m_pending_at = -1;
  int64_t m_total = 0;
  std::array<Epoch, kHistory> m_hist{};
  size_t m_hist_n = 0;
  uint64_t m_sac_cycle = 0;
  int64_t m_sac_h = 0;  // aligned time at the last resynchronization
};

}  // namespace fabricvp::clock
