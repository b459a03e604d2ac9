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

void combine_all(const Job& job, uint32_t* acc, const uint32_t* in, size_t n) {
  auto each = [&](auto&& f) {
    for (size_t i = 0; i < n; ++i) acc[i] = f(acc[i], in[i]);
  };
  if (job.op == 3) return each(job.user_op);
  if (job.op == 0 && job.dtype == 0) return each([](uint32_t a, uint32_t b) { return a + b; });
  if (job.op == 0 && job.dtype == 1)  // fp32 sums: one IEEE addition each, in the same order (vectorizes)
    return each([](uint32_t a, uint32_t b) {
      float fa, fb;
      std::memcpy(&fa, &a, 4);
      std::memcpy(&fb, &b, 4);
      const float s = fa + fb;
      uint32_t u;
      std::memcpy(&u, &s, 4);
      return u;
    });
  each([dtype = job.dtype, op = job.op](uint32_t a, uint32_t b) { return combine(dtype, op, a, b); });
}

std::vector<uint8_t> block_packet(const Job& job, uint32_t host, uint64_t b, const uint8_t* elems) {
  std::vector<uint8_t> p =
      packet(job, host, 0, static_cast<uint32_t>(job.block_base + b), 0, job.block_count(b), elems);
  put16(p, 38, static_cast<uint16_t>(job.fan_in ? job.fan_in : job.hosts));
  return p;
}

SharedVectors::SharedVectors(const Job& job, Fill fill)
    : m_job(job),
      m_fill(std::move(fill)),
      m_result(job.elems * job.esize, 0),
      m_have(job.blocks() * job.hosts, false),
      m_copies(job.blocks(), 0),
      m_differing(job.blocks(), 0) {
  if (job.ring || job.sparse || job.kind != Collective::allreduce)
    throw std::logic_error("shared vectors: an in-network dense allreduce only");
}

size_t SharedVectors::block_bytes(uint64_t b) const { return size_t(m_job.block_count(b)) * m_job.esize; }

void SharedVectors::arrived(uint32_t host, uint64_t b, const uint8_t* data, size_t bytes) {
  if (b >= m_job.blocks() || host >= m_job.hosts || bytes != block_bytes(b) || m_have[b * m_job.hosts + host])
    throw std::logic_error(fmt::format("shared vectors: block {} of host {} ({} bytes) not expected", b, host, bytes));
  uint8_t* first = &m_result[b * m_job.block_elems * m_job.esize];
  m_have[b * m_job.hosts + host] = true;
  if (m_copies[b]++ == 0) {
    std::memcpy(first, data, bytes);
  } else if (std::memcmp(first, data, bytes) != 0) {
    m_differ.emplace(std::make_pair(b, host), std::vector<uint8_t>(data, data + bytes));
    ++m_differing[b];
  }
}

std::vector<uint8_t> SharedVectors::result(uint32_t host) const {
  std::vector<uint8_t> out(m_result.size(), 0);
  for (uint64_t b = 0; b < m_job.blocks(); ++b)
    if (const uint8_t* p = block(host, b)) std::memcpy(&out[b * m_job.block_elems * m_job.esize], p, block_bytes(b));
  return out;
}

const uint8_t* SharedVectors::block(uint32_t host, uint64_t b) const {
  if (b >= m_job.blocks() || host >= m_job.hosts || !m_have[b * m_job.hosts + host]) return nullptr;
  if (m_differing[b]) {
    auto it = m_differ.find(std::make_pair(b, host));
    if (it != m_differ.end()) return it->second.data();
  }
  return &m_result[b * m_job.block_elems * m_job.esize];
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
      peak_collectives(this, nullptr, "peak_collectives", "collectives",
                       "most collectives in flight at this host at once (a training run's overlap)"),
      protocol_errors(this, nullptr, "protocol_errors", "packets",
                      "packets that were not an expected result (wrong reduction, block or size; a duplicate)"),
      completion_ps(this, nullptr, "completion_ps", "ps", "time the last result arrived"),
      m_id(id),
      m_port(port),
      m_q(q),
      m_to_switch(std::move(to_switch)) {}

Host::Run& Host::add_run(const Job& job) {
  for (const auto& run : m_runs)
    if (run->job.reduction == job.reduction)
      throw std::logic_error(fmt::format("{}: reduction {} started while one is still here", name(), job.reduction));
  m_runs.push_back(std::make_unique<Run>());
  uint64_t open = 0;
  for (const auto& run : m_runs) open += !run->finished;
  peak_collectives.note_max(open);
  Run& r = *m_runs.back();
  r.job = job;
  r.blocks = job.blocks();
  r.have.assign(r.blocks, 0);
  r.offset = job.stagger ? static_cast<uint32_t>(uint64_t(m_id) * job.window / job.hosts) : 0;
  return r;
}

Host::Run* Host::find(uint32_t reduction) {
  for (const auto& run : m_runs)
    if (run->job.reduction == reduction && !run->finished) return run.get();
  return nullptr;
}

void Host::start(const Job& job, std::vector<uint8_t> input, bool keep_input) {
  if (input.size() != job.input_elems() * job.esize)
    throw std::logic_error(
        fmt::format("{}: {} bytes of input for {} elements", name(), input.size(), job.input_elems()));
  if (!job.ring || job.sparse || (job.kind != Collective::allreduce && job.elems % job.hosts))
    throw std::logic_error(
        fmt::format("{}: a host-based collective (of whole segments but an allreduce) only: in-network ones start with "
                    "their shared vectors or sparse inputs",
                    name()));
  if (!keep_input && !(job.ring && job.kind == Collective::allreduce))
    throw std::logic_error(fmt::format("{}: only a ring allreduce may drop its input", name()));
  Run& r = add_run(job);
  r.input = std::move(input);
  if (!keep_input) {  // the ring runs in place on it
    r.result = std::move(r.input);
    r.input.clear();
  }
  start_host_based(r);
  // what a neighbour already sent of this one
  std::vector<std::vector<uint8_t>> early, later;
  early.swap(m_early);
  for (auto& q : early)
    if (get16(q, 28) == job.reduction)
      arrived(std::move(q), true);
    else
      later.push_back(std::move(q));
  for (auto& q : later) m_early.push_back(std::move(q));
}

void Host::start(std::shared_ptr<SharedVectors> vectors) {
  if (!vectors || m_id >= vectors->job().hosts)
    throw std::logic_error(fmt::format("{}: no shared vectors, or not one of their hosts", name()));
  Run& r = add_run(vectors->job());
  r.shared = std::move(vectors);
  pump();
}

void Host::start_host_based(Run& r) {
  const uint32_t n = r.job.hosts;
  r.ring_packets = r.ring_received = 0;
  if (r.job.kind == Collective::alltoall) {
    // Own segment in place; then segment j to host j, peers in turn from the next host on.
    r.result.assign(r.job.elems * r.job.esize, 0);
    const size_t es = r.job.esize;
    std::memcpy(&r.result[seg_first(r, m_id) * es], &r.input[seg_first(r, m_id) * es],
                (seg_first(r, m_id + 1) - seg_first(r, m_id)) * es);
    r.ring_got.assign(n, {});
    for (uint32_t j = 0; j < n; ++j)
      if (j != m_id) {
        r.ring_got[j].assign(seg_packets(r, m_id), 0);
        r.ring_packets += r.ring_got[j].size();
      }
    for (uint32_t d = 1; d < n; ++d) {
      const uint32_t j = (m_id + d) % n;
      for (uint32_t p = 0; p < seg_packets(r, j); ++p) {
        const uint64_t first = seg_first(r, j) + uint64_t(p) * r.job.block_elems;
        const uint32_t count =
            static_cast<uint32_t>(std::min<uint64_t>(r.job.block_elems, seg_first(r, j + 1) - first));
        peer_send(r, j, p, d << 20 | p, first, count, r.input.data());
      }
    }
    if (r.complete()) completed(r);
    return;
  }
  // The ring, in place on the result: all-reduce = steps [0, 2 (n - 1)), reduce-scatter the first n - 1,
  // all-gather the last n - 1; alone, their segments are shifted by one so that host i ends (reduce-scatter)
  // or starts (all-gather) with segment i. The first step sends at once.
  r.t0 = r.job.kind == Collective::allgather ? n - 1 : 0;
  r.t1 = r.job.kind == Collective::reducescatter ? n - 1 : 2 * (n - 1);
  r.shift = r.job.kind == Collective::allreduce ? 0 : n - 1;
  if (r.job.kind == Collective::allgather) {
    r.result.assign(r.job.elems * r.job.esize, 0);
    std::memcpy(&r.result[seg_first(r, m_id) * r.job.esize], r.input.data(), r.input.size());
  } else if (r.result.empty()) {  // else the input is the result already (keep_input false)
    r.result = r.input;
  }
  r.ring_got.assign(r.t1 - r.t0, {});
  for (uint32_t t = r.t0; t < r.t1; ++t) {
    r.ring_got[t - r.t0].assign(seg_packets(r, ring_receives(r, t)), 0);
    r.ring_packets += r.ring_got[t - r.t0].size();
  }
  for (uint32_t p = 0; p < seg_packets(r, ring_sends(r, r.t0)); ++p) ring_send(r, r.t0, p);
  if (r.complete()) completed(r);
}

uint32_t Host::seg_packets(const Run& r, uint32_t s) const {
  const uint64_t n = seg_first(r, s + 1) - seg_first(r, s);
  return static_cast<uint32_t>((n + r.job.block_elems - 1) / r.job.block_elems);
}

uint32_t Host::ring_sends(const Run& r, uint32_t t) const {
  const uint32_t n = r.job.hosts, rs = n - 1;
  return ((t < rs ? (m_id + n - t % n) % n : (m_id + 1 + n - (t - rs) % n) % n) + r.shift) % n;
}

uint32_t Host::ring_receives(const Run& r, uint32_t t) const {
  const uint32_t n = r.job.hosts, rs = n - 1;
  return ((t < rs ? (m_id + 2 * n - t - 1) % n : (m_id + n - (t - rs) % n) % n) + r.shift) % n;
}

void Host::ring_send(Run& r, uint32_t t, uint32_t p) {
  const uint32_t s = ring_sends(r, t);
  const uint64_t first = seg_first(r, s) + uint64_t(p) * r.job.block_elems;
  const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(r.job.block_elems, seg_first(r, s + 1) - first));
  peer_send(r, (m_id + 1) % r.job.hosts, t << 20 | p, t << 20 | p, first, count, r.result.data());
}

void Host::peer_send(const Run& r, uint32_t dst, uint32_t block, uint32_t msg, uint64_t first, uint32_t count,
                     const uint8_t* data) {
  std::vector<uint8_t> q = packet(r.job, m_id, dst, block, first, count, data);
  put16(q, 22, kPeerPort);
  send(std::move(q), kPeerMessage | msg);
}

std::string Host::alltoall_arrived(Run& r, const std::vector<uint8_t>& p) {
  const uint32_t k = get32(p, 32);
  const uint16_t from = get16(p, 36), count = get16(p, 42);
  if (get16(p, 28) != r.job.reduction || from >= r.job.hosts || from == m_id)
    return fmt::format("reduction {} from host {}", get16(p, 28), from);
  if (k >= r.ring_got[from].size()) return fmt::format("packet {} from host {}", k, from);
  if (r.ring_got[from][k]) return fmt::format("packet {} from host {} a second time", k, from);
  // sender `from`'s segment m_id, packet k -> this host's segment `from`
  const uint64_t at = uint64_t(k) * r.job.block_elems, seg = seg_first(r, m_id + 1) - seg_first(r, m_id);
  if (count != std::min<uint64_t>(r.job.block_elems, seg - at) ||
      p.size() != kHeaderBytes + size_t(count) * r.job.esize)
    return fmt::format("packet {} from host {} with {} elements in {} bytes", k, from, count, p.size());
  std::memcpy(&r.result[(seg_first(r, from) + at) * r.job.esize], &p[kHeaderBytes], size_t(count) * r.job.esize);
  r.ring_got[from][k] = 1;
  ++r.ring_received;
  if (r.complete()) completed(r);
  return {};
}

std::string Host::ring_arrived(Run& r, const std::vector<uint8_t>& p) {
  if (r.job.kind == Collective::alltoall) return alltoall_arrived(r, p);
  const uint32_t field = get32(p, 32), t = field >> 20, k = field & 0xfffff;
  const uint16_t from = get16(p, 36), count = get16(p, 42);
  if (get16(p, 28) != r.job.reduction || from != (m_id + r.job.hosts - 1) % r.job.hosts)
    return fmt::format("reduction {} from host {}", get16(p, 28), from);
  if (t < r.t0 || t >= r.t1 || k >= r.ring_got[t - r.t0].size()) return fmt::format("step {} packet {}", t, k);
  if (r.ring_got[t - r.t0][k]) return fmt::format("step {} packet {} a second time", t, k);
  const uint32_t s = ring_receives(r, t);
  const uint64_t first = seg_first(r, s) + uint64_t(k) * r.job.block_elems;
  if (count != std::min<uint64_t>(r.job.block_elems, seg_first(r, s + 1) - first) ||
      p.size() != kHeaderBytes + size_t(count) * r.job.esize)
    return fmt::format("step {} packet {} with {} elements in {} bytes", t, k, count, p.size());
  uint8_t* mine = &r.result[first * r.job.esize];
  const uint8_t* in = &p[kHeaderBytes];
  if (t < r.job.hosts - 1) {  // reduce-scatter: op(own, received), as the switch kernels do
    const uint32_t es = r.job.esize;
    for (uint32_t e = 0; e < count; ++e) {
      uint32_t a = 0, b = 0;  // little endian: a 16-bit element in the low bits
      std::memcpy(&a, mine + es * e, es);
      std::memcpy(&b, in + es * e, es);
      const uint32_t sum = combine(r.job, a, b);
      std::memcpy(mine + es * e, &sum, es);
    }
  } else {  // all-gather: store
    std::memcpy(mine, in, size_t(count) * r.job.esize);
  }
  r.ring_got[t - r.t0][k] = 1;
  ++r.ring_received;
  if (t + 1 < r.t1) ring_send(r, t + 1, k);  // what it just received goes on
  if (r.complete()) completed(r);
  return {};
}

void Host::completed(Run& r) {
  if (r.job.ring && r.job.kind == Collective::reducescatter)  // its own segment
    r.result = std::vector<uint8_t>(r.result.begin() + static_cast<ptrdiff_t>(seg_first(r, m_id) * r.job.esize),
                                    r.result.begin() + static_cast<ptrdiff_t>(seg_first(r, m_id + 1) * r.job.esize));
  r.finished = true;
  completion_ps.set(m_q.time());
  if (m_on_done) m_q.at(m_q.time(), [this, reduction = r.job.reduction] { m_on_done(reduction); });
}

Host::Finished Host::take(uint32_t reduction) {
  for (auto it = m_runs.begin(); it != m_runs.end(); ++it)
    if ((*it)->job.reduction == reduction && (*it)->finished) {
      Finished f{std::move((*it)->input), std::move((*it)->result), std::move((*it)->sparse), (*it)->shared};
      m_runs.erase(it);
      return f;
    }
  throw std::logic_error(fmt::format("{}: no finished reduction {} to take", name(), reduction));
}

bool Host::done() const {
  for (const auto& run : m_runs)
    if (!run->finished) return false;
  return true;
}

uint32_t Host::in_flight() const {
  uint64_t n = 0;
  for (const auto& run : m_runs)
    if (!run->job.ring) n += run->sent - run->received;
  return static_cast<uint32_t>(n);
}

uint64_t Host::blocks_received() const {
  uint64_t n = 0;
  for (const auto& run : m_runs) n += run->job.ring ? run->ring_received : run->received;
  return n;
}

uint64_t Host::blocks_expected() const {
  uint64_t n = 0;
  for (const auto& run : m_runs) n += run->job.ring ? run->ring_packets : run->blocks;
  return n;
}

const Host::Run& Host::last() const {
  static const Run kNone;
  return m_runs.empty() ? kNone : *m_runs.back();
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

uint64_t Host::block_at(const Run& r, uint64_t position) const {
  const uint64_t w = r.job.window;
  const uint64_t base = position / w * w;
  const uint64_t group = std::min<uint64_t>(w, r.blocks - base);
  return base + (position - base + r.offset) % group;
}

void Host::pump() {
  // The host's window bounds its blocks in flight over all its in-network collectives: the earliest started
  // sends first, a later one when the earlier have nothing left to send.
  uint64_t in_flight = this->in_flight();
  for (const auto& run : m_runs) {
    Run& r = *run;
    if (r.job.ring) continue;
    while (r.sent < r.blocks && in_flight < r.job.window) {
      const uint64_t b = block_at(r, r.sent);
      ++r.sent;
      peak_in_flight.note_max(++in_flight);
      if (r.shared) {  // the block's elements made now
        const uint64_t first = b * r.job.block_elems;
        const size_t bytes = r.shared->block_bytes(b);
        m_block.resize(bytes);
        r.shared->input(m_id, first, bytes / r.job.esize, m_block.data());
        send(block_packet(r.job, m_id, b, m_block.data()), static_cast<uint32_t>(r.job.block_base + b));
        continue;
      }
      const uint64_t first = r.sparse.first[b], n = r.sparse.first[b + 1] - first;
      const uint32_t packets = sparse_packets_of(r, b);
      for (uint32_t k = 0; k < packets; ++k) {
        const uint64_t at = first + uint64_t(k) * kSparsePairs;
        const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(kSparsePairs, first + n - at));
        const uint16_t seq = static_cast<uint16_t>(k | (k + 1 == packets ? kLast : 0));
        send(sparse_packet(r.job, m_id, static_cast<uint32_t>(b), seq, r.sparse.input.data() + at, count),
             static_cast<uint32_t>(r.job.block_base + b));
      }
    }
  }
}

uint32_t Host::sparse_packets_of(const Run& r, uint64_t b) const {
  // its pairs in the block's range, kSparsePairs a packet, at least one packet
  const uint64_t n = r.sparse.first[b + 1] - r.sparse.first[b];
  return static_cast<uint32_t>(std::max<uint64_t>(1, (n + kSparsePairs - 1) / kSparsePairs));
}

uint64_t Host::sparse_packets() const {
  const Run& r = last();
  uint64_t total = 0;
  for (uint64_t b = 0; b < r.blocks; ++b) total += sparse_packets_of(r, b);
  return total;
}

void Host::start_sparse(const Job& job, std::vector<Pair> input) {
  Run& r = add_run(job);
  r.sparse.input = std::move(input);
  r.sparse.first.assign(r.blocks + 1, 0);
  uint64_t at = 0;
  for (uint64_t b = 0; b <= r.blocks; ++b) {
    const uint64_t end = std::min<uint64_t>(b * job.block_elems, job.elems);
    while (at < r.sparse.input.size() && r.sparse.input[at].index < end) {
      if (at && r.sparse.input[at].index <= r.sparse.input[at - 1].index)
        throw std::logic_error(fmt::format("{}: sparse input not in increasing index order", name()));
      ++at;
    }
    r.sparse.first[b] = at;
  }
  if (at != r.sparse.input.size())
    throw std::logic_error(fmt::format("{}: a sparse input index beyond {} elements", name(), job.elems));
  r.sparse.result.assign(r.blocks, {});
  r.open.assign(r.blocks, {});
  pump();
}

std::string Host::sparse_arrived(Run& r, std::vector<uint8_t>&& p) {
  const uint32_t reduction = get16(p, 28), b = get32(p, 32) - r.job.block_base;
  const uint16_t seq = get16(p, 30), from = get16(p, 36), count = get16(p, 42);
  if (reduction != r.job.reduction || from != kFromSwitch || p[40] != (r.job.dtype | 0x80))
    return fmt::format("reduction {} dtype {:#x} from {:#x} (expected {}, {:#x}, from the switch)", reduction, p[40],
                       from, r.job.reduction, r.job.dtype | 0x80);
  if (b >= r.blocks) return fmt::format("block {} of {}", b, r.blocks);
  if (r.have[b]) return fmt::format("block {} after its last packet", b);
  if (count > kSparsePairs || p.size() != kHeaderBytes + size_t(count) * 8)
    return fmt::format("block {} with {} pairs in {} bytes", b, count, p.size());
  Run::Open& o = r.open[b];
  const uint32_t k = seq & (kLast - 1);
  if (o.packets.size() <= k) o.packets.resize(k + 1);
  if (!o.packets[k].empty()) return fmt::format("block {} packet {} a second time", b, k);
  o.weight += weight(seq);
  if (o.weight > kUnit) return fmt::format("block {}: packets weigh more than one contribution", b);
  o.packets[k] = std::move(p);
  if (o.weight < kUnit) return {};
  // complete: reduce its packets in their order (first occurrence of an offset stored, the others combined)
  std::vector<std::pair<uint32_t, uint32_t>> acc;  // offset, value
  std::vector<uint32_t> where(r.job.block_elems, UINT32_MAX);
  for (const auto& q : o.packets) {
    if (q.empty()) return fmt::format("block {}: a packet missing at its weight", b);
    for (uint32_t i = 0; i < get16(q, 42); ++i) {
      const uint32_t off = get32(q, kHeaderBytes + 8 * i), v = get32(q, kHeaderBytes + 8 * i + 4);
      if (off >= r.job.block_elems) return fmt::format("block {}: offset {} beyond its range", b, off);
      if (where[off] == UINT32_MAX) {
        where[off] = static_cast<uint32_t>(acc.size());
        acc.emplace_back(off, v);
      } else {
        acc[where[off]].second = combine(r.job, acc[where[off]].second, v);
      }
    }
  }
  std::sort(acc.begin(), acc.end());
  std::vector<Pair>& res = r.sparse.result[b];
  res.reserve(acc.size());
  for (const auto& [off, v] : acc) res.push_back({off, v});
  o = Run::Open{};
  r.have[b] = 1;
  ++r.received;
  if (r.complete()) completed(r);
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
  Run* run = p.size() < kHeaderBytes ? nullptr : find(get16(p, 28));
  if (p.size() < kHeaderBytes) {
    why = fmt::format("{} bytes, shorter than the headers", p.size());
  } else if (get16(p, 22) == kPeerPort && (!run || !run->job.ring)) {
    m_early.push_back(std::move(p));  // a later host-based collective's, from a host already there
    return;
  } else if (!run) {
    why = fmt::format("reduction {} from {:#x}: no such collective in flight here", get16(p, 28), get16(p, 36));
  } else if (get16(p, 22) == kPeerPort) {
    why = ring_arrived(*run, p);
    if (why.empty()) return;
  } else if (run->job.sparse) {
    why = sparse_arrived(*run, std::move(p));
    if (why.empty()) return;
  } else {
    Run& r = *run;
    const uint32_t reduction = get16(p, 28), b = get32(p, 32) - r.job.block_base;
    const uint16_t from = get16(p, 36), count = get16(p, 42);
    if (reduction != r.job.reduction || from != kFromSwitch)
      why = fmt::format("reduction {} from {:#x} (expected {} from the switch)", reduction, from, r.job.reduction);
    else if (b >= r.blocks)
      why = fmt::format("block {} of {}", b, r.blocks);
    else if (r.have[b])
      why = fmt::format("block {} a second time", b);
    else if (count != r.job.block_count(b) || p.size() != kHeaderBytes + size_t(count) * r.job.esize)
      why = fmt::format("block {} with {} elements in {} bytes", b, count, p.size());
    if (why.empty()) {
      r.shared->arrived(m_id, b, &p[kHeaderBytes], size_t(count) * r.job.esize);
      r.have[b] = 1;
      ++r.received;
      if (r.complete()) completed(r);
      pump();
      return;
    }
  }
  ++protocol_errors;
  log(core::Level::warn, "a packet that is not an expected result: {}", why);
}

}  // namespace fabricvp::flare
