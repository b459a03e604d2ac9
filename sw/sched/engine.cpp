#include "sw/sched/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "models/core/config.h"

namespace fabricvp::sched {

using tsp::Instr;
using tsp::Op;

namespace {
/// Does [s, e) overlap a reservation of `busy`? If so, return the end of the first one that does.
bool overlaps(const std::map<uint64_t, uint64_t>& busy, uint64_t s, uint64_t e, uint64_t& blocker_end) {
  auto it = busy.upper_bound(s);
  if (it != busy.begin()) {
    auto prev = std::prev(it);
    if (prev->second > s) return blocker_end = prev->second, true;
  }
  if (it != busy.end() && it->first < e) return blocker_end = it->second, true;
  return false;
}
}  // namespace

Engine::Engine(const Machine& m) : m_m(m) {
  const size_t n = m.chips.size();
  m_busy.resize(n);
  m_alu.resize(n);
  m_takes.resize(n);
  m_queues.resize(n);
  m_leases.resize(n);
  m_units.resize(n);
  m_sxm.resize(n);
  m_pcie_free.assign(n, 0);
  m_pcie_out_free.assign(n, 0);
  for (size_t c = 0; c < n; ++c) {
    const ChipSpec& s = m.chips[c];
    m_busy[c].resize(s.ports.size());
    m_takes[c].resize(s.ports.size());
    m_alu[c].resize(s.alus);
    m_sxm[c].resize(s.sxm_units);
  }
}

uint64_t Engine::slot(uint32_t chip, uint32_t port, uint64_t c, uint32_t n) const {
  const ChipSpec& s = m_m.chips[chip];
  const core::SerialRate& ser = s.ports[port].out.rate;
  const auto& busy = m_busy[chip][port];
  for (;;) {
    uint64_t start = s.clock.ps(c + s.send_latency);
    uint64_t end = start + ser.ps(n), blocker = 0;
    if (!overlaps(busy, start, end, blocker)) return c;
    uint64_t cc = s.clock.cycle_at_or_after(blocker);
    c = std::max(c + 1, cc > s.send_latency ? cc - s.send_latency : 0);
  }
}

uint32_t Engine::scratch(uint32_t chip, uint32_t n, uint64_t t0, uint64_t t1) {
  // First fit above the scratch base among the buffers whose lifetimes overlap [t0, t1].
  std::vector<std::pair<uint32_t, uint32_t>> busy;
  for (const Lease& l : m_leases[chip])
    if (l.t0 <= t1 && t0 <= l.t1) busy.emplace_back(l.addr, l.addr + l.len);
  std::sort(busy.begin(), busy.end());
  uint64_t at = m_scratch_base;
  for (const auto& [lo, hi] : busy) {
    if (lo >= at + n) break;
    at = std::max<uint64_t>(at, hi);
  }
  if (at + n > tsp::kVectors)
    throw core::ConfigError(
        fmt::format("{}: forwarding needs more scratch SRAM than the {} vectors left above vector "
                    "{}; the tensor is too large for this routing",
                    m_m.chips[chip].name, tsp::kVectors - m_scratch_base, m_scratch_base));
  m_leases[chip].push_back(Lease{static_cast<uint32_t>(at), n, t0, t1});
  m_scratch_peak = std::max<uint64_t>(m_scratch_peak, at + n - m_scratch_base);
  return static_cast<uint32_t>(at);
}

void Engine::emit(uint32_t chip, uint32_t queue, uint64_t cycle, const Instr& in) {
  auto& qs = m_queues[chip];
  if (qs.size() <= queue) qs.resize(queue + 1);
  qs[queue].push_back(Timed{cycle, in});
}

Ready Engine::place(const Route& route, const std::vector<Chunk>& dst, uint32_t n, const Ready& ready, uint64_t min_ps,
                    std::vector<Leg>& legs) const {
  const size_t hops = route.hops.size();
  legs.assign(hops, Leg{});
  const std::vector<Chunk> whole{Chunk{0, n}};

  // Pass 1: place the bursts in time as one train: every chip on the way
  // forwards the tensor as soon as it lands (virtual cut-through). If a cable
  // on the way is taken at that moment, the whole train leaves the source
  // later instead of waiting in a transit chip's SRAM.
  const ChipSpec& src_chip = m_m.chips[route.hops[0].chip];
  uint64_t need0 = min_ps;
  {
    auto ser = src_chip.ports[route.hops[0].port].out.rate.steps();
    for (uint32_t i = 0; i < ready.size(); ++i, ser.next())
      need0 = std::max(need0, ready[i] - std::min(ready[i], ser.value()));
  }
  uint64_t c_first = src_chip.clock.cycle_at_or_after(need0);
  Ready cur;  // readiness of the vectors on the current sender
  for (bool placed = false; !placed;) {
    placed = true;
    cur = ready;
    for (size_t h = 0; h < hops && placed; ++h) {
      Hop hop = route.hops[h];
      const ChipSpec& s = m_m.chips[hop.chip];
      // Vector i is read at start - lead + ser(i) = T(c) + ser(i) on an idle
      // grid-aligned slot: it must not be read before it is readable.
      uint64_t need = 0;
      const core::SerialRate& rate = s.ports[hop.port].out.rate;
      {
        auto ser = rate.steps();
        for (uint32_t i = 0; i < cur.size(); ++i, ser.next())
          need = std::max(need, cur[i] - std::min(cur[i], ser.value()));
      }
      uint64_t c_ready = h == 0 ? c_first : s.clock.cycle_at_or_after(need);
      // Parallel cables to the same neighbour (ring bundles, doubled rack
      // links): take the one that is free first.
      const uint32_t peer = s.ports[hop.port].peer;
      uint64_t c = UINT64_MAX;
      for (uint32_t p = 0; p < s.ports.size(); ++p) {
        const PortSpec& alt = s.ports[p];
        if (alt.peer != peer || alt.failed || alt.out.rate.ps(1) != rate.ps(1) ||
            alt.out.latency_ps != s.ports[hop.port].out.latency_ps)
          continue;
        uint64_t cp = slot(hop.chip, p, c_ready, n);
        if (cp < c) c = cp, hop.port = p;
      }
      if (h > 0 && c > c_ready) {  // would wait here: start the train later by as much
        uint64_t delay = s.clock.ps(c) - s.clock.ps(c_ready);
        c_first = src_chip.clock.cycle_at_or_after(src_chip.clock.ps(c_first) + delay);
        placed = false;
        break;
      }
      const PortSpec& ps = s.ports[hop.port];
      const ChipSpec& d = m_m.chips[ps.peer];
      const core::SerialRate& ser = ps.out.rate;
      Leg& leg = legs[h];
      leg.hop = hop;
      leg.send_cycle = c;
      leg.start = s.clock.ps(c + s.send_latency);
      leg.recv_cycles.clear();
      const bool last = h + 1 == hops;
      Ready next(n);
      uint32_t first = 0;
      uint64_t free_from = 0;  // end of the previous chunk's take window on this port
      const auto& takes = m_takes[ps.peer][ps.peer_port];
      for (const Chunk& ch : last ? dst : whole) {
        uint64_t arrival = leg.start + ser.ps(first + 1) + ps.out.latency_ps;
        // A RECV takes its vectors at the link's packet rate from its issue
        // cycle; on a link that delivers a packet in less than a cycle of
        // the receiver, the next chunk's RECV (or the next train's) may have
        // to wait for the cycle after the previous window ends.
        uint64_t cr = d.clock.cycle_at_or_after(std::max(arrival, free_from));
        for (uint64_t blocker = 0; overlaps(takes, d.clock.ps(cr), d.clock.ps(cr) + ser.ps(ch.count - 1) + 1, blocker);)
          cr = std::max(cr + 1, d.clock.cycle_at_or_after(blocker));
        free_from = d.clock.ps(cr) + ser.ps(ch.count - 1) + 1;
        leg.recv_cycles.push_back(cr);
        uint64_t w0 = d.clock.ps(cr + d.recv_latency);
        auto step = ser.steps();
        for (uint32_t i = 0; i < ch.count; ++i, step.next()) next[first + i] = w0 + step.value();
        first += ch.count;
      }
      if (first != n) throw std::logic_error("destination chunks do not cover the tensor");
      cur = std::move(next);
    }
  }
  return cur;
}

uint64_t Engine::lands(const Route& route, uint32_t n, const Ready& ready, uint64_t min_ps) const {
  if (n == 0) return 0;
  std::vector<Leg> legs;
  const Ready got = place(route, {Chunk{0, n}}, n, ready, min_ps, legs);
  return *std::max_element(got.begin(), got.end());
}

Ready Engine::send(const Route& route, uint32_t src_addr, const std::vector<Chunk>& dst, uint32_t n, const Ready& ready,
                   uint64_t min_ps) {
  if (n == 0) return {};
  const size_t hops = route.hops.size();
  std::vector<Leg> legs;
  const Ready cur = place(route, dst, n, ready, min_ps, legs);
  const std::vector<Chunk> whole{Chunk{0, n}};
  // Reserve the train's cables and receive windows.
  for (size_t h = 0; h < hops; ++h) {
    const Leg& leg = legs[h];
    const PortSpec& ps = m_m.chips[leg.hop.chip].ports[leg.hop.port];
    const ChipSpec& d = m_m.chips[ps.peer];
    const core::SerialRate& ser = ps.out.rate;
    m_busy[leg.hop.chip][leg.hop.port][leg.start] = leg.start + ser.ps(n);
    ++m_bursts;
    const bool last = h + 1 == hops;
    const std::vector<Chunk>& into = last ? dst : whole;
    for (size_t k = 0; k < into.size(); ++k) {
      uint64_t take0 = d.clock.ps(leg.recv_cycles[k]), take_end = take0 + ser.ps(into[k].count - 1);
      uint64_t blocker = 0;
      if (overlaps(m_takes[ps.peer][ps.peer_port], take0, take_end + 1, blocker))
        throw std::logic_error(
            fmt::format("{}: receive windows overlap on port {} (links faster than the clock?)", d.name, ps.peer_port));
      m_takes[ps.peer][ps.peer_port][take0] = take_end + 1;
      complete(d.clock.ps(leg.recv_cycles[k] + d.recv_latency) + ser.ps(into[k].count - 1));
    }
  }

  // Pass 2: a chip on the way holds the tensor from its first write until the
  // next SEND's last read; buffers whose lifetimes do not overlap share SRAM.
  for (size_t h = 0; h + 1 < hops; ++h) {
    const PortSpec& ps = m_m.chips[legs[h].hop.chip].ports[legs[h].hop.port];
    const ChipSpec& mid = m_m.chips[ps.peer];
    const Leg& next = legs[h + 1];
    uint64_t first_write = mid.clock.ps(legs[h].recv_cycles[0] + mid.recv_latency);
    uint64_t last_read = mid.clock.ps(next.send_cycle) + mid.ports[next.hop.port].out.rate.ps(n - 1);
    legs[h].buffer = scratch(ps.peer, n, first_write, last_read);
    m_forwarded += n;
  }

  // Pass 3: the instructions.
  uint32_t addr = src_addr;
  for (size_t h = 0; h < hops; ++h) {
    const Leg& leg = legs[h];
    const PortSpec& ps = m_m.chips[leg.hop.chip].ports[leg.hop.port];
    Instr sendi;
    sendi.op = Op::SEND;
    sendi.port = static_cast<uint16_t>(leg.hop.port);
    sendi.a = addr;
    sendi.count = n;
    emit(leg.hop.chip, leg.hop.port, leg.send_cycle, sendi);
    const bool last = h + 1 == hops;
    const std::vector<Chunk> into = last ? dst : std::vector<Chunk>{Chunk{leg.buffer, n}};
    const uint32_t recv_queue = static_cast<uint32_t>(m_m.chips[ps.peer].ports.size()) + ps.peer_port;
    for (size_t k = 0; k < into.size(); ++k) {
      Instr recvi;
      recvi.op = Op::RECV;
      recvi.port = static_cast<uint16_t>(ps.peer_port);
      recvi.a = into[k].addr;
      recvi.count = into[k].count;
      emit(ps.peer, recv_queue, leg.recv_cycles[k], recvi);
    }
    addr = leg.buffer;
  }
  return cur;
}

uint64_t Engine::add(uint32_t chip, uint64_t c, core::Dtype dt, uint32_t dst, uint32_t a, uint32_t b, uint32_t n) {
  Instr in;
  in.op = Op::ADD;
  in.dtype = dt;
  in.a = dst;
  in.b = a;
  in.c = b;
  in.count = n;
  return alu(chip, c, in);
}

uint64_t Engine::copy(uint32_t chip, uint64_t c, uint32_t dst, uint32_t src, uint32_t n) {
  Instr in;
  in.op = Op::COPY;
  in.a = dst;
  in.b = src;
  in.count = n;
  return alu(chip, c, in);
}

uint64_t Engine::alu(uint32_t chip, uint64_t c, const Instr& in) { return book_alus(chip, c, &in, 1); }

uint64_t Engine::flyby(uint32_t chip, uint64_t c, std::vector<Instr> stages) {
  if (stages.empty()) throw std::logic_error("a fly-by of no instructions");
  const uint32_t n = stages.front().count, k = static_cast<uint32_t>(stages.size());
  for (size_t j = 0; j < stages.size() && k > 1; ++j) {
    Instr& in = stages[j];
    if (!tsp::fly_capable(in.op) || in.count != n || in.dtype != stages.front().dtype)
      throw std::logic_error(fmt::format("fly-by stage {} ({}) cannot be chained", j, tsp::op_name(in.op)));
    in.port = static_cast<uint16_t>((j + 1 < stages.size() ? tsp::kFlyOut : 0) | (j > 0 ? tsp::kFlyIn : 0));
    if (j + 1 < stages.size()) in.a = 0;
    if (j > 0) in.b = 0;
  }
  return book_alus(chip, c, stages.data(), k);
}

uint64_t Engine::book_alus(uint32_t chip, uint64_t c, const Instr* stages, uint32_t k) {
  const ChipSpec& s = m_m.chips[chip];
  auto& lanes = m_alu[chip];
  const uint32_t n = stages[0].count;
  if (k > lanes.size())
    throw core::ConfigError(
        fmt::format("{}: a fly-by of {} instructions needs as many vector ALUs; the chip has {} (vxm_alus)", s.name, k,
                    lanes.size()));
  std::array<uint32_t, 64> free{};  // vxm_alus is at most 64
  for (;;) {
    uint32_t found = 0;
    uint64_t soonest = UINT64_MAX;
    for (uint32_t lane = 0; lane < lanes.size() && found < k; ++lane) {
      uint64_t blocker = 0;
      if (!overlaps(lanes[lane], c, c + n, blocker))
        free[found++] = lane;
      else
        soonest = std::min(soonest, blocker);
    }
    if (found == k) {
      for (uint32_t j = 0; j < k; ++j) lanes[free[j]][c] = c + n;
      const uint32_t queue = 2 * static_cast<uint32_t>(s.ports.size()) + free[0];
      for (uint32_t j = 0; j < k; ++j) emit(chip, queue, c, stages[j]);
      complete(s.clock.ps(flyby_lands(chip, c, k, n - 1)));
      return c;
    }
    c = std::max(c + 1, soonest);
  }
}

uint32_t Engine::mxm_units(uint32_t chip, core::Dtype dt) const {
  const uint32_t planes = m_m.chips[chip].mxm_planes;
  return dt == core::Dtype::fp16 ? planes / 2 : dt == core::Dtype::int8 ? planes : 0;
}

uint32_t Engine::unit_queue(uint32_t chip, uint32_t unit) const {
  const ChipSpec& s = m_m.chips[chip];
  return 2 * static_cast<uint32_t>(s.ports.size()) + s.alus + unit;
}

// fp16 and int8 units share planes (fp16 unit u = planes 2u, 2u + 1); a
// schedule uses one type per chip, so the units are booked by (type, unit).
uint64_t Engine::lw(uint32_t chip, uint64_t c, core::Dtype dt, uint32_t unit, uint32_t buf, uint32_t tile, uint32_t n) {
  if (unit >= mxm_units(chip, dt) || buf > 1 || n == 0 || n > tsp::kTileVectors)
    throw std::logic_error(
        fmt::format("{}: LW m{}.w{} of {} vectors is not a valid load", m_m.chips[chip].name, unit, buf, n));
  const ChipSpec& s = m_m.chips[chip];
  Unit& u = m_units[chip][{static_cast<uint8_t>(dt), unit}];
  c = std::max({c, u.load_until, u.read_until[buf]});
  while (u.issued.count(c)) ++c;
  u.issued.insert(c);
  const uint64_t end = c + (n + s.lw_rate - 1) / s.lw_rate;
  u.load_until = end;
  u.ready[buf] = end + s.lw_latency;
  Instr in;
  in.op = Op::LW;
  in.dtype = dt;
  in.port = static_cast<uint16_t>(unit);
  in.c = buf;
  in.a = tile;
  in.count = n;
  emit(chip, unit_queue(chip, unit), c, in);
  return u.ready[buf];
}

uint64_t Engine::mxm(uint32_t chip, uint64_t c, core::Dtype dt, uint32_t unit, uint32_t buf, uint32_t dst, uint32_t src,
                     uint32_t n, bool acc, uint32_t stride) {
  if (unit >= mxm_units(chip, dt) || buf > 1 || n == 0 || stride == 0 ||
      src + uint64_t(n - 1) * stride >= tsp::kVectors)
    throw std::logic_error(fmt::format("{}: MXM m{}.w{} is not a valid operation", m_m.chips[chip].name, unit, buf));
  const ChipSpec& s = m_m.chips[chip];
  Unit& u = m_units[chip][{static_cast<uint8_t>(dt), unit}];
  c = std::max({c, u.busy_until, u.ready[buf]});
  while (u.issued.count(c)) ++c;
  u.issued.insert(c);
  u.busy_until = c + n;
  u.read_until[buf] = c + n;
  Instr in;
  in.op = Op::MXM;
  in.dtype = dt;
  in.port = static_cast<uint16_t>(unit);
  in.c = buf;
  in.a = dst;
  in.b = src;
  in.count = n;
  in.imm = tsp::mxm_imm(acc, stride);
  emit(chip, unit_queue(chip, unit), c, in);
  complete(s.clock.ps(c + n - 1 + s.mxm_latency));
  return c;
}

uint32_t Engine::pcie_queue(uint32_t chip) const {
  const ChipSpec& s = m_m.chips[chip];
  return 2 * static_cast<uint32_t>(s.ports.size()) + s.alus + s.mxm_planes + s.sxm_units;
}

uint64_t Engine::to_host(uint32_t chip, uint64_t c, uint32_t src, uint32_t n, uint64_t host_vec) {
  if (n == 0) throw std::logic_error("HOSTW of no vectors");
  const ChipSpec& s = m_m.chips[chip];
  c = std::max(c, s.clock.cycle_at_or_after(m_pcie_out_free[chip]));
  const uint64_t start = s.clock.ps(c);
  m_pcie_out_free[chip] = start + s.pcie.ps(n);
  complete(start + s.pcie.ps(n) + s.pcie_latency_ps);
  Instr in;
  in.op = Op::HOSTW;
  in.a = src;
  in.count = n;
  in.imm = host_vec;
  emit(chip, pcie_queue(chip), c, in);
  return c;
}

uint32_t Engine::sxm_queue(uint32_t chip, uint32_t unit) const {
  const ChipSpec& s = m_m.chips[chip];
  return 2 * static_cast<uint32_t>(s.ports.size()) + s.alus + s.mxm_planes + unit;
}

uint64_t Engine::transpose(uint32_t chip, uint64_t c, core::Dtype dt, uint32_t dst, uint32_t src, uint32_t n,
                           uint32_t lane, uint32_t stride) {
  const ChipSpec& s = m_m.chips[chip];
  const uint32_t es = core::dtype_bytes(dt), lanes = es ? tsp::kVectorBytes / es : 0;
  if (s.sxm_units == 0 || s.sxm_rate == 0 || n == 0 || n > lanes || lane >= lanes || stride == 0 ||
      dst >= tsp::kVectors || src + uint64_t(n - 1) * stride >= tsp::kVectors)
    throw std::logic_error(fmt::format("{}: TRANSPOSE.{} of {} vectors, lane {}, stride {} is not a valid operation",
                                       s.name, core::dtype_name(dt), n, lane, stride));
  auto& units = m_sxm[chip];
  const uint64_t busy = (n + s.sxm_rate - 1) / s.sxm_rate;
  for (;;) {
    uint64_t soonest = UINT64_MAX;
    for (uint32_t u = 0; u < units.size(); ++u) {
      uint64_t blocker = 0;
      if (!overlaps(units[u], c, c + busy, blocker)) {
        units[u][c] = c + busy;
        Instr in;
        in.op = Op::TRANSPOSE;
        in.dtype = dt;
        in.a = dst;
        in.b = src;
        in.c = stride;
        in.count = n;
        in.imm = lane;
        emit(chip, sxm_queue(chip, u), c, in);
        complete(s.clock.ps(c + (n - 1) / s.sxm_rate + s.sxm_latency));
        return c;
      }
      soonest = std::min(soonest, blocker);
    }
    c = std::max(c + 1, soonest);
  }
}

Ready Engine::host_write(uint32_t chip, uint32_t n, uint64_t ready_ps) {
  const uint64_t start = host_write_start(chip, n, ready_ps);
  Ready out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = host_lands(chip, start, i);
  return out;
}

uint64_t Engine::host_write_start(uint32_t chip, uint32_t n, uint64_t ready_ps) {
  const ChipSpec& s = m_m.chips[chip];
  const uint64_t start = std::max(ready_ps, m_pcie_free[chip]);
  m_pcie_free[chip] = start + s.pcie.ps(n);
  if (n) complete(host_lands(chip, start, n - 1));
  return start;
}

uint64_t Engine::host_lands(uint32_t chip, uint64_t start, uint32_t i) const {
  const ChipSpec& s = m_m.chips[chip];
  return start + s.pcie.ps(uint64_t(i) + 1) + s.pcie_latency_ps;
}

std::vector<sw::Program> Engine::programs() const {
  std::vector<sw::Program> out(m_m.chips.size());
  for (size_t chip = 0; chip < m_m.chips.size(); ++chip) {
    const ChipSpec& s = m_m.chips[chip];
    out[chip].target = s.name;
    const auto& qs = m_queues[chip];
    if (qs.size() > s.queues)
      throw core::ConfigError(
          fmt::format("{}: the schedule needs {} instruction queues, the chip has {}", s.name, qs.size(), s.queues));
    for (uint32_t q = 0; q < qs.size(); ++q) {
      std::vector<Timed> list = qs[q];
      std::stable_sort(list.begin(), list.end(), [](const Timed& a, const Timed& b) { return a.cycle < b.cycle; });
      uint64_t next = 0;  // first cycle the queue can issue
      const Instr* prev = nullptr;
      for (const Timed& t : list) {
        if (tsp::fly_in(t.in) && prev && tsp::fly_out(*prev) && t.cycle + 1 == next) {  // a fly-by issues at once
          out[chip].emit(q, t.in);
          prev = &t.in;
          continue;
        }
        prev = &t.in;
        if (t.cycle < next)
          throw std::logic_error(fmt::format("{}: queue {} has two instructions for cycle {}", s.name, q, t.cycle));
        if (t.cycle > next) {
          Instr w;
          w.op = Op::WAIT;
          w.imm = t.cycle;
          out[chip].emit(q, w);
        }
        out[chip].emit(q, t.in);
        next = t.cycle + 1;
      }
      if (q < out[chip].queues.size() && out[chip].queues[q].size() + 1 > s.imem)
        throw core::ConfigError(fmt::format("{}: queue {} needs {} instructions; imem_instructions is {}", s.name, q,
                                            out[chip].queues[q].size() + 1, s.imem));
    }
  }
  return out;
}

}  // namespace fabricvp::sched
