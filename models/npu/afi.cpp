#include "models/npu/afi.h"

#include "models/core/context.h"

#include <fmt/format.h>

#include <cmath>

namespace fabricvp::npu {

namespace {
#define FABRICVP_DIR_NAMES(d)                                                                           \
  LinkChannel::Names {                                                                                  \
    d,                                                                                                  \
        {{d ".messages", "messages", "messages carried"},                                               \
         {d ".packets", "packets", "packets carried (packet_bytes of payload each, last one partial)"}, \
         {d ".bytes", "bytes", "payload bytes carried"},                                                \
         {d ".busy_ps", "ps", "time the serializer was busy"},                                          \
         {d ".utilization", "%", "busy share of the simulated time (payload + header flits)"}},         \
        d ".peak_out_buffer_bytes"                                                                      \
  }
const LinkChannel::Names kAtoB = FABRICVP_DIR_NAMES("a_to_b");
const LinkChannel::Names kBtoA = FABRICVP_DIR_NAMES("b_to_a");
#undef FABRICVP_DIR_NAMES
}  // namespace

uint32_t MessagePool::take() {
  uint32_t id;
  if (m_free.empty()) {
    id = static_cast<uint32_t>(m_next.size());
    if ((id & (kBlock - 1)) == 0) m_blocks.push_back(std::make_unique<Message[]>(kBlock));
    m_next.push_back(kNone);
    return id;
  }
  id = m_free.back();
  m_free.pop_back();
  Message& m = (*this)[id];
  m.data.clear();  // keeps its capacity
  m.set_header(Message{});
  m_next[id] = kNone;
  return id;
}

uint32_t MessagePool::adopt(Message& in) {
  const uint32_t id = take();
  Message& m = (*this)[id];
  m.set_header(in);
  m.data.swap(in.data);  // `in` gets this slot's old (empty) buffer
  return id;
}

LinkChannel::LinkChannel(FabricLink& link, const Names& n, uint32_t rx_port)
    : core::SerialChannel(&link, n.serial, core::SerialRate(8, 1, link.GBps.get() * 8.0 * link.efficiency.get()),
                          core::Clock(link.clock_mhz.get()).ps(link.latency_cycles.get())),
      m_packet_bytes(link.packet_bytes.get()),
      m_rx_port(rx_port),
      m_tid(std::string(n.dir) == "a_to_b" ? 1 : 2),
      peak_out_buffer_bytes(&link, nullptr, n.peak_out_buffer_bytes, "bytes",
                            "most bytes waiting in the sender's output buffer for this link"),
      in((std::string(n.dir) + "_in").c_str()),
      out((std::string(n.dir) + "_out").c_str()),
      m_link(link) {
  in.bind(*this);
  out.bind(m_bw);
}

void LinkChannel::b_transport(Message& m, sc_core::sc_time& delay) {
  const uint64_t now = sc_core::sc_time_stamp().value() + delay.value();
  if (m.ready_ps < now) m.ready_ps = now;
  const uint64_t n = m.bytes;
  const uint64_t pb = m_packet_bytes;
  m.start_ps = serialize(m.ready_ps, n, n, (n + pb - 1) / pb);
  const uint64_t ser = rate().ps(n);
  const uint64_t end = m.start_ps + ser;
  m.arrival_ps = end + latency_ps();
  m.port = m_rx_port;
  // Output buffer: this message waits from ready to the end of its serialization.
  size_t mask = m_queued.size() - 1;
  while (m_count && m_queued[m_head].first <= m.ready_ps) {
    m_queued_bytes -= m_queued[m_head].second;
    m_head = (m_head + 1) & mask;
    --m_count;
  }
  if (m_count == m_queued.size()) {  // grow the ring, oldest first
    std::vector<std::pair<uint64_t, uint64_t>> grown(2 * m_count);
    for (size_t i = 0; i < m_count; ++i) grown[i] = m_queued[(m_head + i) & mask];
    m_queued.swap(grown);
    m_head = 0;
    mask = m_queued.size() - 1;
  }
  m_queued[(m_head + m_count++) & mask] = {end, n};
  m_queued_bytes += n;
  peak_out_buffer_bytes.note_max(m_queued_bytes);
  auto& tr = core::Context::get().trace();
  if (tr.enabled() && tr.in_window(m.start_ps, end))
    tr.span(m_link.trace_pid(), m_tid, "message", "link", m.start_ps, ser,
            fmt::format(R"("bytes":{},"arrival_ps":{})", n, m.arrival_ps));
  if (!m_to) m_to = &*out.operator->();  // the receiver bound to `out` (an error if none)
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  m_to->b_transport(m, d);
}

FabricLink::FabricLink(const sc_core::sc_module_name& nm, const Defaults& d, uint32_t a, uint32_t a_port, uint32_t b,
                       uint32_t b_port)
    : core::Module(nm, "npu.link"),
      GBps(this, "GBps", d.GBps, "GB/s", "bandwidth of one direction (1 GB = 1e9 bytes)", 0.001, 100000.0),
      efficiency(this, "efficiency", d.efficiency, "", "data flits / (data + header flits) (seed 001 Table IV: 94 %)",
                 0.01, 1.0),
      latency_cycles(this, "latency_cycles", d.latency_cycles, "cycles",
                     "from the end of serialization to the receiver's input buffer", 0u, 1000000u),
      clock_mhz(this, "clock_mhz", 1000.0, "MHz", "clock of latency_cycles", 1.0, 100000.0),
      packet_bytes(this, "packet_bytes", d.packet_bytes, "bytes", "payload per packet (counted, seed 001 Table IV)", 1u,
                   1u << 20),
      a_to_b(*this, kAtoB, b_port),
      b_to_a(*this, kBtoA, a_port),
      m_a(a),
      m_b(b) {
  auto& tr = core::Context::get().trace();
  if (tr.enabled()) {
    m_pid = tr.process(name());
    tr.thread(m_pid, 1, "npu" + std::to_string(a) + " -> npu" + std::to_string(b));
    tr.thread(m_pid, 2, "npu" + std::to_string(b) + " -> npu" + std::to_string(a));
  }
}

}  // namespace fabricvp::npu
