#include "models/clock/oscillator.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fabricvp::clock {

namespace {
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
constexpr double kBound = 3.4641016151377544;  // sqrt(12): |normalized Irwin-Hall(4)| <= sqrt(3) * 2
}  // namespace

Oscillator::Oscillator(double nominal_mhz, double ppm, double jitter_ps_rms, uint64_t seed)
    : m_mean(nominal_mhz * (1.0 + ppm * 1e-6)),
      m_nominal_mhz(nominal_mhz),
      m_ppm(ppm),
      m_jitter_rms(jitter_ps_rms),
      m_seed(seed) {
  if (!(jitter_ps_rms >= 0.0)) throw std::invalid_argument("clock jitter must be >= 0 ps");
  const double half_period = 0.5e6 / m_mean.mhz();
  if (jitter_ps_rms * kBound >= half_period - 1.0)
    throw std::invalid_argument("clock jitter of " + std::to_string(jitter_ps_rms) +
                                " ps rms could reorder clock edges (limit: " +
                                std::to_string((half_period - 1.0) / kBound) + " ps rms at this frequency)");
  m_jitter_scale = jitter_ps_rms;
}

int64_t Oscillator::jitter(uint64_t cycle) const {
  if (!m_jitter_scale) return 0;
  // Sum of 4 uniforms on [0,1): mean 2, variance 1/3; normalized to unit variance.
  const uint64_t h = mix(m_seed ^ mix(cycle));
  double s = 0;
  for (int k = 0; k < 4; ++k) s += static_cast<double>((h >> (16 * k)) & 0xffff) / 65536.0;
  const double z = (s - 2.0) * 1.7320508075688772;
  return static_cast<int64_t>(std::llround(z * m_jitter_scale));
}

uint64_t Oscillator::cycle_at_or_after(uint64_t t) const {
  uint64_t c = m_mean.cycle_at_or_after(t);
  if (!m_jitter_scale) return c;
  while (ps(c) < t) ++c;
  while (c > 0 && ps(c - 1) >= t) --c;
  return c;
}

uint64_t Oscillator::cycle_at_or_before(uint64_t t) const {
  uint64_t c = cycle_at_or_after(t);
  if (ps(c) > t && c > 0) --c;
  return c;
}

}  // namespace fabricvp::clock
