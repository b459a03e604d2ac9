#include "models/npu/afi.h"

#include "models/core/context.h"

#include <fmt/format.h>

#include <cmath>

namespace fabricvp::npu {

LinkChannel::LinkChannel(FabricLink& link, const char* dir, uint32_t rx_port, const char* n_messages,
                         const char* n_bytes, const char* n_packets, const char* n_busy, const char* n_peak,
                         const char* n_util)
    : in((std::string(dir) + "_in").c_str()),
      out((std::string(dir) + "_out").c_str()),
      messages(&link, nullptr, n_messages, "messages", "messages carried"),
      bytes(&link, nullptr, n_bytes, "bytes", "payload bytes carried"),
      packets(&link, nullptr, n_packets, "packets", "packets carried (packet_bytes of payload each, last one partial)"),
      busy_ps(&link, nullptr, n_busy, "ps", "time the serializer was busy"),
      peak_out_buffer_bytes(&link, nullptr, n_peak, "bytes",
                            "most bytes waiting in the sender's output buffer for this link"),
      utilization_pct(&link, n_util, "%", "busy share of the simulated time (payload + header flits)",
                      [this] {
                        const uint64_t end = m_link.end_ps();
                        return end ? 100.0 * static_cast<double>(busy_ps.get()) / static_cast<double>(end) : 0.0;
                      }),
      m_link(link),
      m_rx_port(rx_port),
      m_tid(std::string(dir) == "a_to_b" ? 1 : 2) {
  in.bind(*this);
  out.bind(m_bw);
}

void LinkChannel::b_transport(Message& m, sc_core::sc_time& delay) {
  const uint64_t now = sc_core::sc_time_stamp().value() + delay.value();
  if (m.ready_ps < now) m.ready_ps = now;
  const uint64_t n = m.data.size();
  m.start_ps = std::max(m.ready_ps, m_free);
  const uint64_t ser = m_link.ser_ps(n);
  m_free = m.start_ps + ser;
  m.arrival_ps = m_free + m_link.latency_ps();
  m.port = m_rx_port;
  // Output buffer: this message waits from ready to the end of its serialization.
  while (!m_queued.empty() && m_queued.front().first <= m.ready_ps) {
    m_queued_bytes -= m_queued.front().second;
    m_queued.pop_front();
  }
  m_queued.emplace_back(m_free, n);
  m_queued_bytes += n;
  peak_out_buffer_bytes.note_max(m_queued_bytes);
  ++messages;
  bytes += n;
  const uint32_t pb = m_link.packet_bytes.get();
  packets += (n + pb - 1) / pb;
  busy_ps += ser;
  auto& tr = core::Context::get().trace();
  if (tr.enabled() && tr.in_window(m.start_ps, m_free))
    tr.span(m_link.trace_pid(), m_tid, "message", "link", m.start_ps, ser,
            fmt::format(R"("bytes":{},"arrival_ps":{})", n, m.arrival_ps));
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  out->b_transport(m, d);
}

tlm::tlm_sync_enum LinkChannel::nb_transport_fw(Message& m, tlm::tlm_phase&, sc_core::sc_time& t) {
  b_transport(m, t);
  return tlm::TLM_COMPLETED;
}

FabricLink::FabricLink(const sc_core::sc_module_name& nm, const Defaults& d, uint32_t a, uint32_t a_port, uint32_t b,
                       uint32_t b_port)
    : core::Module(nm, "npu.link"),
      GBps(this, "GBps", d.GBps, "GB/s", "bandwidth of one direction (1 GB = 1e9 bytes)", 0.001, 100000.0),
      efficiency(this, "efficiency", 0.94, "", "data flits / (data + header flits) (seed 001 Table IV: 94 %)", 0.01,
                 1.0),
      latency_cycles(this, "latency_cycles", d.latency_cycles, "cycles",
                     "from the end of serialization to the receiver's input buffer", 0u, 1000000u),
      clock_mhz(this, "clock_mhz", 1000.0, "MHz", "clock of latency_cycles", 1.0, 100000.0),
      packet_bytes(this, "packet_bytes", d.packet_bytes, "bytes", "payload per packet (counted, seed 001 Table IV)", 1u,
                   1u << 20),
      a_to_b(*this, "a_to_b", b_port, "a_to_b.messages", "a_to_b.bytes", "a_to_b.packets", "a_to_b.busy_ps",
             "a_to_b.peak_out_buffer_bytes", "a_to_b.utilization"),
      b_to_a(*this, "b_to_a", a_port, "b_to_a.messages", "b_to_a.bytes", "b_to_a.packets", "b_to_a.busy_ps",
             "b_to_a.peak_out_buffer_bytes", "b_to_a.utilization"),
      m_a(a),
      m_b(b),
      m_rate(8, 1, GBps.get() * 8.0 * efficiency.get()) {
  m_latency_ps = core::Clock(clock_mhz.get()).ps(latency_cycles.get());
  auto& tr = core::Context::get().trace();
  if (tr.enabled()) {
    m_pid = tr.process(name());
    tr.thread(m_pid, 1, "npu" + std::to_string(a) + " -> npu" + std::to_string(b));
    tr.thread(m_pid, 2, "npu" + std::to_string(b) + " -> npu" + std::to_string(a));
  }
}

}  // namespace fabricvp::npu
