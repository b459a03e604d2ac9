// NPU endpoint of an accelerator fabric (seed 001 NAM, seed 002 §II): memory
// with a finite bandwidth, a compute model, an accelerator-fabric interface
// (AFI: one TX and one RX socket per ring port), and the collective service
// workloads call.
//
// Collective service: submit(request) starts a collective at the current
// simulated time and returns its handle; any number may be in flight, on any
// communicator (models/npu/collective.h). Completion is reported at its
// simulated time through the handle (done, completion_ps) and the optional
// callback.
//
// Ordering contract (as with NCCL): every member submits the collectives of a
// communicator in the same order, and members that share several collectives
// submit those in one consistent order. The executors serve collectives first
// come first served with finite resources (ACE partitions and FSMs, the
// cores' comm_chunks), so two members that start two shared collectives in
// opposite orders can each hold the resources the other's first collective
// needs: a deadlock, reported at the end of the run with what is unfinished.
//
// Who executes them:
//   - with an ACE attached (seed 002), the ACE: the NPU writes a command to
//     the ACE's command socket (`ace_cmd`), the ACE moves data with its DMA
//     through the NPU memory's `dma` socket, sends and receives messages
//     through the NPU's AFI ports (`from_ace`, `to_ace`) and raises its
//     completion interrupt on `ace_irq`. The ACE is a child module bound by
//     the system that builds both (systems/npu);
//   - without one (ace.model=none), the NPU's cores: a reduction kernel on
//     `comm_sms` SMs reads both operands and writes the sum through memory
//     (2 reads + 1 write of the message per reduce step), and the AFI DMAs
//     move messages between memory and the links; all of it shares the
//     memory bandwidth.
#pragma once

#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/core/module.h"
#include "models/core/timed_queue.h"
#include "models/npu/afi.h"
#include "models/npu/collective.h"
#include "models/npu/engine.h"
#include "models/npu/memory.h"

namespace fabricvp::npu {

/// What the NPU writes to the ACE's command register (address 0): the
/// descriptor of a submitted collective. The ACE records the completion in it
/// and raises its interrupt with the collective's id.
struct CollectiveCommand {
  std::shared_ptr<Collective> collective;
};
/// What the ACE writes to the NPU's interrupt target (address 0).
struct CollectiveCompletion {
  uint64_t id = 0;   ///< CollectiveId::key()
  uint32_t tag = 0;  ///< Collective::tag
};

using GpInitiator = tlm::tlm_initiator_socket<32, tlm::tlm_base_protocol_types, 1, sc_core::SC_ZERO_OR_MORE_BOUND>;

/// Write one block (a command, a completion) to address 0 of the target behind
/// `socket` with blocking transport; returns the response text if refused, else "".
std::string write_block(GpInitiator& socket, void* data, unsigned len);

class Npu : public core::Module, public core::Actor {
 public:
  /// `attach` builds a child module of this NPU that executes its
  /// collectives (its ACE) and binds it, or is empty (the NPU's cores do).
  using Attach = std::function<std::unique_ptr<core::Module>(Npu&)>;
  /// `actions`: the queue its engine, router and ACE run on (one per fabric).
  Npu(const sc_core::sc_module_name& nm, uint32_t id, uint32_t ports, core::ActionQueue& actions,
      const Attach& attach = {});
  ~Npu() override;

  core::Param<uint32_t> comm_chunks;
  core::Param<uint32_t> active_chunks_per_dim;
  core::Param<uint64_t> endpoint_delay_ns, reduction_delay_ns;
  core::Param<std::string> scheduling;

  Memory memory;
  Compute compute;

  /// To and from the ACE (unbound without one).
  GpInitiator ace_cmd;
  tlm_utils::simple_target_socket_optional<Npu> ace_irq;
  AfiTarget from_ace;   ///< messages the ACE sends out through this NPU's AFI ports
  AfiInitiator to_ace;  ///< messages arriving at this NPU's AFI ports, for the ACE

  uint32_t id() const { return m_id; }
  /// AFI port p: TX socket (bound to a link direction) and RX socket.
  AfiInitiator& tx(uint32_t p) { return *m_tx[p]; }
  AfiTarget& rx(uint32_t p) { return *m_rx[p]; }
  uint32_t ports() const { return static_cast<uint32_t>(m_tx.size()); }
  /// The module `attach` built (nullptr if none).
  core::Module* attached() const { return m_attached.get(); }

  /// Start a collective now (see the top of this file). Throws
  /// core::ConfigError for a request the executor refuses.
  CollectiveHandle submit(const CollectiveRequest& r, CompletionFn on_done = {});
  /// Multi-hop fabrics: a message for another NPU that arrives on AFI port
  /// `in_port` goes on on port router(dst, in_port) when it is complete here
  /// (store and forward through the NPU's router, never its collective engine).
  using Router = std::function<uint32_t(uint32_t dst, uint32_t in_port)>;
  /// Adds the statistics `forwarded` and `forwarded_bytes`.
  void set_router(Router r);
  /// No ACE: the cores' collectives cost nothing but the endpoint delay
  /// (seed 002's Ideal; ace.model ideal), and the workload keeps every SM.
  void set_ideal_endpoint();
  /// Collectives submitted here and not complete.
  uint32_t in_flight() const { return m_in_flight; }
  /// For a failed run: what is unfinished.
  std::string progress() const;

  static uint64_t now() { return core::ActionQueue::now(); }
  core::ActionQueue& actions() { return m_actions; }
  void act(uint32_t what, uint64_t arg) override;

  core::Counter interrupts;
  core::Value<uint64_t> completion;

 private:
  class Rx : public AfiFwIf {
   public:
    Rx(Npu& n, bool from_ace) : m_npu(n), m_from_ace(from_ace) {}
    void b_transport(Message& m, sc_core::sc_time& delay) override;
    tlm::tlm_sync_enum nb_transport_fw(Message& m, tlm::tlm_phase&, sc_core::sc_time& t) override {
      b_transport(m, t);
      return tlm::TLM_COMPLETED;
    }
    bool get_direct_mem_ptr(Message&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(Message&) override { return 0; }

   private:
    Npu& m_npu;
    bool m_from_ace;
  };
  class GpNoBw : public tlm::tlm_bw_transport_if<> {
   public:
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
      return tlm::TLM_COMPLETED;
    }
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
  };
  struct Pending {
    std::shared_ptr<Collective> c;
    CompletionFn on_done;
  };
  class Cores;

  void irq(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void transmit(Message& m);
  void completed(const Collective& c);

  // What every message reads (sent: the port's link; received: this NPU's engine), together.
  uint32_t m_id;
  Rx m_rx_link;
  std::vector<AfiFwIf*> m_tx_if;               // what each TX socket is bound to (found at its first message)
  std::unique_ptr<Cores> m_cores;              // the NPU cores' backend (no ACE)
  std::unique_ptr<CollectiveEngine> m_engine;  // its engine (no ACE)
  std::vector<std::unique_ptr<AfiInitiator>> m_tx;
  std::vector<std::unique_ptr<AfiTarget>> m_rx;
  AfiNoBw m_bw;
  Rx m_rx_ace;
  GpNoBw m_gp_bw;
  core::ActionQueue& m_actions;
  MessagePool m_forwarding;  // messages for other NPUs, until they are complete here
  std::unique_ptr<core::Module> m_attached;
  std::map<uint32_t, uint32_t> m_next_seq;  // per communicator
  std::vector<Pending> m_pending;           // by Collective::tag; an empty c: a free record
  std::vector<uint32_t> m_free_tags;
  uint32_t m_in_flight = 0;
  Router m_router;
  std::unique_ptr<core::Counter> m_forwarded, m_forwarded_bytes;
};

}  // namespace fabricvp::npu
