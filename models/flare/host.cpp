#include "models/flare/host.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace fabricvp::flare {

namespace {
void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); }
void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }
uint16_t get16(const std::vector<uint8_t>& b, size_t at) {
  uint16_t v;
  std::memcpy(&v, &b[at], 2);
  return v;
}
uint32_t get32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, &b[at], 4);
  return v;
}
constexpr uint16_t kFromSwitch = 0xffff;

const core::SerialChannel::Names kTxNames{
    {"tx.packets", "packets", "packets sent to the switch"},
    {"tx.wire_packets", "packets", "the same (one block per packet)"},
    {"tx.bytes", "bytes", "bytes sent to the switch (headers included): the link's upstream traffic"},
    {"tx.busy_ps", "ps", "time the host's transmitter was busy"},
    {"tx.utilization", "%", "busy share of the simulated time"}};
}  // namespace

std::vector<uint8_t> block_packet(const Job& job, uint32_t host, uint64_t b, const uint8_t* data) {
  const uint64_t first = b * job.block_elems;
  const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(job.block_elems, job.elems - first));
  const uint32_t total = kHeaderBytes + count * job.esize;
  std::vector<uint8_t> p(total, 0);
  p[0] = 0x50;  // PsPIN's ip_hdr_t: version (low nibble) 0, ihl (high nibble) 5
  put16(p, 2, static_cast<uint16_t>(total));
  p[8] = 64;  // ttl
  p[9] = 17;  // UDP
  put32(p, 12, host);
  put16(p, 20, static_cast<uint16_t>(9000 + host));
  put16(p, 22, 9000);
  put16(p, 24, static_cast<uint16_t>(total - 20));
  put32(p, 28, job.reduction);
  put32(p, 32, static_cast<uint32_t>(b));
  put16(p, 36, static_cast<uint16_t>(host));
  put16(p, 38, static_cast<uint16_t>(job.hosts));
  p[40] = job.dtype;
  p[41] = job.op;
  put16(p, 42, static_cast<uint16_t>(count));
  std::memcpy(&p[kHeaderBytes], data + first * job.esize, size_t(count) * job.esize);
  return p;
}

Host::Host(const sc_core::sc_module_name& nm, uint32_t id, double link_Gbps, double latency_ns, core::ActionQueue& q,
           std::function<void(pspin::Packet)> to_switch)
    : core::Module(nm, "flare.host"),
      tx(this, kTxNames, core::SerialRate(8, 1, link_Gbps), static_cast<uint64_t>(std::llround(latency_ns * 1000.0))),
      packets_received(this, nullptr, "rx.packets", "packets", "result packets received from the switch"),
      bytes_received(this, nullptr, "rx.bytes", "bytes",
                     "bytes received from the switch (headers included): the link's downstream traffic"),
      peak_in_flight(this, nullptr, "peak_in_flight", "blocks", "most blocks in flight at once"),
      protocol_errors(this, nullptr, "protocol_errors", "packets",
                      "packets that were not an expected result (wrong reduction, block or size; a duplicate)"),
      completion_ps(this, nullptr, "completion_ps", "ps", "time the last result arrived"),
      m_id(id),
      m_q(q),
      m_to_switch(std::move(to_switch)) {}

void Host::start(const Job& job, std::vector<uint8_t> input) {
  if (input.size() != job.elems * job.esize)
    throw std::logic_error(fmt::format("{}: {} bytes of input for {} elements", name(), input.size(), job.elems));
  m_job = job;
  m_input = std::move(input);
  m_result.assign(m_input.size(), 0);
  m_blocks = job.blocks();
  m_have.assign(m_blocks, 0);
  m_sent = m_received = 0;
  m_offset = job.stagger ? static_cast<uint32_t>(uint64_t(m_id) * job.window / job.hosts) : 0;
  pump();
}

uint64_t Host::block_at(uint64_t position) const {
  const uint64_t w = m_job.window;
  const uint64_t base = position / w * w;
  const uint64_t group = std::min<uint64_t>(w, m_blocks - base);
  return base + (position - base + m_offset) % group;
}

void Host::pump() {
  const uint64_t now = m_q.time();
  while (m_sent < m_blocks && m_sent - m_received < m_job.window) {
    const uint64_t b = block_at(m_sent);
    pspin::Packet p;
    p.msg = static_cast<uint32_t>(b);
    p.index = m_id;
    p.port = m_id;
    p.bytes = block_packet(m_job, m_id, b, m_input.data());
    const uint64_t n = p.bytes.size();
    p.offered_ps = tx.serialize(now, n, n, 1) + tx.latency_ps();
    ++m_sent;
    peak_in_flight.note_max(m_sent - m_received);
    m_to_switch(std::move(p));
  }
}

void Host::deliver(pspin::EgressPacket&& p) {
  uint32_t slot;
  if (m_rx_free.empty()) {
    slot = static_cast<uint32_t>(m_rx.size());
    m_rx.emplace_back();
  } else {
    slot = m_rx_free.back();
    m_rx_free.pop_back();
  }
  m_rx[slot] = std::move(p.bytes);
  m_q.post(p.time_ps + tx.latency_ps(), *this, 0, slot);
}

void Host::act(uint32_t, uint64_t slot) {
  std::vector<uint8_t> bytes = std::move(m_rx[slot]);
  m_rx_free.push_back(static_cast<uint32_t>(slot));
  arrived(std::move(bytes));
}

void Host::arrived(std::vector<uint8_t>&& p) {
  ++packets_received;
  bytes_received += p.size();
  std::string why;
  if (p.size() < kHeaderBytes) {
    why = fmt::format("{} bytes, shorter than the headers", p.size());
  } else {
    const uint32_t reduction = get32(p, 28), b = get32(p, 32);
    const uint16_t from = get16(p, 36), count = get16(p, 42);
    const uint64_t first = uint64_t(b) * m_job.block_elems;
    if (reduction != m_job.reduction || from != kFromSwitch)
      why = fmt::format("reduction {} from {:#x} (expected {} from the switch)", reduction, from, m_job.reduction);
    else if (b >= m_blocks)
      why = fmt::format("block {} of {}", b, m_blocks);
    else if (m_have[b])
      why = fmt::format("block {} a second time", b);
    else if (count != std::min<uint64_t>(m_job.block_elems, m_job.elems - first) ||
             p.size() != kHeaderBytes + size_t(count) * m_job.esize)
      why = fmt::format("block {} with {} elements in {} bytes", b, count, p.size());
    if (why.empty()) {
      std::memcpy(&m_result[first * m_job.esize], &p[kHeaderBytes], size_t(count) * m_job.esize);
      m_have[b] = 1;
      ++m_received;
      if (done()) completion_ps.set(m_q.time());
      pump();
      return;
    }
  }
  ++protocol_errors;
  log(core::Level::warn, "a packet that is not an expected result: {}", why);
}

}  // namespace fabricvp::flare
