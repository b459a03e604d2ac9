#include "models/ace/datapath.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fabricvp::ace {

const char* op_name(Op op) {
  switch (op) {
    case Op::add: return "add";
    case Op::store: return "store";
    case Op::forward: return "forward";
    case Op::illegal: return "illegal";
  }
  return "?";
}

namespace {
uint32_t ceil_log2(uint32_t n) {
  uint32_t b = 0;
  while ((uint64_t(1) << b) < n) ++b;
  return b;
}
}  // namespace

uint32_t Geometry::row_bits() const { return ceil_log2(depth); }
uint32_t Geometry::part_bits() const { return std::max<uint32_t>(1, ceil_log2(partitions)); }

void check_chunk(const Geometry& g, const Chunk& c) {
  if (c.data.size() != g.lanes)
    throw std::invalid_argument(fmt::format("ace chunk {}: {} data words for {} lanes", c.tag, c.data.size(), g.lanes));
  if (uint64_t(c.row) >> g.row_bits())
    throw std::invalid_argument(fmt::format("ace chunk {}: row {} does not fit {} bits", c.tag, c.row, g.row_bits()));
  if (uint64_t(c.part) >> g.part_bits())
    throw std::invalid_argument(
        fmt::format("ace chunk {}: partition {} does not fit {} bits", c.tag, c.part, g.part_bits()));
  if (uint64_t(c.tag) >> g.tag_bits)
    throw std::invalid_argument(fmt::format("ace chunk tag {} does not fit {} bits", c.tag, g.tag_bits));
  if (static_cast<uint32_t>(c.op) > 3 || c.dtype == core::Dtype::none || static_cast<uint32_t>(c.dtype) > 4)
    throw std::invalid_argument(fmt::format("ace chunk {}: op or dtype out of range", c.tag));
}

void check_configure(const Geometry& g, uint32_t part, uint32_t base, uint32_t size, size_t pending) {
  if (pending != 0)
    throw std::logic_error(fmt::format("ace configure: {} chunks still pending (configure only when idle)", pending));
  if (part >= g.partitions || base >= g.depth || size > g.depth)
    throw std::invalid_argument(
        fmt::format("ace configure: partition {} base {} size {} does not fit {} partitions "
                    "of a {}-row buffer",
                    part, base, size, g.partitions, g.depth));
}

Datapath::Datapath(const Geometry& g)
    : m_geo(g),
      m_mem(size_t(g.depth) * g.lanes, 0),
      m_base(g.partitions, 0),
      m_size(g.partitions, 0),
      m_result(g.lanes, 0) {
  if (g.lanes == 0 || g.depth < 2 || g.partitions == 0 || g.tag_bits == 0 || g.tag_bits > 32)
    throw std::invalid_argument("ace datapath: lanes, partitions >= 1, depth >= 2, tag_bits in [1, 32]");
}

bool Datapath::map(uint32_t part, uint32_t row, uint32_t& addr) const {
  if (part >= m_geo.partitions) return false;
  uint64_t phys = uint64_t(m_base[part]) + row;
  addr = static_cast<uint32_t>(phys);
  return row < m_size[part] && phys < m_geo.depth;
}

void Datapath::configure(uint32_t part, uint32_t base, uint32_t size) {
  check_configure(m_geo, part, base, size, pending());
  m_base[part] = base;
  m_size[part] = size;
  m_horizon += 1;
}

bool Datapath::advance(uint64_t cycles) {
  if (pending() != 0) throw std::logic_error("ace advance: chunks still pending");
  m_horizon += cycles;
  return true;
}

uint64_t Datapath::first_ready(uint64_t t) const {
  if (!m_ready) return t;
  for (uint64_t limit = t + kReadyLimit; t < limit; ++t)
    if (m_ready(t)) return t;
  throw std::runtime_error(fmt::format("ace datapath: the send side was not ready for {} cycles", kReadyLimit));
}

void Datapath::submit(const Chunk& c) {
  check_chunk(m_geo, c);
  uint32_t addr = 0;
  const bool ok = c.op != Op::illegal && map(c.part, c.row, addr);
  const bool reads = ok && (c.op == Op::add || c.op == Op::forward);
  const bool send = c.send || !ok;

  // Acceptance: offered, a free place in the pipeline (chunk k - kInFlight
  // retires at or before), and no older chunk in flight still to write the row.
  uint64_t a = std::max(m_offer_base + c.gap, m_horizon);
  const uint64_t older = std::min<uint64_t>(m_submitted, kInFlight);
  for (uint64_t j = 1; j <= older; ++j) {
    const Flight& f = m_flight[(m_submitted - j) % kInFlight];
    if (j == kInFlight) a = std::max(a, f.retire);
    if (reads && f.wb && f.addr == addr) a = std::max(a, f.retire + 1);
  }
  // Retirement: in order, after the pipeline latency, when the send side takes it.
  uint64_t d = a + kLatency;
  if (m_submitted > 0) d = std::max(d, m_last_retire + 1);
  if (send) d = first_ready(d);

  // Data: in order, so the row holds what every older chunk left in it.
  const uint32_t* local = ok ? row(addr) : nullptr;
  for (uint32_t i = 0; i < m_geo.lanes; ++i) {
    uint32_t v = 0;
    if (ok) {
      switch (c.op) {
        case Op::add: v = core::add_lane(c.dtype, c.data[i], local[i]); break;
        case Op::store: v = c.data[i]; break;
        case Op::forward: v = local[i]; break;
        case Op::illegal: break;
      }
    }
    m_result[i] = v;
  }
  if (ok && c.wb) std::copy(m_result.begin(), m_result.end(), m_mem.begin() + size_t(addr) * m_geo.lanes);

  Completion& out = m_done.push();
  out.tag = c.tag;
  out.err = !ok;
  out.sent = send;
  out.accept_cycle = a;
  out.retire_cycle = d;
  if (send)
    out.data.assign(m_result.begin(), m_result.end());
  else
    out.data.clear();

  m_flight[m_submitted % kInFlight] = Flight{d, ok && c.wb, addr};
  ++m_submitted;
  m_offer_base = a + 1;
  m_last_retire = d;
}

bool Datapath::reduce_burst(const Burst& b, BurstCycles& out) {
  if (b.rows == 0 || m_ready || pending() != 0 || b.es != core::dtype_bytes(b.dtype) || (b.es != 2 && b.es != 4))
    return false;
  const uint32_t depth = m_geo.depth, G = m_geo.lanes;
  const uint64_t staged = std::min<uint64_t>(b.rows, depth);  // the rows whose last store is in the burst
  uint32_t addr = 0;
  for (uint64_t k = b.rows - staged; k < b.rows; ++k)
    if (!map(b.part, static_cast<uint32_t>((b.row0 + k) % depth), addr)) return false;
  // Every older chunk has retired before m_horizon (none pending, the send
  // side always ready): the burst's closed form holds from there.
  const uint64_t start = m_horizon;
  out = reduce_burst_cycles(start, b.rows);
  const uint64_t beats = 2 * b.rows;
  for (uint64_t k = b.rows - staged; k < b.rows; ++k) {
    map(b.part, static_cast<uint32_t>((b.row0 + k) % depth), addr);
    // What the row holds after the burst: the local partial of its last store beat.
    uint32_t* row = &m_mem[size_t(addr) * G];
    const uint64_t e0 = k * b.stride + b.lane0;
    const uint32_t cnt = e0 >= b.n ? 0 : static_cast<uint32_t>(std::min<uint64_t>(G, b.n - e0));
    const uint8_t* src = b.local + e0 * b.es;
    uint32_t i = 0;
    if (b.es == 4) {
      std::memcpy(row, src, size_t(cnt) * 4);
      i = cnt;
    } else {
      for (; i < cnt; ++i) {
        uint16_t h;
        std::memcpy(&h, src + size_t(i) * 2, 2);
        row[i] = h;
      }
    }
    std::fill(row + i, row + G, 0u);
    // The pipeline remembers the last kInFlight chunks: store k retires at start + 6k + 4, add k at + 9.
    if (2 * k + 2 + kInFlight > beats) {
      const uint64_t t = start + 6 * k;
      m_flight[(m_submitted + 2 * k) % kInFlight] = Flight{t + 4, true, addr};
      m_flight[(m_submitted + 2 * k + 1) % kInFlight] = Flight{t + 9, false, addr};
    }
  }
  m_submitted += beats;
  m_offer_base = out.last_accept + 1;
  m_last_retire = out.last_retire;
  m_horizon = out.last_retire + 1;
  return true;
}

bool Datapath::next(Completion& out) {
  if (m_done.empty()) return false;
  std::swap(out, m_done.front());
  m_done.pop();
  m_horizon = std::max(m_horizon, out.retire_cycle + 1);
  return true;
}

}  // namespace fabricvp::ace
