#include "models/npu/npu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory_resource>
#include <stdexcept>

namespace fabricvp::npu {

/// The NPU's cores run the collectives (seed 002's baselines): every byte
/// moves through memory. A received message's work is booked when the step
/// is taken, in this order: the AFI RX DMA writes it to memory (after the
/// endpoint delay), the reduction kernel reads both operands and writes the
/// sum, the AFI TX DMA reads what goes on. The memory serves requests in the
/// order they are booked (models/npu/memory.h), so its queue holds each
/// message's requests together, in the order messages are taken.
class Npu::Cores final : public CommBackend {
 public:
  explicit Cores(Npu& n)
      : m_npu(n),
        m_endpoint_delay_ps(n.endpoint_delay_ns.get() * 1000),
        m_reduction_delay_ps(n.reduction_delay_ns.get() * 1000) {}
  void set_engine(CollectiveEngine& e) { m_engine = &e; }
  /// Seed 002's Ideal endpoint: a received message is handled endpoint_delay
  /// after it arrives, with no memory traffic and no reduction kernel; sends
  /// leave at once. The data are still reduced (and checked).
  void set_ideal() { m_ideal = true; }

  void admit(uint32_t coll, const Collective& c) override {
    if (m_colls.size() <= coll) m_colls.resize(coll + 1);
    m_colls[coll] = Coll{c.request.address, c.plan().esize(), c.plan().dtype(), c.request.timing_only};
  }

  bool try_enter(ChunkRef c, uint32_t phase) override {
    const uint32_t limit = m_npu.active_chunks_per_dim.get();
    const uint32_t dim = limit ? m_engine->collective(c.coll).plan().phase_dim(phase) : 0;
    if (limit) {
      if (m_dim_active.size() <= dim) m_dim_active.resize(dim + 1, 0);
      if (m_dim_active[dim] >= limit) return false;
    }
    if (phase == 0) {
      if (m_in_flight >= m_npu.comm_chunks.get()) return false;
      ++m_in_flight;
    }
    if (limit) ++m_dim_active[dim];
    return true;
  }
  void leave(ChunkRef c, uint32_t phase) override {
    if (m_npu.active_chunks_per_dim.get()) --m_dim_active[m_engine->collective(c.coll).plan().phase_dim(phase)];
  }
  void load(ChunkRef c) override { m_engine->loaded(c); }  // the data is in memory already

  void send_local(ChunkRef c, uint32_t msg, const Span& span, uint64_t elems) override {
    const Coll& k = m_colls[c.coll];
    Message& m = m_engine->message(msg);
    m.bytes = elems * k.es;
    if (!k.timing_only) {
      m.data.resize(m.bytes);
      gather(c.coll, span, m.data.data());
    }
    read_and_send(msg, m_engine->now());
  }

  void receive(TaskRef t, uint32_t in_id, const Step& step, uint32_t fwd, uint64_t start) override {
    const Coll& k = m_colls[t.coll];
    const Message& in = m_engine->message(in_id);
    // The endpoint's processing of a received message (ASTRA-sim's endpoint-delay), then the AFI RX DMA
    // writes it into memory (a staging buffer for a reduction).
    const uint64_t written = m_ideal ? start + m_endpoint_delay_ps
                                     : m_npu.memory.access(start + m_endpoint_delay_ps, in.bytes, Client::afi_rx_write);
    const uint64_t local = step.elems * k.es;
    uint64_t ready = written;
    if (step.reduce) {
      if (!m_ideal) {
        // Reduction kernel on the communication SMs: 2 reads + 1 write of the message.
        m_npu.memory.access(written, 2 * local, Client::reduce_read);
        const uint64_t mem_done = m_npu.memory.access(written, local, Client::reduce_write);
        const uint64_t alu = m_npu.compute.reduction(step.elems);
        ready = std::max(mem_done, written + alu) + m_reduction_delay_ps;
      }
      if (!k.timing_only) {
        // In place, range by range (the message is the concatenation of step.local).
        const uint8_t* from = in.data.data();
        for (const auto& r : step.local.ranges) {
          const uint64_t len = (r.second - r.first) * k.es;
          uint8_t* mine = m_npu.memory.at(k.address + r.first * k.es, len);
          core::add(k.dt, mine, from, mine, len);
          from += len;
        }
      }
      m_engine->reduced(local);
    } else if (!k.timing_only) {
      scatter(t.coll, step.local, in.data.data());
    }
    if (fwd != MessagePool::kNone) {
      Message& f = m_engine->message(fwd);
      const uint64_t own = step.forward_local ? local : 0;
      const uint64_t pass = step.passthrough * k.es;
      f.bytes = own + pass;
      if (!k.timing_only) {
        f.data.resize(own + pass);
        if (own) gather(t.coll, step.local, f.data.data());
        if (pass) std::memcpy(f.data.data() + own, in.data.data() + local, pass);
      }
      read_and_send(fwd, ready);
    }
    m_engine->step_done(t, ready);
  }

  void finish(ChunkRef c) override {
    --m_in_flight;
    m_engine->chunk_done(c);
  }
  bool books_ahead() const override { return true; }

 private:
  struct Coll {
    uint64_t address = 0;
    uint32_t es = 4;
    core::Dtype dt = core::Dtype::fp32;
    bool timing_only = false;
  };
  void gather(uint32_t coll, const Span& span, uint8_t* out) const {
    const Coll& k = m_colls[coll];
    for (const auto& r : span.ranges) {
      const uint64_t len = (r.second - r.first) * k.es;
      m_npu.memory.read(k.address + r.first * k.es, out, len);
      out += len;
    }
  }
  void scatter(uint32_t coll, const Span& span, const uint8_t* in) {
    const Coll& k = m_colls[coll];
    for (const auto& r : span.ranges) {
      const uint64_t len = (r.second - r.first) * k.es;
      m_npu.memory.write(k.address + r.first * k.es, in, len);
      in += len;
    }
  }
  /// The AFI TX DMA reads the message from memory from time t on, then it leaves.
  void read_and_send(uint32_t msg, uint64_t t) {
    const uint64_t done = m_ideal ? t : m_npu.memory.access(t, m_engine->message(msg).bytes, Client::afi_tx_read);
    m_engine->send(msg, done);
  }

  Npu& m_npu;
  const uint64_t m_endpoint_delay_ps, m_reduction_delay_ps;
  CollectiveEngine* m_engine = nullptr;
  std::vector<Coll> m_colls;
  uint32_t m_in_flight = 0;
  bool m_ideal = false;
  std::vector<uint32_t> m_dim_active;  // chunks in a phase of each dimension (active_chunks_per_dim)
};

Npu::Npu(const sc_core::sc_module_name& nm, uint32_t id, uint32_t ports, core::ActionQueue& actions,
         const Attach& attach)
    : core::Module(nm, "npu"),
      comm_chunks(this, "comm_chunks", 32, "chunks",
                  "baseline: chunks of a collective the NPU's communication library keeps in flight", 1u, 1u << 20),
      active_chunks_per_dim(this, "active_chunks_per_dim", 0, "chunks",
                            "baseline: chunks in the phases of one network dimension at once (ASTRA-sim's "
                            "active-chunks-per-dimension); 0: no limit",
                            0u, 1u << 20),
      endpoint_delay_ns(
          this, "endpoint_delay_ns", 0, "ns",
          "baseline: processing of each received message before it is stored (ASTRA-sim's endpoint-delay)", uint64_t(0),
          uint64_t(1) << 40),
      reduction_delay_ns(this, "reduction_delay_ns", 0, "ns",
                         "baseline: fixed cost added to each reduction step (ASTRA-sim's local-reduction-delay)",
                         uint64_t(0), uint64_t(1) << 40),
      scheduling(this, "scheduling", "fifo", "",
                 "baseline: which collective's chunks go first: fifo (first submitted) or lifo (last submitted; "
                 "ASTRA-sim's scheduling-policy)",
                 {"fifo", "lifo"}),
      memory("memory"),
      compute("compute"),
      ace_cmd("ace_cmd"),
      ace_irq("ace_irq"),
      from_ace("from_ace"),
      to_ace("to_ace"),
      interrupts(this, nullptr, "interrupts", "interrupts", "completion interrupts from the ACE"),
      completion(this, nullptr, "completion_ps", "ps", "time the last chunk's result was in memory"),
      m_id(id),
      m_rx_link(*this, false),
      m_rx_ace(*this, true),
      m_actions(actions) {
  for (uint32_t p = 0; p < ports; ++p) {
    m_tx.push_back(std::make_unique<AfiInitiator>(fmt::format("afi_tx{}", p).c_str()));
    m_tx_if.push_back(nullptr);
    m_rx.push_back(std::make_unique<AfiTarget>(fmt::format("afi_rx{}", p).c_str()));
    m_tx.back()->bind(m_bw);
    m_rx.back()->bind(m_rx_link);
  }
  ace_cmd.bind(m_gp_bw);
  ace_irq.register_b_transport(this, &Npu::irq);
  from_ace.bind(m_rx_ace);
  to_ace.bind(m_bw);
  if (attach) m_attached = attach(*this);
  if (!m_attached) {
    m_cores = std::make_unique<Cores>(*this);
    m_engine = std::make_unique<CollectiveEngine>(
        this, name(), m_id, m_actions, *m_cores, [this](Message& m) { transmit(m); },
        [this](const Collective& c) { completed(c); });
    m_cores->set_engine(*m_engine);
    compute.reserve_comm_sms(true);
    m_engine->set_lifo(scheduling.get() == "lifo");
  }
}

void Npu::set_ideal_endpoint() {
  if (!m_cores) throw std::logic_error(fmt::format("{}: an ideal endpoint replaces the NPU cores, not an ACE", name()));
  m_cores->set_ideal();
  compute.reserve_comm_sms(false);
}

Npu::~Npu() {
  m_engine.reset();
  m_cores.reset();
  m_attached.reset();
}

CollectiveHandle Npu::submit(const CollectiveRequest& r, CompletionFn on_done) {
  if (!r.plan) throw std::invalid_argument(fmt::format("{}: collective request without a plan", name()));
  const uint64_t bytes = r.plan->elems() * r.plan->esize();
  if (r.address + bytes > memory.size_mib.get() << 20)
    throw core::ConfigError(fmt::format("{}: a {}-byte {} at address {} does not fit {}.size_mib ({} MiB)", name(),
                                        bytes, collective_name(r.plan->kind()), r.address, memory.name(),
                                        memory.size_mib.get()));
  // From a pool: an op graph submits a collective per point-to-point transfer. The pool is never freed (a
  // handle may outlive every NPU).
  static auto* const pool = new std::pmr::unsynchronized_pool_resource();
  auto c = std::allocate_shared<Collective>(std::pmr::polymorphic_allocator<Collective>(pool));
  c->request = r;
  c->id = CollectiveId{r.comm, m_next_seq[r.comm]++};
  c->submitted_ps = now();
  if (m_free_tags.empty()) {
    c->tag = static_cast<uint32_t>(m_pending.size());
    m_pending.emplace_back();
  } else {
    c->tag = m_free_tags.back();
    m_free_tags.pop_back();
  }
  m_pending[c->tag] = Pending{c, std::move(on_done)};
  ++m_in_flight;
  if (m_engine) {
    m_engine->submit(c);
    return c;
  }
  // The command interface: one write of the descriptor; the ACE answers with its completion interrupt.
  CollectiveCommand cmd{c};
  const std::string refused = write_block(ace_cmd, &cmd, sizeof cmd);
  if (!refused.empty())
    throw std::logic_error(
        fmt::format("{}: the ACE refused the {} command ({})", name(), collective_name(r.plan->kind()), refused));
  return c;
}

void Npu::set_router(Router r) {
  m_router = std::move(r);
  if (!m_forwarded) {
    m_forwarded = std::make_unique<core::Counter>(this, nullptr, "forwarded", "messages",
                                                  "messages for other NPUs passed on by this NPU's router");
    m_forwarded_bytes = std::make_unique<core::Counter>(this, nullptr, "forwarded_bytes", "bytes",
                                                        "payload bytes of the messages it passed on");
  }
}

std::string write_block(GpInitiator& socket, void* data, unsigned len) {
  tlm::tlm_generic_payload gp;
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(0);
  gp.set_data_ptr(static_cast<unsigned char*>(data));
  gp.set_data_length(len);
  gp.set_streaming_width(len);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(gp, delay);
  return gp.is_response_ok() ? std::string() : gp.get_response_string();
}

void Npu::irq(tlm::tlm_generic_payload& gp, sc_core::sc_time&) {
  if (!gp.is_write() || gp.get_data_length() != sizeof(CollectiveCompletion)) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  CollectiveCompletion cpl;
  std::memcpy(&cpl, gp.get_data_ptr(), sizeof cpl);
  if (cpl.tag >= m_pending.size() || !m_pending[cpl.tag].c || m_pending[cpl.tag].c->id.key() != cpl.id) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  ++interrupts;
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  completed(*m_pending[cpl.tag].c);
}

void Npu::completed(const Collective& c) {
  if (c.tag >= m_pending.size() || m_pending[c.tag].c.get() != &c)
    throw std::logic_error(fmt::format("{}: completion of an unknown collective", name()));
  Pending p = std::move(m_pending[c.tag]);
  m_pending[c.tag] = Pending{};
  m_free_tags.push_back(c.tag);
  --m_in_flight;
  completion.set(std::max(completion.get(), c.completion_ps));
  if (p.on_done) p.on_done(c);
}

std::string Npu::progress() const {
  std::vector<const Collective*> open;
  for (const Pending& p : m_pending)
    if (p.c) open.push_back(p.c.get());
  std::sort(open.begin(), open.end(),
            [](const Collective* a, const Collective* b) { return a->id.key() < b->id.key(); });
  std::string out;
  for (const Collective* c : open)
    out += fmt::format("{}{} #{} on communicator {} unfinished", out.empty() ? "" : "; ",
                       collective_name(c->plan().kind()), c->id.seq, c->id.comm);
  return out;
}

void Npu::Rx::b_transport(Message& m, sc_core::sc_time& delay) {
  Npu& n = m_npu;
  if (m_from_ace) {
    n.transmit(m);
  } else if (m.dst != n.m_id) {
    if (!n.m_router)
      throw std::logic_error(
          fmt::format("{}: a message for npu{} arrived and this NPU routes nothing", n.name(), m.dst));
    // Store and forward: it goes on when it is complete here.
    const uint32_t id = n.m_forwarding.adopt(m);
    Message& f = n.m_forwarding[id];
    f.tx_port = n.m_router(f.dst, f.port);
    n.m_actions.post(f.arrival_ps, n, 0, id);
  } else if (n.m_engine) {
    n.m_engine->deliver(m);
  } else {
    n.to_ace->b_transport(m, delay);
  }
}

void Npu::act(uint32_t, uint64_t arg) {
  const uint32_t id = static_cast<uint32_t>(arg);
  Message& m = m_forwarding[id];
  ++*m_forwarded;
  *m_forwarded_bytes += m.bytes;
  m.ready_ps = now();
  transmit(m);
  m_forwarding.give(id);
}

void Npu::transmit(Message& m) {
  if (m.tx_port >= m_tx_if.size())
    throw std::logic_error(fmt::format("{}: message for AFI port {} of {}", name(), m.tx_port, m_tx_if.size()));
  AfiFwIf*& to = m_tx_if[m.tx_port];
  if (!to) to = &*(*m_tx[m.tx_port]).operator->();  // the link bound to the port (an error if none)
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  to->b_transport(m, delay);
}

}  // namespace fabricvp::npu
