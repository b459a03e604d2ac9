#include "sw/sched/engine.h"

#include <fmt/format.h>

#include <algorithm>
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

Engine::Engine(const Machine& m, Router& router) : m_m(m), m_router(router) {
  const size_t n = m.chips.size();
  m_busy.resize(n);
  m_alu.resize(n);
  m_takes.resize(n);
  m_queues.resize(n);
  m_scratch.assign(n, 0);
  for (size_t c = 0; c < n; ++c) {
    const ChipSpec& s = m.chips[c];
    m_busy[c].resize(s.ports.size());
    m_takes[c].resize(s.ports.size());
    m_alu[c].resize(s.alus);
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

uint32_t Engine::scratch(uint32_t chip, uint32_t n) {
  uint32_t& next = m_scratch[chip];
  if (next < m_scratch_base) next = m_scratch_base;
  if (static_cast<uint64_t>(next) + n > tsp::kVectors)
    throw core::ConfigError(fmt::format("{}: forwarding needs more scratch SRAM than the {} vectors left above vector "
                                        "{}; the tensor is too large for this routing",
                                        m_m.chips[chip].name, tsp::kVectors - m_scratch_base, m_scratch_base));
  uint32_t at = next;
  next += n;
  return at;
}

void Engine::emit(uint32_t chip, uint32_t queue, uint64_t cycle, const Instr& in) {
  auto& qs = m_queues[chip];
  if (qs.size() <= queue) qs.resize(queue + 1);
  qs[queue].push_back(Timed{cycle, in});
}

Ready Engine::send(const Route& route, uint32_t src_addr, const std::vector<Chunk>& dst, uint32_t n,
                   const Ready& ready, uint64_t min_ps) {
  if (n == 0) return {};
  Ready cur = ready;  // readiness of the vectors on the current sender
  uint32_t addr = src_addr;
  for (size_t h = 0; h < route.hops.size(); ++h) {
    const Hop& hop = route.hops[h];
    const ChipSpec& s = m_m.chips[hop.chip];
    const PortSpec& ps = s.ports[hop.port];
    const ChipSpec& d = m_m.chips[ps.peer];
    const core::SerialRate& ser = ps.out.rate;
    // Vector i is read at start - lead + ser(i) = T(c) + ser(i) on an idle
    // grid-aligned slot: it must not be read before it is readable.
    uint64_t need = h == 0 ? min_ps : 0;
    for (uint32_t i = 0; i < cur.size(); ++i) need = std::max(need, cur[i] - std::min(cur[i], ser.ps(i)));
    uint64_t c = slot(hop.chip, hop.port, s.clock.cycle_at_or_after(need), n);
    uint64_t start = s.clock.ps(c + s.send_latency);
    m_busy[hop.chip][hop.port][start] = start + ser.ps(n);
    Instr sendi;
    sendi.op = Op::SEND;
    sendi.port = static_cast<uint16_t>(hop.port);
    sendi.a = addr;
    sendi.count = n;
    emit(hop.chip, hop.port, c, sendi);
    ++m_bursts;

    // Receive: the whole burst into scratch on the way, the chunks at the end.
    bool last = h + 1 == route.hops.size();
    std::vector<Chunk> into = last ? dst : std::vector<Chunk>{Chunk{scratch(ps.peer, n), n}};
    if (!last) m_forwarded += n;
    Ready next(n);
    uint32_t first = 0;
    for (const Chunk& ch : into) {
      uint64_t arrival = start + ser.ps(first + 1) + ps.out.latency_ps;
      uint64_t cr = d.clock.cycle_at_or_after(arrival);
      uint64_t take0 = d.clock.ps(cr), take_end = take0 + ser.ps(ch.count - 1);
      uint64_t blocker = 0;
      if (overlaps(m_takes[ps.peer][ps.peer_port], take0, take_end + 1, blocker))
        throw std::logic_error(fmt::format("{}: receive windows overlap on port {} (links faster than the clock?)",
                                           d.name, ps.peer_port));
      m_takes[ps.peer][ps.peer_port][take0] = take_end + 1;
      Instr recvi;
      recvi.op = Op::RECV;
      recvi.port = static_cast<uint16_t>(ps.peer_port);
      recvi.a = ch.addr;
      recvi.count = ch.count;
      emit(ps.peer, static_cast<uint32_t>(d.ports.size()) + ps.peer_port, cr, recvi);
      uint64_t w0 = d.clock.ps(cr + d.recv_latency);
      for (uint32_t i = 0; i < ch.count; ++i) next[first + i] = w0 + ser.ps(i);
      complete(w0 + ser.ps(ch.count - 1));
      first += ch.count;
    }
    if (first != n) throw std::logic_error("destination chunks do not cover the tensor");
    cur = std::move(next);
    addr = into[0].addr;
  }
  return cur;
}

uint64_t Engine::add(uint32_t chip, uint64_t c, tsp::Dtype dt, uint32_t dst, uint32_t a, uint32_t b, uint32_t n) {
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

uint64_t Engine::alu(uint32_t chip, uint64_t c, const Instr& in) {
  const ChipSpec& s = m_m.chips[chip];
  auto& lanes = m_alu[chip];
  const uint32_t n = in.count;
  for (;;) {
    uint64_t soonest = UINT64_MAX;
    for (uint32_t lane = 0; lane < lanes.size(); ++lane) {
      uint64_t blocker = 0;
      if (!overlaps(lanes[lane], c, c + n, blocker)) {
        lanes[lane][c] = c + n;
        emit(chip, 2 * static_cast<uint32_t>(s.ports.size()) + lane, c, in);
        complete(s.clock.ps(c + n - 1 + s.add_latency));
        return c;
      }
      soonest = std::min(soonest, blocker);
    }
    c = std::max(c + 1, soonest);
  }
}

std::vector<sw::Program> Engine::programs() const {
  std::vector<sw::Program> out(m_m.chips.size());
  for (size_t chip = 0; chip < m_m.chips.size(); ++chip) {
    const ChipSpec& s = m_m.chips[chip];
    out[chip].target = s.name;
    const auto& qs = m_queues[chip];
    if (qs.size() > s.queues)
      throw core::ConfigError(fmt::format("{}: the schedule needs {} instruction queues, the chip has {}", s.name,
                                          qs.size(), s.queues));
    for (uint32_t q = 0; q < qs.size(); ++q) {
      std::vector<Timed> list = qs[q];
      std::stable_sort(list.begin(), list.end(), [](const Timed& a, const Timed& b) { return a.cycle < b.cycle; });
      uint64_t next = 0;  // first cycle the queue can issue
      for (const Timed& t : list) {
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
