#include "models/flare/host.h"

#include "models/core/dtype.h"

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

std::string host_based_limits(const Job& job) {
  if (job.hosts > kMaxPeerHosts)
    return fmt::format("{} hosts: a host-based collective numbers its ring steps for at most {}", job.hosts,
                       kMaxPeerHosts);
  const uint64_t seg = (job.elems + job.hosts - 1) / job.hosts;
  if ((seg + job.block_elems - 1) / job.block_elems >= kMaxSegmentPackets)
    return fmt::format(
        "{} elements over {} hosts: a segment of {} or more packets of {} (a host-based collective "
        "numbers them in 20 bits)",
        job.elems, job.hosts, kMaxSegmentPackets, job.block_elems);
  return {};
}

std::vector<uint8_t> packet(const Job& job, uint32_t host, uint32_t dst, uint32_t block, uint64_t first, uint32_t count,
                            const uint8_t* data) {
  const uint32_t total = kHeaderBytes + count * job.esize;
  std::vector<uint8_t> p(total, 0);
  p[0] = 0x50;  // PsPIN's ip_hdr_t: version (low nibble) 0, ihl (high nibble) 5
  put16(p, 2, static_cast<uint16_t>(total));
  p[8] = 64;  // ttl
  p[9] = 17;  // UDP
  put32(p, 12, host);
  put32(p, 16, dst);
  put16(p, 20, static_cast<uint16_t>(9000 + host));
  put16(p, 22, 9000);
  put16(p, 24, static_cast<uint16_t>(total - 20));
  put16(p, 28, static_cast<uint16_t>(job.reduction));
  put16(p, 30, 0);  // seq: a dense block is one packet
  put32(p, 32, block);
  put16(p, 36, static_cast<uint16_t>(host));
  put16(p, 38, static_cast<uint16_t>(job.hosts));
  p[40] = job.dtype;
  p[41] = job.op;
  put16(p, 42, static_cast<uint16_t>(count));
  if (count) std::memcpy(&p[kHeaderBytes], data + first * job.esize, size_t(count) * job.esize);
  return p;
}

std::vector<uint8_t> sparse_packet(const Job& job, uint32_t host, uint32_t b, uint16_t seq, const Pair* pairs,
                                   uint32_t n) {
  std::vector<uint8_t> p = packet(job, host, 0, job.block_base + b, 0, 0, nullptr);
  const uint32_t total = kHeaderBytes + 8 * n;
  p.resize(total);
  put16(p, 2, static_cast<uint16_t>(total));
  put16(p, 24, static_cast<uint16_t>(total - 20));
  put16(p, 30, seq);
  put16(p, 38, static_cast<uint16_t>(job.fan_in ? job.fan_in : job.hosts));
  p[40] = static_cast<uint8_t>(job.dtype | 0x80);  // FLARE_SPARSE
  put16(p, 42, static_cast<uint16_t>(n));
  const uint64_t base = uint64_t(b) * job.block_elems;
  for (uint32_t i = 0; i < n; ++i) {
    put32(p, kHeaderBytes + 8 * i, static_cast<uint32_t>(pairs[i].index - base));
    put32(p, kHeaderBytes + 8 * i + 4, pairs[i].value);
  }
  return p;
}

std::vector<uint8_t> block_packet(const Job& job, uint32_t host, uint64_t b, const uint8_t* data) {
  const uint64_t first = b * job.block_elems;
  const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(job.block_elems, job.elems - first));
  std::vector<uint8_t> p = packet(job, host, 0, static_cast<uint32_t>(job.block_base + b), first, count, data);
  put16(p, 38, static_cast<uint16_t>(job.fan_in ? job.fan_in : job.hosts));
  return p;
}

uint32_t combine(uint8_t dtype, uint8_t op, uint32_t acc, uint32_t in) {
  if (dtype >= 2) {  // FLARE_FP16, FLARE_BF16: the 16-bit patterns in the low bits
    const bool bf = dtype == 3;
    const uint16_t a = static_cast<uint16_t>(acc), b = static_cast<uint16_t>(in);
    if (op == 0) return bf ? core::ieee::add_bf16(a, b) : core::ieee::add_fp16(a, b);
    const float fa = bf ? core::ieee::bf16_to_f32(a) : core::ieee::f16_to_f32(a);
    const float fb = bf ? core::ieee::bf16_to_f32(b) : core::ieee::f16_to_f32(b);
    if (op == 1) return fb < fa ? in : acc;
    return fb > fa ? in : acc;
  }
  if (dtype == 0) {  // FLARE_INT32
    const int32_t a = static_cast<int32_t>(acc), b = static_cast<int32_t>(in);
    if (op == 0) return acc + in;
    if (op == 1) return static_cast<uint32_t>(b < a ? b : a);
    return static_cast<uint32_t>(b > a ? b : a);
  }
  float fa, fb;
  std::memcpy(&fa, &acc, 4);
  std::memcpy(&fb, &in, 4);
  if (op == 0) {
    const float s = fa + fb;
    uint32_t u;
    std::memcpy(&u, &s, 4);
    return u;
  }
  if (op == 1) return fb < fa ? in : acc;
  return fb > fa ? in : acc;
}

Host::Host(const sc_core::sc_module_name& nm, uint32_t id, uint32_t port, double link_Gbps, double latency_ns,
           core::ActionQueue& q, std::function<void(pspin::Packet)> to_switch)
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
      m_port(port),
      m_q(q),
      m_to_switch(std::move(to_switch)) {}

void Host::start(const Job& job, std::vector<uint8_t> input) {
  if (input.size() != job.input_elems() * job.esize)
    throw std::logic_error(
        fmt::format("{}: {} bytes of input for {} elements", name(), input.size(), job.input_elems()));
  if (job.kind != Collective::allreduce && (!job.ring || job.sparse || job.elems % job.hosts))
    throw std::logic_error(fmt::format("{}: a host-based collective of whole segments only", name()));
  m_job = job;
  m_input = std::move(input);
  m_result.assign(m_input.size(), 0);
  m_blocks = job.blocks();
  m_have.assign(m_blocks, 0);
  m_sent = m_received = 0;
  m_offset = job.stagger ? static_cast<uint32_t>(uint64_t(m_id) * job.window / job.hosts) : 0;
  if (!job.ring) {
    pump();
    return;
  }
  start_host_based();
  // what a neighbour already sent of this one
  std::vector<std::vector<uint8_t>> early;
  early.swap(m_early);
  for (auto& q : early) arrived(std::move(q), true);
}

void Host::start_host_based() {
  const uint32_t n = m_job.hosts;
  m_ring_packets = m_ring_received = 0;
  if (m_job.kind == Collective::alltoall) {
    // Own segment in place; then segment j to host j, peers in turn from the next host on.
    m_result.assign(m_job.elems * m_job.esize, 0);
    const size_t es = m_job.esize;
    std::memcpy(&m_result[seg_first(m_id) * es], &m_input[seg_first(m_id) * es],
                (seg_first(m_id + 1) - seg_first(m_id)) * es);
    m_ring_got.assign(n, {});
    for (uint32_t j = 0; j < n; ++j)
      if (j != m_id) {
        m_ring_got[j].assign(seg_packets(m_id), 0);
        m_ring_packets += m_ring_got[j].size();
      }
    for (uint32_t r = 1; r < n; ++r) {
      const uint32_t j = (m_id + r) % n;
      for (uint32_t p = 0; p < seg_packets(j); ++p) {
        const uint64_t first = seg_first(j) + uint64_t(p) * m_job.block_elems;
        const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(m_job.block_elems, seg_first(j + 1) - first));
        peer_send(j, p, r << 20 | p, first, count, m_input.data());
      }
    }
    if (done()) completed();
    return;
  }
  // The ring, in place on the result: all-reduce = steps [0, 2 (n - 1)), reduce-scatter the first n - 1,
  // all-gather the last n - 1; alone, their segments are shifted by one so that host i ends (reduce-scatter)
  // or starts (all-gather) with segment i. The first step sends at once.
  m_t0 = m_job.kind == Collective::allgather ? n - 1 : 0;
  m_t1 = m_job.kind == Collective::reducescatter ? n - 1 : 2 * (n - 1);
  m_shift = m_job.kind == Collective::allreduce ? 0 : n - 1;
  if (m_job.kind == Collective::allgather) {
    m_result.assign(m_job.elems * m_job.esize, 0);
    std::memcpy(&m_result[seg_first(m_id) * m_job.esize], m_input.data(), m_input.size());
  } else {
    m_result = m_input;
  }
  m_ring_got.assign(m_t1 - m_t0, {});
  for (uint32_t t = m_t0; t < m_t1; ++t) {
    m_ring_got[t - m_t0].assign(seg_packets(ring_receives(t)), 0);
    m_ring_packets += m_ring_got[t - m_t0].size();
  }
  for (uint32_t p = 0; p < seg_packets(ring_sends(m_t0)); ++p) ring_send(m_t0, p);
  if (done()) completed();
}

uint32_t Host::seg_packets(uint32_t s) const {
  const uint64_t n = seg_first(s + 1) - seg_first(s);
  return static_cast<uint32_t>((n + m_job.block_elems - 1) / m_job.block_elems);
}

uint32_t Host::ring_sends(uint32_t t) const {
  const uint32_t n = m_job.hosts, rs = n - 1;
  return ((t < rs ? (m_id + n - t % n) % n : (m_id + 1 + n - (t - rs) % n) % n) + m_shift) % n;
}

uint32_t Host::ring_receives(uint32_t t) const {
  const uint32_t n = m_job.hosts, rs = n - 1;
  return ((t < rs ? (m_id + 2 * n - t - 1) % n : (m_id + n - (t - rs) % n) % n) + m_shift) % n;
}

void Host::ring_send(uint32_t t, uint32_t p) {
  const uint32_t s = ring_sends(t);
  const uint64_t first = seg_first(s) + uint64_t(p) * m_job.block_elems;
  const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(m_job.block_elems, seg_first(s + 1) - first));
  peer_send((m_id + 1) % m_job.hosts, t << 20 | p, t << 20 | p, first, count, m_result.data());
}

void Host::peer_send(uint32_t dst, uint32_t block, uint32_t msg, uint64_t first, uint32_t count, const uint8_t* data) {
  std::vector<uint8_t> q = packet(m_job, m_id, dst, block, first, count, data);
  put16(q, 22, kPeerPort);
  send(std::move(q), kPeerMessage | msg);
}

std::string Host::alltoall_arrived(const std::vector<uint8_t>& p) {
  const uint32_t k = get32(p, 32);
  const uint16_t from = get16(p, 36), count = get16(p, 42);
  if (get16(p, 28) != m_job.reduction || from >= m_job.hosts || from == m_id)
    return fmt::format("reduction {} from host {}", get16(p, 28), from);
  if (k >= m_ring_got[from].size()) return fmt::format("packet {} from host {}", k, from);
  if (m_ring_got[from][k]) return fmt::format("packet {} from host {} a second time", k, from);
  // sender `from`'s segment m_id, packet k -> this host's segment `from`
  const uint64_t at = uint64_t(k) * m_job.block_elems, seg = seg_first(m_id + 1) - seg_first(m_id);
  if (count != std::min<uint64_t>(m_job.block_elems, seg - at) ||
      p.size() != kHeaderBytes + size_t(count) * m_job.esize)
    return fmt::format("packet {} from host {} with {} elements in {} bytes", k, from, count, p.size());
  std::memcpy(&m_result[(seg_first(from) + at) * m_job.esize], &p[kHeaderBytes], size_t(count) * m_job.esize);
  m_ring_got[from][k] = 1;
  ++m_ring_received;
  if (done()) completed();
  return {};
}

std::string Host::ring_arrived(const std::vector<uint8_t>& p) {
  if (m_job.kind == Collective::alltoall) return alltoall_arrived(p);
  const uint32_t field = get32(p, 32), t = field >> 20, k = field & 0xfffff;
  const uint16_t from = get16(p, 36), count = get16(p, 42);
  if (get16(p, 28) != m_job.reduction || from != (m_id + m_job.hosts - 1) % m_job.hosts)
    return fmt::format("reduction {} from host {}", get16(p, 28), from);
  if (t < m_t0 || t >= m_t1 || k >= m_ring_got[t - m_t0].size()) return fmt::format("step {} packet {}", t, k);
  if (m_ring_got[t - m_t0][k]) return fmt::format("step {} packet {} a second time", t, k);
  const uint32_t s = ring_receives(t);
  const uint64_t first = seg_first(s) + uint64_t(k) * m_job.block_elems;
  if (count != std::min<uint64_t>(m_job.block_elems, seg_first(s + 1) - first) ||
      p.size() != kHeaderBytes + size_t(count) * m_job.esize)
    return fmt::format("step {} packet {} with {} elements in {} bytes", t, k, count, p.size());
  uint8_t* mine = &m_result[first * m_job.esize];
  const uint8_t* in = &p[kHeaderBytes];
  if (t < m_job.hosts - 1) {  // reduce-scatter: op(own, received), as the switch kernels do
    const uint32_t es = m_job.esize;
    for (uint32_t e = 0; e < count; ++e) {
      uint32_t a = 0, b = 0;  // little endian: a 16-bit element in the low bits
      std::memcpy(&a, mine + es * e, es);
      std::memcpy(&b, in + es * e, es);
      const uint32_t r = combine(m_job, a, b);
      std::memcpy(mine + es * e, &r, es);
    }
  } else {  // all-gather: store
    std::memcpy(mine, in, size_t(count) * m_job.esize);
  }
  m_ring_got[t - m_t0][k] = 1;
  ++m_ring_received;
  if (t + 1 < m_t1) ring_send(t + 1, k);  // what it just received goes on
  if (done()) completed();
  return {};
}

void Host::completed() {
  if (m_job.ring && m_job.kind == Collective::reducescatter)  // its own segment
    m_result = std::vector<uint8_t>(m_result.begin() + static_cast<ptrdiff_t>(seg_first(m_id) * m_job.esize),
                                    m_result.begin() + static_cast<ptrdiff_t>(seg_first(m_id + 1) * m_job.esize));
  completion_ps.set(m_q.time());
  if (m_on_done) m_q.at(m_q.time(), m_on_done);
}

void Host::send(std::vector<uint8_t>&& bytes, uint32_t msg) {
  pspin::Packet p;
  p.msg = msg;
  p.index = m_id;
  p.port = m_port;
  p.bytes = std::move(bytes);
  const uint64_t n = p.bytes.size();
  p.offered_ps = tx.serialize(m_q.time(), n, n, 1) + tx.latency_ps();
  m_to_switch(std::move(p));
}

uint64_t Host::block_at(uint64_t position) const {
  const uint64_t w = m_job.window;
  const uint64_t base = position / w * w;
  const uint64_t group = std::min<uint64_t>(w, m_blocks - base);
  return base + (position - base + m_offset) % group;
}

void Host::pump() {
  while (m_sent < m_blocks && m_sent - m_received < m_job.window) {
    const uint64_t b = block_at(m_sent);
    ++m_sent;
    peak_in_flight.note_max(m_sent - m_received);
    if (!m_job.sparse) {
      send(block_packet(m_job, m_id, b, m_input.data()), static_cast<uint32_t>(m_job.block_base + b));
      continue;
    }
    const uint64_t first = m_run.first[b], n = m_run.first[b + 1] - first;
    const uint32_t packets = sparse_packets_of(b);
    for (uint32_t k = 0; k < packets; ++k) {
      const uint64_t at = first + uint64_t(k) * kSparsePairs;
      const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(kSparsePairs, first + n - at));
      const uint16_t seq = static_cast<uint16_t>(k | (k + 1 == packets ? kLast : 0));
      send(sparse_packet(m_job, m_id, static_cast<uint32_t>(b), seq, m_run.input.data() + at, count),
           static_cast<uint32_t>(m_job.block_base + b));
    }
  }
}

uint32_t Host::sparse_packets_of(uint64_t b) const {
  // its pairs in the block's range, kSparsePairs a packet, at least one packet
  const uint64_t n = m_run.first[b + 1] - m_run.first[b];
  return static_cast<uint32_t>(std::max<uint64_t>(1, (n + kSparsePairs - 1) / kSparsePairs));
}

uint64_t Host::sparse_packets() const {
  uint64_t total = 0;
  for (uint64_t b = 0; b < m_blocks; ++b) total += sparse_packets_of(b);
  return total;
}

void Host::start_sparse(const Job& job, std::vector<Pair> input) {
  m_job = job;
  m_run.input = std::move(input);
  m_blocks = job.blocks();
  m_run.first.assign(m_blocks + 1, 0);
  uint64_t at = 0;
  for (uint64_t b = 0; b <= m_blocks; ++b) {
    const uint64_t end = std::min<uint64_t>(b * job.block_elems, job.elems);
    while (at < m_run.input.size() && m_run.input[at].index < end) {
      if (at && m_run.input[at].index <= m_run.input[at - 1].index)
        throw std::logic_error(fmt::format("{}: sparse input not in increasing index order", name()));
      ++at;
    }
    m_run.first[b] = at;
  }
  if (at != m_run.input.size())
    throw std::logic_error(fmt::format("{}: a sparse input index beyond {} elements", name(), job.elems));
  m_run.result.assign(m_blocks, {});
  m_open.assign(m_blocks, {});
  m_have.assign(m_blocks, 0);
  m_sent = m_received = 0;
  m_offset = job.stagger ? static_cast<uint32_t>(uint64_t(m_id) * job.window / job.hosts) : 0;
  pump();
}

std::string Host::sparse_arrived(std::vector<uint8_t>&& p) {
  const uint32_t reduction = get16(p, 28), b = get32(p, 32) - m_job.block_base;
  const uint16_t seq = get16(p, 30), from = get16(p, 36), count = get16(p, 42);
  if (reduction != m_job.reduction || from != kFromSwitch || p[40] != (m_job.dtype | 0x80))
    return fmt::format("reduction {} dtype {:#x} from {:#x} (expected {}, {:#x}, from the switch)", reduction, p[40],
                       from, m_job.reduction, m_job.dtype | 0x80);
  if (b >= m_blocks) return fmt::format("block {} of {}", b, m_blocks);
  if (m_have[b]) return fmt::format("block {} after its last packet", b);
  if (count > kSparsePairs || p.size() != kHeaderBytes + size_t(count) * 8)
    return fmt::format("block {} with {} pairs in {} bytes", b, count, p.size());
  Open& o = m_open[b];
  const uint32_t k = seq & (kLast - 1);
  if (o.packets.size() <= k) o.packets.resize(k + 1);
  if (!o.packets[k].empty()) return fmt::format("block {} packet {} a second time", b, k);
  o.weight += weight(seq);
  if (o.weight > kUnit) return fmt::format("block {}: packets weigh more than one contribution", b);
  o.packets[k] = std::move(p);
  if (o.weight < kUnit) return {};
  // complete: reduce its packets in their order (first occurrence of an offset stored, the others combined)
  std::vector<std::pair<uint32_t, uint32_t>> acc;  // offset, value
  std::vector<uint32_t> where(m_job.block_elems, UINT32_MAX);
  for (const auto& q : o.packets) {
    if (q.empty()) return fmt::format("block {}: a packet missing at its weight", b);
    for (uint32_t i = 0; i < get16(q, 42); ++i) {
      const uint32_t off = get32(q, kHeaderBytes + 8 * i), v = get32(q, kHeaderBytes + 8 * i + 4);
      if (off >= m_job.block_elems) return fmt::format("block {}: offset {} beyond its range", b, off);
      if (where[off] == UINT32_MAX) {
        where[off] = static_cast<uint32_t>(acc.size());
        acc.emplace_back(off, v);
      } else {
        acc[where[off]].second = combine(m_job, acc[where[off]].second, v);
      }
    }
  }
  std::sort(acc.begin(), acc.end());
  std::vector<Pair>& r = m_run.result[b];
  r.reserve(acc.size());
  for (const auto& [off, v] : acc) r.push_back({off, v});
  o = Open{};
  m_have[b] = 1;
  ++m_received;
  if (done()) completed();
  pump();
  return {};
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

void Host::arrived(std::vector<uint8_t>&& p, bool kept) {
  if (!kept) {  // a kept packet was counted when it arrived
    ++packets_received;
    bytes_received += p.size();
  }
  std::string why;
  if (p.size() < kHeaderBytes) {
    why = fmt::format("{} bytes, shorter than the headers", p.size());
  } else if (get16(p, 22) == kPeerPort && (!m_job.ring || done() || get16(p, 28) != m_job.reduction)) {
    m_early.push_back(std::move(p));  // a later host-based collective's, from a host already there
    return;
  } else if (get16(p, 22) == kPeerPort) {
    why = ring_arrived(p);
    if (why.empty()) return;
  } else if (m_job.sparse) {
    why = sparse_arrived(std::move(p));
    if (why.empty()) return;
  } else {
    const uint32_t reduction = get16(p, 28), b = get32(p, 32) - m_job.block_base;
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
      if (done()) completed();
      pump();
      return;
    }
  }
  ++protocol_errors;
  log(core::Level::warn, "a packet that is not an expected result: {}", why);
}

}  // namespace fabricvp::flare
