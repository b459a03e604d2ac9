#include "tb/ace/stimulus.h"

#include <algorithm>

#include "models/core/context.h"

namespace fabricvp::tb {

using ace::Chunk;
using ace::Op;
using core::Dtype;

uint64_t Rng::next() {
  m_state += 0x9e3779b97f4a7c15ULL;
  uint64_t x = m_state;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

struct Format {
  uint32_t ebits, mbits;
  uint32_t width() const { return 1 + ebits + mbits; }
  uint32_t emax() const { return (1u << ebits) - 1; }
  uint32_t bias() const { return (1u << (ebits - 1)) - 1; }
  uint32_t sign_bit() const { return 1u << (ebits + mbits); }
  uint32_t mask() const { return width() == 32 ? 0xffffffffu : (1u << width()) - 1; }
  uint32_t make(uint32_t s, uint32_t e, uint32_t m) const {
    return (s ? sign_bit() : 0) | (e << mbits) | (m & ((1u << mbits) - 1));
  }
};

Format format(Dtype dt) {
  switch (dt) {
    case Dtype::bf16: return {8, 7};
    case Dtype::fp16: return {5, 10};
    default: return {8, 23};
  }
}

}  // namespace

Stimulus::Stimulus(uint64_t seed, const ace::Geometry& g, bool saturate)
    : m_geo(g),
      m_saturate(saturate),
      m_rng(core::splitmix64(seed ^ 0xace0)),
      m_ready_seed(core::splitmix64(seed ^ 0xace1)),
      m_recent(6) {}

uint32_t Stimulus::gap() {
  if (m_saturate) return 0;
  uint32_t r = m_rng.below(100);
  if (r < 70) return 0;
  if (r < 90) return 1 + m_rng.below(3);
  if (r < 98) return 4 + m_rng.below(9);
  return 13 + m_rng.below(36);
}

uint32_t Stimulus::lookahead() {
  if (m_saturate) return 16;
  uint32_t r = m_rng.below(100);
  if (r < 5) return 0;
  if (r < 10) return 1;
  if (r < 20) return 2;
  if (r < 35) return 4;
  if (r < 75) return 8;
  return 16;
}

uint32_t Stimulus::float_value(Dtype dt, uint32_t local) {
  const Format f = format(dt);
  const uint32_t l = local & f.mask();
  const uint32_t le = (l >> f.mbits) & f.emax();
  // One draw per lane: the case (low 32 bits), the sign (bit 32), a fraction
  // (bits 33-55) and a small pick (bits 56-63).
  const uint64_t u = m_rng.next();
  const uint32_t r = static_cast<uint32_t>(((u & 0xffffffffu) * 100) >> 32);
  const uint32_t sign = static_cast<uint32_t>(u >> 32) & 1;
  const uint32_t mant = static_cast<uint32_t>(u >> 33) & 0x7fffffu;
  const uint32_t pick8 = static_cast<uint32_t>(u >> 56);
  auto pick = [pick8](uint32_t n) { return (pick8 * n) >> 8; };  // uniform enough in [0, n) for n <= 256
  if (r < 18) return static_cast<uint32_t>(m_rng.next()) & f.mask();
  if (r < 30) {
    const uint32_t m_all = (1u << f.mbits) - 1;
    uint32_t v = 0;
    switch (pick(10)) {
      case 0: v = 0; break;                                              // zero
      case 1: v = 1; break;                                              // smallest subnormal
      case 2: v = m_all; break;                                          // largest subnormal
      case 3: v = 1u << f.mbits; break;                                  // smallest normal
      case 4: v = ((f.emax() - 1) << f.mbits) | m_all; break;            // largest finite
      case 5: v = f.emax() << f.mbits; break;                            // infinity
      case 6: v = (f.emax() << f.mbits) | (1u << (f.mbits - 1)); break;  // quiet NaN
      case 7: v = (f.emax() << f.mbits) | 1; break;                      // signalling NaN
      case 8: v = f.bias() << f.mbits; break;                            // 1.0
      default: v = (f.bias() << f.mbits) | m_all; break;                 // 2 - ulp
    }
    return (sign ? f.sign_bit() : 0) | v;
  }
  if (r < 42) return l ^ f.sign_bit();                               // exact cancellation
  if (r < 50) return ((l ^ f.sign_bit()) + pick(9) - 4) & f.mask();  // a few ulps off
  if (r < 56) return l;                                              // doubling
  if (r < 68 && le > f.mbits + 1 && le != f.emax()) {
    // Half an ulp of the local value (a tie), or a little more.
    return f.make(sign, le - f.mbits - 1, (pick8 & 1) ? 0 : mant % 4);
  }
  if (r < 85) {
    // Near the local value's binade: additions that round.
    const int k = static_cast<int>(f.mbits) + 3;
    int e = static_cast<int>(le) + static_cast<int>(pick(2 * k + 1)) - k;
    e = std::clamp(e, 0, static_cast<int>(f.emax()) - 1);
    return f.make(sign, static_cast<uint32_t>(e), mant);
  }
  return f.make(sign, pick(f.emax() + 1), mant);
}

uint32_t Stimulus::value(Dtype dt, uint32_t local) {
  if (dt == Dtype::int32) {
    uint32_t r = m_rng.below(100);
    if (r < 40) return static_cast<uint32_t>(m_rng.next());
    if (r < 55) {
      const uint32_t corners[] = {0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffffffu};
      return corners[m_rng.below(5)];
    }
    if (r < 70) return 0u - local;                            // sum zero
    if (r < 85) return 0x7fffffffu - local + m_rng.below(3);  // wraps around the top
    return local;
  }
  uint32_t v = float_value(dt, local);
  if (dt != Dtype::fp32) {
    const uint64_t g = m_rng.next();
    if (g & 1) v |= static_cast<uint32_t>(g) & 0xffff0000u;  // garbage the adder must ignore
  }
  return v;
}

std::vector<Partition> Stimulus::partitions() {
  std::vector<Partition> out(m_geo.partitions);
  for (auto& p : out) {
    p.size = 1 + m_rng.below(std::max<uint32_t>(1, m_geo.depth / 2));
    if (p.size >= 4 && m_rng.chance(15))
      p.base = m_geo.depth - p.size + 1 + m_rng.below(p.size / 4);  // its last rows are past the end
    else
      p.base = m_rng.below(m_geo.depth - p.size + 1);
  }
  return out;
}

void Stimulus::fill(uint32_t addr, uint32_t tag, Chunk& c) {
  c.op = Op::store;
  c.dtype = core::kDtypes[m_rng.below(4)];
  c.part = 0;
  c.row = addr;
  c.wb = true;
  c.send = m_rng.chance(50);
  c.tag = tag;
  c.gap = gap();
  c.data.resize(m_geo.lanes);
  for (auto& w : c.data) w = value(core::kDtypes[m_rng.below(4)], 0);
}

void Stimulus::random(const ace::Datapath& model, const std::vector<Partition>& parts, uint32_t tag, Chunk& c) {
  uint32_t r = m_rng.below(100);
  c.op = r < 70 ? Op::add : r < 83 ? Op::store : r < 98 ? Op::forward : Op::illegal;
  c.dtype = core::kDtypes[m_rng.below(4)];
  r = m_rng.below(100);
  if (r < 25 && m_recent_next > 0) {
    const Recent& x = m_recent[m_rng.below(static_cast<uint32_t>(std::min(m_recent_next, m_recent.size())))];
    c.part = x.part;
    c.row = x.row;
  } else if (r < 97) {
    c.part = m_rng.below(m_geo.partitions);
    c.row = parts[c.part].size ? m_rng.below(parts[c.part].size) : 0;
  } else {
    c.part = m_rng.below(1u << m_geo.part_bits());
    c.row = m_rng.below(1u << m_geo.row_bits());
  }
  m_recent[m_recent_next++ % m_recent.size()] = Recent{c.part, c.row};
  c.wb = m_rng.chance(80);
  c.send = m_rng.chance(75);
  c.tag = tag;
  c.gap = gap();
  c.data.resize(m_geo.lanes);
  uint32_t addr = 0;
  const uint32_t* local = model.map(c.part, c.row, addr) ? model.row(addr) : nullptr;
  for (uint32_t i = 0; i < m_geo.lanes; ++i) c.data[i] = value(c.dtype, local ? local[i] : 0);
}

bool Stimulus::ready(uint64_t cycle) const {
  if (m_saturate) return true;
  const uint64_t window = core::splitmix64(m_ready_seed ^ (cycle >> 5));
  const uint64_t draw = core::splitmix64(m_ready_seed + cycle);
  switch (window % 16) {
    case 9:
    case 10:
    case 11: return draw & 1;  // random
    case 12:
    case 13: return draw % 8 == 0;  // mostly stalled
    case 14: return false;          // stalled for the whole window
    case 15: return cycle & 1;      // every other cycle
    default: return true;           // always ready
  }
}

}  // namespace fabricvp::tb
