// A chip's own oscillator (seed 000 §3.3): nominal frequency, a static
// frequency offset in ppm and cycle jitter.
//
// The mean frequency is f = nominal * (1 + ppm * 1e-6), held exactly as a
// core::Clock (milli-hertz precision), so edge n of a jitter-free oscillator is
// at ceil(n * 1e12 / f) ps with no accumulated rounding error. Jitter is a time
// interval error per edge: edge n is moved by j(n) ps, a deterministic function
// of (seed, n) with rms `jitter_ps` and a bounded distribution (Irwin-Hall of
// 4 uniforms, |j| <= 3.47 rms), so edges stay in order and any edge's time is
// computed in O(1) without an event per cycle. With ppm 0 and jitter 0 the
// oscillator is exactly the nominal core::Clock.
#pragma once

#include <cstdint>

#include "models/core/timebase.h"

namespace fabricvp::clock {

class Oscillator {
 public:
  Oscillator() = default;
  /// Throws std::invalid_argument if the jitter could reorder edges.
  Oscillator(double nominal_mhz, double ppm, double jitter_ps_rms, uint64_t seed);

  /// Time of rising edge `cycle` in ps (cycle 0 at 0 plus its jitter, never negative).
  uint64_t ps(uint64_t cycle) const {
    const uint64_t t = m_mean.ps(cycle);
    if (!m_jitter_scale) return t;
    const int64_t j = jitter(cycle);
    return j < 0 && static_cast<uint64_t>(-j) > t ? 0 : static_cast<uint64_t>(static_cast<int64_t>(t) + j);
  }
  /// First cycle whose edge is at or after t.
  uint64_t cycle_at_or_after(uint64_t t) const;
  /// Last cycle whose edge is at or before t.
  uint64_t cycle_at_or_before(uint64_t t) const;
  uint64_t span_ps(uint64_t c, uint64_t n) const { return ps(c + n) - ps(c); }

  double mhz() const { return m_mean.mhz(); }
  double nominal_mhz() const { return m_nominal_mhz; }
  double ppm() const { return m_ppm; }
  double jitter_ps() const { return m_jitter_rms; }
  /// Mean period in ps (not rounded).
  double period_ps() const { return 1e6 / m_mean.mhz(); }
  /// The jitter-free clock at the mean frequency.
  const core::Clock& mean() const { return m_mean; }
  operator const core::Clock&() const { return m_mean; }
  /// Jitter of edge `cycle` in ps (0 without jitter).
  int64_t jitter(uint64_t cycle) const;

 private:
  core::Clock m_mean;
  double m_nominal_mhz = 900.0, m_ppm = 0.0, m_jitter_rms = 0.0;
  double m_jitter_scale = 0.0;  // ps per unit of the normalized Irwin-Hall variate
  uint64_t m_seed = 0;
};

}  // namespace fabricvp::clock
