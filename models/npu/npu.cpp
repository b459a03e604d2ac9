#include "models/npu/npu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fabricvp::npu {

Span CollectiveSpec::chunk_span(uint32_t c) const {
  Span s;
  const uint64_t first = uint64_t(c) * chunk_elems;
  s.ranges.emplace_back(first, std::min(elems, first + chunk_elems));
  return s;
}

namespace {

/// Baseline: the NPU's cores reduce through memory (seed 002's baselines).
class CoreComm final : public CommBackend {
 public:
  explicit CoreComm(Npu& n) : m_npu(n) {}

  bool try_enter(uint32_t, uint32_t phase) override {
    if (phase != 0) return true;
    if (m_in_flight >= m_npu.comm_chunks.get()) return false;
    ++m_in_flight;
    return true;
  }
  void leave(uint32_t, uint32_t) override {}
  void load(uint32_t chunk) override { m_npu.loaded(chunk); }  // the data is in memory already

  void send_local(Message m, const Span& span) override {
    auto msg = std::make_shared<Message>(std::move(m));
    read_and_send(msg, span, Npu::now());
  }

  void receive(uint32_t task, std::shared_ptr<Message> in, const Span& span, bool reduce, const Message* fwd) override {
    const uint64_t bytes = in->data.size();
    // The AFI RX DMA writes the message into memory (a staging buffer for a reduction).
    const uint64_t written = m_npu.memory.access(Npu::now(), bytes, Client::afi_rx_write);
    std::shared_ptr<Message> next = fwd ? std::make_shared<Message>(*fwd) : nullptr;
    m_npu.at(written, [this, task, in, span, reduce, next, bytes] {
      uint64_t ready = Npu::now();
      const CollectiveSpec& s = m_npu.spec();
      if (reduce) {
        // Reduction kernel on the communication SMs: 2 reads + 1 write of the message.
        const uint64_t t = Npu::now();
        m_npu.memory.access(t, 2 * bytes, Client::reduce_read);
        const uint64_t mem_done = m_npu.memory.access(t, bytes, Client::reduce_write);
        const uint64_t elems = bytes / s.esize();
        const uint64_t alu = m_npu.compute.vector_ps(elems, m_npu.compute.comm_sms.get());
        ++m_npu.compute.kernels;
        m_npu.compute.flops += elems;
        m_npu.compute.busy_ps += alu;
        ready = std::max(mem_done, t + alu);
        m_tmp.resize(bytes);
        m_npu.gather(span, m_tmp.data());
        core::add(s.dtype, m_tmp.data(), in->data.data(), m_tmp.data(), bytes);
        m_npu.scatter(span, m_tmp.data());
        ++m_npu.reduce_steps;
        m_npu.reduced_bytes += bytes;
      } else {
        m_npu.scatter(span, in->data.data());
      }
      m_npu.at(ready, [this, task, span, next] {
        if (next) read_and_send(next, span, Npu::now());
        m_npu.step_done(task);
      });
    });
  }

  void finish(uint32_t chunk) override {
    --m_in_flight;
    m_npu.chunk_done(chunk);
  }

 private:
  void read_and_send(std::shared_ptr<Message> msg, const Span& span, uint64_t t) {
    msg->data.resize(span.elems() * m_npu.spec().esize());
    m_npu.gather(span, msg->data.data());
    const uint64_t done = m_npu.memory.access(t, msg->data.size(), Client::afi_tx_read);
    m_npu.send(msg, done);
  }

  Npu& m_npu;
  uint32_t m_in_flight = 0;
  std::vector<uint8_t> m_tmp;
};

}  // namespace

Npu::Npu(const sc_core::sc_module_name& nm, uint32_t id, uint32_t ports, const Attach& attach)
    : core::Module(nm, "npu"),
      comm_chunks(this, "comm_chunks", 32, "chunks",
                  "baseline: chunks of a collective the NPU's communication library keeps in flight", 1u, 1u << 20),
      ace_cmd("ace_cmd"),
      memory("memory"),
      compute("compute"),
      m_id(id),
      m_rx_if(*this),
      m_actions("actions"),
      messages_sent(this, nullptr, "messages_sent", "messages", "messages handed to the AFI"),
      messages_received(this, nullptr, "messages_received", "messages", "messages received by the AFI"),
      bytes_sent(this, nullptr, "bytes_sent", "bytes", "payload bytes sent (network bytes)"),
      bytes_received(this, nullptr, "bytes_received", "bytes", "payload bytes received"),
      reduce_steps(this, nullptr, "reduce_steps", "steps", "reduce steps (a received message added to local data)"),
      reduced_bytes(this, nullptr, "reduced_bytes", "bytes", "bytes of messages added to local data"),
      peak_in_buffer_bytes(this, nullptr, "peak_in_buffer_bytes", "bytes",
                           "most bytes received and waiting for their ring step (input buffers of all ports)"),
      interrupts(this, nullptr, "interrupts", "interrupts", "completion interrupts from the ACE"),
      completion(this, nullptr, "completion_ps", "ps", "time the last chunk's result was in memory") {
  for (uint32_t p = 0; p < ports; ++p) {
    m_tx.push_back(std::make_unique<AfiInitiator>(fmt::format("afi_tx{}", p).c_str()));
    m_rx.push_back(std::make_unique<AfiTarget>(fmt::format("afi_rx{}", p).c_str()));
    m_tx.back()->bind(m_bw);
    m_rx.back()->bind(m_rx_if);
  }
  ace_cmd.bind(m_cmd_bw);
  if (attach) m_attached = attach(*this);
}

Npu::~Npu() { m_attached.reset(); }

void Npu::start_collective(const CollectiveSpec& spec) {
  if (ace_cmd.size() == 0) {
    start(spec, nullptr);
    return;
  }
  // The command interface: one write of the command block; the ACE answers with its completion interrupt.
  m_cmd_spec = spec;
  AceCommand block;
  block.bytes = spec.elems * spec.esize();
  block.spec = &m_cmd_spec;
  tlm::tlm_generic_payload gp;
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(0);
  gp.set_data_ptr(reinterpret_cast<unsigned char*>(&block));
  gp.set_data_length(sizeof block);
  gp.set_streaming_width(sizeof block);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  ace_cmd->b_transport(gp, delay);
  if (!gp.is_response_ok())
    throw std::logic_error(
        fmt::format("{}: the ACE refused the all-reduce command ({})", name(), gp.get_response_string()));
}

void Npu::at(uint64_t t, std::function<void()> fn) { m_actions.at(t, std::move(fn)); }

void Npu::Rx::b_transport(Message& m, sc_core::sc_time&) {
  auto msg = std::make_shared<Message>(std::move(m));
  Npu& n = m_npu;
  n.at(msg->arrival_ps, [&n, msg] { n.on_message(msg); });
}

void Npu::send(std::shared_ptr<Message> m, uint64_t ready) {
  at(ready, [this, m] {
    const uint32_t d = m_spec.phases[m->phase].dim;
    m->ready_ps = now();
    ++messages_sent;
    bytes_sent += m->data.size();
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    (*m_tx[port(d, m->ring)])->b_transport(*m, delay);
  });
}

void Npu::gather(const Span& span, uint8_t* out) const {
  const uint32_t es = m_spec.esize();
  for (const auto& r : span.ranges) {
    const uint64_t len = (r.second - r.first) * es;
    std::memcpy(out, memory.data.data() + r.first * es, len);
    out += len;
  }
}

void Npu::scatter(const Span& span, const uint8_t* in) {
  const uint32_t es = m_spec.esize();
  for (const auto& r : span.ranges) {
    const uint64_t len = (r.second - r.first) * es;
    std::memcpy(memory.data.data() + r.first * es, in, len);
    in += len;
  }
}

void Npu::start(const CollectiveSpec& spec, CommBackend* backend) {
  m_spec = spec;
  if (!backend) {
    m_baseline = std::make_unique<CoreComm>(*this);
    backend = m_baseline.get();
  }
  m_backend = backend;
  m_started = true;
  m_nphases = static_cast<uint32_t>(spec.phases.size());
  m_kmax = std::max({spec.shape.rings[0], spec.shape.rings[1], spec.shape.rings[2], 1u});
  m_chunks.assign(spec.chunks(), ChunkState{});
  m_tasks.assign(size_t(spec.chunks()) * m_nphases * m_kmax, Task{});
  m_waiting.assign(m_nphases, {});
  at(now(), [this] { pump(); });
}

const std::vector<Span>& Npu::spans(uint32_t c) {
  auto it = m_spans.find(c);
  if (it == m_spans.end())
    it = m_spans.emplace(c, phase_spans(m_spec.shape, m_spec.phases, m_id, m_spec.chunk_span(c), m_spec.align)).first;
  return it->second;
}

void Npu::pump() {
  // Later phases first: they free resources; within a phase the lowest chunk first.
  for (uint32_t p = m_nphases; p-- > 1;) {
    std::vector<uint32_t>& w = m_waiting[p];
    while (!w.empty() && m_backend->try_enter(w.front(), p)) {
      const uint32_t c = w.front();
      w.erase(w.begin());
      start_phase(c, p);
    }
  }
  while (m_next_load < m_spec.chunks() && m_backend->try_enter(m_next_load, 0)) {
    const uint32_t c = m_next_load++;
    spans(c);
    m_backend->load(c);
  }
}

void Npu::loaded(uint32_t chunk) { start_phase(chunk, 0); }

void Npu::start_phase(uint32_t c, uint32_t p) {
  ChunkState& cs = m_chunks[c];
  cs.phase = static_cast<int>(p);
  const Phase& ph = m_spec.phases[p];
  const uint32_t K = m_spec.shape.rings[ph.dim];
  std::vector<uint32_t> started;
  cs.rings_left = 0;
  for (uint32_t q = 0; q < K; ++q) {
    RingPos rp = ring_pos(m_spec.shape, m_id, ph.dim, q);
    const uint32_t total = phase_steps(ph.kind, rp.n);
    if (total == 0) continue;
    Task& t = m_tasks[task_id(c, p, q)];
    t = Task{c, p, q, 0, total, rp, false, true};
    ++cs.rings_left;
    started.push_back(q);
  }
  if (cs.rings_left == 0) {
    at(now(), [this, c, p] { phase_done(c, p); });
    return;
  }
  const Span& span = spans(c)[p];
  for (uint32_t q : started) {
    const Task& t = m_tasks[task_id(c, p, q)];
    Message m;
    m.src = m_id;
    m.dst = t.rp.next;
    m.chunk = c;
    m.phase = static_cast<uint16_t>(p);
    m.ring = static_cast<uint16_t>(q);
    m.step = 0;
    m_backend->send_local(std::move(m),
                          segment(span, K, q, t.rp.n, first_send_segment(ph.kind, t.rp.n, t.rp.pos), m_spec.align));
  }
  for (uint32_t q : started) try_receive(task_id(c, p, q));
}

void Npu::on_message(std::shared_ptr<Message> m) {
  ++messages_received;
  bytes_received += m->data.size();
  m_inbox_bytes += m->data.size();
  peak_in_buffer_bytes.note_max(m_inbox_bytes);
  const uint64_t k = key(m->chunk, m->phase, m->ring, m->step);
  if (!m_inbox.emplace(k, m).second)
    throw std::logic_error(fmt::format("{}: message chunk {} phase {} ring {} step {} received twice", name(), m->chunk,
                                       m->phase, m->ring, m->step));
  if (m->chunk < m_chunks.size() && m_chunks[m->chunk].phase == m->phase)
    try_receive(task_id(m->chunk, m->phase, m->ring));
}

void Npu::try_receive(uint32_t id) {
  Task& t = m_tasks[id];
  if (!t.live || t.busy || t.step >= t.total) return;
  auto it = m_inbox.find(key(t.chunk, t.phase, t.ring, t.step));
  if (it == m_inbox.end()) return;
  std::shared_ptr<Message> in = std::move(it->second);
  m_inbox.erase(it);
  m_inbox_bytes -= in->data.size();
  const Phase& ph = m_spec.phases[t.phase];
  const uint32_t K = m_spec.shape.rings[ph.dim];
  const StepPlan sp = step_plan(ph.kind, t.rp.n, t.rp.pos, t.step);
  const Span span = segment(spans(t.chunk)[t.phase], K, t.ring, t.rp.n, sp.recv_segment, m_spec.align);
  if (span.elems() * m_spec.esize() != in->data.size())
    throw std::logic_error(fmt::format("{}: chunk {} phase {} ring {} step {}: {} bytes received for a {}-byte segment",
                                       name(), t.chunk, t.phase, t.ring, t.step, in->data.size(),
                                       span.elems() * m_spec.esize()));
  t.busy = true;
  Message fwd;
  if (sp.forward) {
    fwd.src = m_id;
    fwd.dst = t.rp.next;
    fwd.chunk = t.chunk;
    fwd.phase = static_cast<uint16_t>(t.phase);
    fwd.ring = static_cast<uint16_t>(t.ring);
    fwd.step = static_cast<uint16_t>(t.step + 1);
  }
  m_backend->receive(id, std::move(in), span, sp.reduce, sp.forward ? &fwd : nullptr);
}

void Npu::step_done(uint32_t id) {
  Task& t = m_tasks[id];
  t.busy = false;
  if (++t.step < t.total) {
    try_receive(id);
    return;
  }
  t.live = false;
  if (--m_chunks[t.chunk].rings_left == 0) phase_done(t.chunk, t.phase);
}

void Npu::phase_done(uint32_t c, uint32_t p) {
  m_backend->leave(c, p);
  if (p + 1 < m_nphases) {
    std::vector<uint32_t>& w = m_waiting[p + 1];
    w.insert(std::upper_bound(w.begin(), w.end(), c), c);
  } else {
    m_chunks[c].phase = static_cast<int>(m_nphases);
    m_backend->finish(c);
  }
  pump();
}

void Npu::chunk_done(uint32_t c) {
  m_spans.erase(c);
  ++m_done_chunks;
  m_completion_ps = std::max(m_completion_ps, now());
  completion.set(m_completion_ps);
  pump();
}

void Npu::interrupt() { ++interrupts; }

}  // namespace fabricvp::npu
