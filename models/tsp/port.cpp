#include "models/tsp/port.h"

#include <fmt/format.h>

#include "models/tsp/tsp.h"

namespace fabricvp::tsp {

Port::Port(const sc_core::sc_module_name& nm, Tsp& chip, uint32_t index)
    : core::Module(nm, "tsp.c2c"),
      tx("tx"),
      rx("rx"),
      tx_vectors(this, nullptr, "tx_vectors", "vectors", "vectors sent by SEND"),
      tx_peak_backlog(this, nullptr, "tx_peak_backlog", "vectors",
                      "most packets queued in the transmit buffer ahead of a SEND"),
      rx_vectors(this, nullptr, "rx_vectors", "vectors", "vectors taken from the receive buffer by RECV"),
      rx_peak_occupancy(this, nullptr, "rx_peak_occupancy", "vectors", "most vectors waiting in the receive buffer"),
      rx_wait_ps(this, nullptr, "rx_wait_ps", "ps", "total time received vectors waited in the receive buffer"),
      m_chip(chip),
      m_index(index) {
  tx.bind(*static_cast<c2c::BwIf*>(this));
  rx.bind(*static_cast<c2c::FwIf*>(this));
  m_buffered.resize(chip.rx_buffer_vectors);
}

void Port::attach(c2c::Channel& out, c2c::Channel& in, const std::string& peer) {
  m_out = &out;
  m_in = &in;
  m_peer = peer;
  out.set_producer(&m_chip);
}

void Port::add_consume(uint64_t q0, uint32_t count, uint64_t issue_cycle) {
  m_consumes.push_back(Consumes{q0, count, 0, issue_cycle});
  m_rx_busy_until = q0 + m_in->rate().ps(count - 1);
  m_rx_any = true;
}

void Port::b_transport(c2c::Burst& b, sc_core::sc_time&) {
  m_arrivals.push_back(Arrivals{b.start_ps + m_in->latency_ps(), b.count, 0});
  auto& tr = core::Context::get().trace();
  if (tr.enabled()) {
    uint64_t first = m_in->arrival_ps(b, 0), last = m_in->arrival_ps(b, b.count - 1);
    tr.span(m_chip.trace_pid(), 100 + m_index, "arrive", "c2c", first, last - first + 1,
            fmt::format(R"("vectors":{},"from":"{}")", b.count, m_peer));
  }
}

tlm::tlm_sync_enum Port::nb_transport_fw(c2c::Burst&, tlm::tlm_phase&, sc_core::sc_time&) {
  SC_REPORT_FATAL(name(), "C2C ports support blocking transport only");
  return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum Port::nb_transport_bw(c2c::Burst&, tlm::tlm_phase&, sc_core::sc_time&) {
  SC_REPORT_FATAL(name(), "C2C ports support blocking transport only");
  return tlm::TLM_COMPLETED;
}

void Port::error(uint64_t t, const std::string& what) {
  hw_error("", t, static_cast<int64_t>(m_chip.clock().cycle_at_or_before(t)), what);
}

void Port::sweep(uint64_t horizon) {
  if (!m_in) return;
  const core::SerialRate& ser = m_in->rate();
  const uint64_t cap = m_buffered.size();
  while (!m_arrivals.empty() || !m_consumes.empty()) {
    uint64_t ta = core::kNever, tc = core::kNever;
    if (!m_arrivals.empty()) ta = m_arrivals.front().base + ser.ps(m_arrivals.front().done + 1);
    if (!m_consumes.empty()) tc = m_consumes.front().base + ser.ps(m_consumes.front().done);
    if (std::min(ta, tc) > horizon) return;
    if (ta <= tc) {
      if (m_buf_count == cap) {
        error(ta, fmt::format("RX buffer overflow on {} from {}: vector {} of the stream arrived with {} vectors "
                              "already waiting (rx_buffer_vectors = {}); no RECV took them in time",
                              basename(), m_peer, m_arrived, m_buf_count, cap));
        return;
      }
      m_buffered[(m_buf_head + m_buf_count) % cap] = ta;
      ++m_buf_count;
      ++m_arrived;
      rx_peak_occupancy.note_max(m_buf_count);
      if (++m_arrivals.front().done == m_arrivals.front().count) m_arrivals.pop_front();
    } else {
      Consumes& c = m_consumes.front();
      if (m_buf_count == 0) {
        std::string next = m_arrivals.empty() ? "no further vector was sent to this port"
                                              : fmt::format("the next vector arrives at cycle {}",
                                                            m_chip.clock().cycle_at_or_after(ta));
        error(tc, fmt::format("RX underflow on {} from {}: RECV issued at cycle {} takes its vector {} at cycle {} "
                              "but it has not arrived ({})",
                              basename(), m_peer, c.issue_cycle, c.done, m_chip.clock().cycle_at_or_after(tc), next));
        return;
      }
      rx_wait_ps += tc - m_buffered[m_buf_head];
      m_buf_head = (m_buf_head + 1) % cap;
      --m_buf_count;
      ++m_taken;
      ++rx_vectors;
      if (++c.done == c.count) m_consumes.pop_front();
    }
  }
}

void Port::finish() {
  if (m_buf_count)
    error(m_buffered[m_buf_head], fmt::format("{} vector(s) from {} arrived on {} but no RECV ever took them",
                                              m_buf_count, m_peer, basename()));
}

}  // namespace fabricvp::tsp
