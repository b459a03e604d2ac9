#include "models/c2c/link.h"

#include <algorithm>
#include <cstring>

namespace fabricvp::c2c {

namespace {
const Channel::Names kAtoB{"a_to_b",        "a_to_b_out",         "a_to_b.bursts",
                           "a_to_b.packets", "a_to_b.payload_bytes", "a_to_b.wire_bytes",
                           "a_to_b.busy_ps", "a_to_b.peak_in_flight", "a_to_b.utilization_pct"};
const Channel::Names kBtoA{"b_to_a",        "b_to_a_out",         "b_to_a.bursts",
                           "b_to_a.packets", "b_to_a.payload_bytes", "b_to_a.wire_bytes",
                           "b_to_a.busy_ps", "b_to_a.peak_in_flight", "b_to_a.utilization_pct"};
}  // namespace

Channel::Channel(Link& link, const Names& n, uint32_t trace_tid)
    : m_link(link),
      m_name(std::string(link.name()) + "." + n.dir),
      m_tid(trace_tid),
      m_rate(static_cast<uint64_t>(link.packet_bytes.get()) * 8, link.lanes, link.lane_gbps),
      m_latency_ps(link.tx_pipeline_ps + link.propagation_ps + link.rx_pipeline_ps),
      m_out(n.out),
      bursts(&link, nullptr, n.bursts, "bursts", "bursts of back-to-back packets"),
      packets(&link, nullptr, n.packets, "packets", "packets (one 320-B vector each) serialized"),
      payload_bytes(&link, nullptr, n.payload_bytes, "bytes", "vector payload bytes carried"),
      wire_bytes(&link, nullptr, n.wire_bytes, "bytes", "bytes on the wire including framing"),
      busy_ps(&link, nullptr, n.busy_ps, "ps", "time the serializer was busy"),
      peak_in_flight(&link, nullptr, n.peak_in_flight, "vectors",
                     "most vectors read at the source and not yet written at the destination"),
      utilization_pct(&link, n.utilization, "%", "busy_ps / simulated time", [this] {
        double end = sc_core::sc_time_stamp().to_seconds() * 1e12;
        return end > 0 ? 100.0 * static_cast<double>(busy_ps.get()) / end : 0.0;
      }) {
  m_out.bind(m_bw);
}

void Channel::bind_out(RxSocket& rx) { m_out.bind(rx); }

uint64_t Channel::push(const uint8_t* vector) {
  if (m_ring.empty()) m_ring.resize(8);  // most links of a large machine never carry data
  if (m_tail - m_head == m_ring.size()) {
    // Grow (only while a receiver lags behind its transmitter in host time).
    std::vector<const uint8_t*> bigger(m_ring.size() * 2);
    for (uint64_t i = m_head; i != m_tail; ++i) bigger[i & (bigger.size() - 1)] = m_ring[i & m_mask];
    m_ring.swap(bigger);
    m_mask = m_ring.size() - 1;
  }
  m_mask = m_ring.size() - 1;
  m_ring[m_tail & m_mask] = vector;
  peak_in_flight.note_max(m_tail + 1 - m_head);
  return m_tail++;
}

void Channel::keep(uint64_t k) {
  if (k < m_head || k >= m_tail) return;
  auto [it, fresh] = m_kept.try_emplace(k);
  if (!fresh) return;  // already private
  std::memcpy(it->second.data(), m_ring[k & m_mask], kVectorBytes);
  m_ring[k & m_mask] = it->second.data();
}

void Channel::b_transport(Burst& b, sc_core::sc_time& delay) {
  b.start_ps = std::max(b.ready_ps, m_tx_free);
  b.stream_index = m_next_index;
  b.channel = this;
  uint64_t dur = m_rate.ps(b.count);
  m_tx_free = b.start_ps + dur;
  m_next_index += b.count;
  ++bursts;
  packets += b.count;
  payload_bytes += static_cast<uint64_t>(b.count) * kVectorBytes;
  wire_bytes += static_cast<uint64_t>(b.count) * m_link.packet_bytes;
  busy_ps += dur;
  auto& tr = core::Context::get().trace();
  if (tr.enabled())
    tr.span(m_link.trace_pid(), m_tid, "burst", "c2c", b.start_ps, dur,
            fmt::format(R"("vectors":{},"stream_index":{})", b.count, b.stream_index));
  m_out->b_transport(b, delay);
}

tlm::tlm_sync_enum Channel::nb_transport_fw(Burst&, tlm::tlm_phase&, sc_core::sc_time&) {
  SC_REPORT_FATAL(m_name.c_str(), "C2C links support blocking transport only");
  return tlm::TLM_COMPLETED;
}

bool Channel::get_direct_mem_ptr(Burst&, tlm::tlm_dmi&) { return false; }

unsigned int Channel::transport_dbg(Burst&) { return 0; }

tlm::tlm_sync_enum Channel::Bw::nb_transport_bw(Burst&, tlm::tlm_phase&, sc_core::sc_time&) {
  SC_REPORT_FATAL("c2c", "C2C links support blocking transport only");
  return tlm::TLM_COMPLETED;
}

Link::Link(const sc_core::sc_module_name& nm, const std::string& a_name, const std::string& b_name)
    : core::Module(nm, "c2c.link"),
      lanes(this, "lanes", 4, "lanes", "SerDes lanes per direction", 1, 64),
      lane_gbps(this, "lane_gbps", 25.0, "Gb/s", "signalling rate per lane (seed 000: 25, up to 30)", 0.001, 1000.0),
      packet_bytes(this, "packet_bytes", 328, "bytes",
                   "bytes on the wire per 320-B vector (seed 000 Fig 11: 328, 97.5% efficiency)", kVectorBytes, 4096),
      tx_pipeline_ps(this, "tx_pipeline_ps", 60000, "ps",
                     "transmit pipeline: framing, PCS/FEC encode, gearbox, SerDes TX", 0, 1000000000),
      propagation_ps(this, "propagation_ps", 4000, "ps", "cable propagation (0.75 m at ~5 ns/m)", 0, 1000000000),
      rx_pipeline_ps(this, "rx_pipeline_ps", 176000, "ps",
                     "receive pipeline: CDR/deserializer, FEC decode, deframing, crossing into the core clock", 0,
                     1000000000),
      a_tx("a_tx"),
      b_tx("b_tx"),
      a_to_b(*this, kAtoB, 1),
      b_to_a(*this, kBtoA, 2),
      m_a(a_name),
      m_b(b_name) {
  a_tx.bind(a_to_b);
  b_tx.bind(b_to_a);
  auto& tr = core::Context::get().trace();
  if (tr.enabled()) {
    m_pid = tr.process(name());
    tr.thread(m_pid, 1, m_a + " -> " + m_b);
    tr.thread(m_pid, 2, m_b + " -> " + m_a);
  }
}

}  // namespace fabricvp::c2c
