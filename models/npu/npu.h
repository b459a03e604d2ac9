// NPU endpoint of the hierarchical torus (seed 001 NAM, seed 002 §II): memory
// with a finite bandwidth, a compute model, an accelerator-fabric interface
// (AFI: one TX and one RX socket per ring it sits on), and the collective
// engine that runs the ring steps of every chunk of an all-reduce.
//
// The engine is the same for both ways of communicating; a CommBackend says
// how a step moves and reduces data:
//   - baseline (ace.model=none): NPU cores reduce through memory. A received
//     message is written to memory by the AFI RX DMA, a reduction kernel on
//     `comm_sms` SMs reads both operands and writes the sum (2 reads + 1 write
//     of the message per reduce step), and the AFI TX DMA reads what is sent;
//     all of it competes for the memory bandwidth.
//   - ACE (models/ace/ace.h): the NPU sends a command, the ACE does the rest in
//     its SRAM and raises the completion interrupt.
//
// Time: every NPU has one SC_METHOD and a queue of timed actions; a message,
// a DMA or a batch of datapath beats is one action at its exact completion
// time, never one event per byte.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/core/dtype.h"
#include "models/core/module.h"
#include "models/core/timed_queue.h"
#include "models/npu/afi.h"
#include "models/npu/memory.h"
#include "sw/npu/torus_collective.h"

namespace fabricvp::npu {

class Npu;

/// What the collective engine asks of whoever moves and reduces the data.
class CommBackend {
 public:
  virtual ~CommBackend() = default;
  /// May chunk c enter phase p now (FSM, SRAM partition, chunks in flight)?
  /// True reserves what it needs until leave(c, p).
  virtual bool try_enter(uint32_t chunk, uint32_t phase) = 0;
  virtual void leave(uint32_t chunk, uint32_t phase) = 0;
  /// Bring chunk c's data where the steps read it (it holds phase 0's
  /// reservation); then call Npu::loaded(c) at the time it is there.
  virtual void load(uint32_t chunk) = 0;
  /// Send `span` of the NPU's own (partially reduced) data as message m.
  virtual void send_local(Message m, const Span& span) = 0;
  /// Message `in` carries `span`: add it to the NPU's data (reduce) or store
  /// it; if `fwd` is given, send the result as that message. Call
  /// Npu::step_done(task) when the result is in place.
  virtual void receive(uint32_t task, std::shared_ptr<Message> in, const Span& span, bool reduce,
                       const Message* fwd) = 0;
  /// After the last phase: the chunk's result goes to NPU memory; then call
  /// Npu::chunk_done(c).
  virtual void finish(uint32_t chunk) = 0;
};

/// An all-reduce as the engine runs it at one NPU.
struct CollectiveSpec {
  TorusShape shape;
  std::vector<Phase> phases;
  core::Dtype dtype = core::Dtype::fp32;
  uint64_t elems = 0;        ///< elements of the buffer
  uint64_t chunk_elems = 0;  ///< elements per chunk (a multiple of align)
  uint32_t align = 1;        ///< segment boundaries are multiples of this (elements)
  uint32_t esize() const { return core::dtype_bytes(dtype); }
  uint32_t chunks() const { return static_cast<uint32_t>((elems + chunk_elems - 1) / chunk_elems); }
  Span chunk_span(uint32_t c) const;
};

/// What the NPU writes to the ACE's command register (address 0).
struct AceCommand {
  enum Op : uint32_t { allreduce = 1 };
  uint32_t op = allreduce;
  uint64_t address = 0;  ///< buffer in NPU memory
  uint64_t bytes = 0;
  const CollectiveSpec* spec = nullptr;  ///< phases, chunking, element type
};

class Npu : public core::Module {
 public:
  /// `attach` builds a child module of this NPU (its ACE), or is empty.
  using Attach = std::function<std::unique_ptr<core::Module>(Npu&)>;
  Npu(const sc_core::sc_module_name& nm, uint32_t id, uint32_t ports, const Attach& attach = {});
  ~Npu() override;

  core::Param<uint32_t> comm_chunks;

  /// Command interface to the ACE (TLM generic payload; unbound without an ACE).
  tlm::tlm_initiator_socket<32, tlm::tlm_base_protocol_types, 1, sc_core::SC_ZERO_OR_MORE_BOUND> ace_cmd;
  /// The module `attach` built (nullptr if none).
  core::Module* attached() const { return m_attached.get(); }
  /// Start the all-reduce: a command to the ACE if one is bound, else the
  /// baseline (NPU cores). Throws core::ConfigError if the ACE refuses it.
  void start_collective(const CollectiveSpec& spec);

  Memory memory;
  Compute compute;

  uint32_t id() const { return m_id; }
  /// AFI port p: TX socket (bound to a link direction) and RX socket.
  AfiInitiator& tx(uint32_t p) { return *m_tx[p]; }
  AfiTarget& rx(uint32_t p) { return *m_rx[p]; }
  /// Port of ring q of dimension d (ports are numbered dimension by dimension).
  uint32_t port(uint32_t d, uint32_t q) const { return m_port_base[d] + q; }
  void set_port_base(const std::array<uint32_t, 3>& base) { m_port_base = base; }

  // ---- time ----
  /// Run `fn` at simulated time t (>= now). Actions at equal times run in the order they were posted.
  void at(uint64_t t, std::function<void()> fn);
  static uint64_t now() { return sc_core::sc_time_stamp().value(); }

  // ---- collective ----
  /// Start the all-reduce with `backend` (nullptr: the baseline, NPU cores through memory).
  void start(const CollectiveSpec& spec, CommBackend* backend);
  const CollectiveSpec& spec() const { return m_spec; }
  CommBackend& backend() { return *m_backend; }
  bool done() const { return m_done_chunks == m_spec.chunks() && m_started; }
  uint64_t completion_ps() const { return m_completion_ps; }
  uint32_t chunks_done() const { return m_done_chunks; }
  /// Spans of chunk c's phases at this NPU.
  const std::vector<Span>& spans(uint32_t c);
  /// Send message m at time `ready` on the port of its ring.
  void send(std::shared_ptr<Message> m, uint64_t ready);

  // Callbacks of the backend (at the current simulated time).
  void loaded(uint32_t chunk);
  void step_done(uint32_t task);
  void chunk_done(uint32_t chunk);
  /// The ACE's completion interrupt.
  void interrupt();

  /// Elements of `span` copied out of / into memory (`out`/`in`: span order).
  void gather(const Span& span, uint8_t* out) const;
  void scatter(const Span& span, const uint8_t* in);

 private:
  class Rx : public AfiFwIf {
   public:
    explicit Rx(Npu& n) : m_npu(n) {}
    void b_transport(Message& m, sc_core::sc_time& delay) override;
    tlm::tlm_sync_enum nb_transport_fw(Message& m, tlm::tlm_phase&, sc_core::sc_time& t) override {
      b_transport(m, t);
      return tlm::TLM_COMPLETED;
    }
    bool get_direct_mem_ptr(Message&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(Message&) override { return 0; }

   private:
    Npu& m_npu;
  };
  struct Task {
    uint32_t chunk = 0, phase = 0, ring = 0, step = 0, total = 0;
    RingPos rp;
    bool busy = false, live = false;
  };
  struct ChunkState {
    int phase = -1;
    uint32_t rings_left = 0;
  };

  void pump();
  void start_phase(uint32_t c, uint32_t p);
  void phase_done(uint32_t c, uint32_t p);
  void try_receive(uint32_t task);
  void on_message(std::shared_ptr<Message> m);
  uint32_t task_id(uint32_t c, uint32_t p, uint32_t q) const { return (c * m_nphases + p) * m_kmax + q; }
  static uint64_t key(uint32_t c, uint32_t p, uint32_t q, uint32_t s) {
    return (uint64_t(c) << 32) | (uint64_t(p) << 24) | (uint64_t(q) << 16) | s;
  }

  class CmdBw : public tlm::tlm_bw_transport_if<> {
   public:
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
      return tlm::TLM_COMPLETED;
    }
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
  };

  uint32_t m_id;
  CmdBw m_cmd_bw;
  CollectiveSpec m_cmd_spec;
  std::unique_ptr<core::Module> m_attached;
  std::vector<std::unique_ptr<AfiInitiator>> m_tx;
  std::vector<std::unique_ptr<AfiTarget>> m_rx;
  std::array<uint32_t, 3> m_port_base{0, 0, 0};
  AfiNoBw m_bw;
  Rx m_rx_if;

  core::ActionQueue m_actions;

  CollectiveSpec m_spec;
  std::unique_ptr<CommBackend> m_baseline;
  CommBackend* m_backend = nullptr;
  bool m_started = false;
  uint32_t m_nphases = 0, m_kmax = 1;
  std::vector<ChunkState> m_chunks;
  std::vector<Task> m_tasks;
  std::unordered_map<uint32_t, std::vector<Span>> m_spans;  // chunks in flight
  std::unordered_map<uint64_t, std::shared_ptr<Message>> m_inbox;
  std::vector<std::vector<uint32_t>> m_waiting;  // per phase: chunks ready to enter (kept sorted)
  uint32_t m_next_load = 0;
  uint32_t m_done_chunks = 0;
  uint64_t m_completion_ps = 0;
  uint64_t m_inbox_bytes = 0;

 public:
  core::Counter messages_sent, messages_received, bytes_sent, bytes_received, reduce_steps, reduced_bytes,
      peak_in_buffer_bytes, interrupts;
  core::Value<uint64_t> completion;
};

}  // namespace fabricvp::npu
