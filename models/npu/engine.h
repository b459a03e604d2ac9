// The collective engine of an endpoint: runs every chunk of every submitted
// collective through the phases, rings and steps its plan prescribes
// (models/npu/collective.h), with many collectives in flight at once. It
// lives where the collectives are executed: in the NPU when its cores run
// them (ace.model=none), in the ACE when there is one (seed 002's FSMs).
//
// The engine decides *what* happens and in which order; a CommBackend says
// how the data moves and is reduced, and what resources a chunk needs:
//   - NPU cores (models/npu/npu.cpp): received messages go to memory through
//     the AFI RX DMA, reduction kernels read both operands and write the sum,
//     the AFI TX DMA reads what is sent; all of it shares the memory bandwidth;
//   - the ACE (models/ace/ace.h): chunks live in its SRAM from load to store,
//     its FSMs and partitions gate the phases, its datapath reduces.
//
// Order. Chunks enter a phase when the backend admits them: later phases
// first (they free resources), then within a phase by (submission order,
// chunk). New chunks are loaded from the earliest submitted collective that
// has any left (first come, first served). Resources are finite, so members
// must agree on the order of the collectives they share (see npu.h). Messages are matched by
// (collective id, chunk, phase, ring, step); one that arrives before its
// ring step waits in the input buffers. Every action is one entry of the
// owner's core::ActionQueue at its exact time: no event per byte.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/core/stats.h"
#include "models/core/timed_queue.h"
#include "models/npu/afi.h"
#include "models/npu/collective.h"

namespace fabricvp::npu {

/// A chunk of one collective in flight at this endpoint.
struct ChunkRef {
  uint32_t coll = 0;  ///< the engine's index of the collective (submission order)
  uint32_t chunk = 0;
};
/// One ring of one phase of a chunk: what receives and step_done are about.
struct TaskRef {
  uint32_t coll = 0;
  uint32_t task = 0;
};

class CollectiveEngine;

/// How data moves and is reduced (see the top of this file).
class CommBackend {
 public:
  virtual ~CommBackend() = default;
  /// A collective was admitted (before any of its chunks).
  virtual void admit(uint32_t coll, const Collective& c) = 0;
  /// May the chunk enter phase p now? True reserves what it needs until leave().
  virtual bool try_enter(ChunkRef c, uint32_t phase) = 0;
  virtual void leave(ChunkRef c, uint32_t phase) = 0;
  /// Bring the chunk's input where the steps read it; then call CollectiveEngine::loaded(c).
  virtual void load(ChunkRef c) = 0;
  /// Send `span` of the member's own (partially reduced) data as message m.
  virtual void send_local(ChunkRef c, std::shared_ptr<Message> m, const Span& span) = 0;
  /// Message `in` arrived for its step (see npu::Step); if `fwd` is given,
  /// send it with the step's forward data. Call step_done(t) when the result is in place.
  virtual void receive(TaskRef t, std::shared_ptr<Message> in, Step step, std::shared_ptr<Message> fwd) = 0;
  /// After the last phase: write the chunk's output to memory, then call chunk_done(c).
  virtual void finish(ChunkRef c) = 0;
};

class CollectiveEngine {
 public:
  /// `owner`: the endpoint whose statistics these are (sys.npu3: messages,
  /// bytes, reductions, input buffers). `transmit` puts a message on its AFI
  /// port now; `done` runs when a collective completes here.
  CollectiveEngine(const sc_core::sc_object* owner, std::string name, uint32_t npu, core::ActionQueue& actions,
                   CommBackend& backend, std::function<void(std::shared_ptr<Message>)> transmit,
                   std::function<void(const Collective&)> done);
  CollectiveEngine(const CollectiveEngine&) = delete;
  CollectiveEngine& operator=(const CollectiveEngine&) = delete;

  /// Start a collective now.
  void submit(std::shared_ptr<Collective> c);
  /// Serve the last submitted collective first (new chunks and phase entry); default first come first served.
  void set_lifo(bool lifo) { m_lifo = lifo; }
  /// A message is on its way here; it is complete in the input buffers at m->arrival_ps.
  void deliver(std::shared_ptr<Message> m);

  // For the backend.
  const Collective& collective(uint32_t coll) const { return *m_colls[coll]->c; }
  const ChunkPlan& chunk_plan(ChunkRef c) const;
  uint32_t chunk_of(TaskRef t) const { return m_colls[t.coll]->tasks[t.task].chunk; }
  /// Send message m at time `ready` (counted when it leaves).
  void send(std::shared_ptr<Message> m, uint64_t ready);
  void loaded(ChunkRef c);
  void step_done(TaskRef t);
  void chunk_done(ChunkRef c);
  core::ActionQueue& actions() { return m_actions; }
  uint64_t now() const { return core::ActionQueue::now(); }

  /// Collectives submitted and not yet complete.
  uint32_t in_flight() const { return m_in_flight; }
  /// Collectives submitted so far.
  uint32_t submitted() const { return static_cast<uint32_t>(m_colls.size()); }
  /// For a failed run: where the collectives got to.
  std::string progress() const;

  core::Counter messages_sent, messages_received, bytes_sent, bytes_received, reduce_steps, reduced_bytes,
      peak_in_buffer_bytes;

 private:
  struct Task {
    uint32_t chunk = 0, phase = 0, ring = 0, step = 0, total = 0;
    bool busy = false, live = false;
  };
  struct ChunkState {
    int phase = -1;
    uint32_t rings_left = 0;
  };
  struct Active {
    std::shared_ptr<Collective> c;
    uint32_t nphases = 0, kmax = 1;
    std::vector<RingRole> roles;  // [phase * kmax + ring]
    std::vector<int32_t> after;   // [phase * kmax + ring]: CollectivePlan::ring_after
    std::vector<ChunkState> chunks;
    std::vector<Task> tasks;                                         // [(chunk * nphases + phase) * kmax + ring]
    std::unordered_map<uint32_t, std::unique_ptr<ChunkPlan>> plans;  // chunks in flight
    uint32_t next_load = 0, done = 0;
    uint64_t completion = 0;
  };
  struct MsgKey {
    uint64_t coll;
    uint32_t chunk;
    uint16_t phase, ring, step;
    bool operator==(const MsgKey& o) const {
      return coll == o.coll && chunk == o.chunk && phase == o.phase && ring == o.ring && step == o.step;
    }
  };
  struct MsgKeyHash {
    size_t operator()(const MsgKey& k) const;
  };

  uint32_t task_id(const Active& a, uint32_t c, uint32_t p, uint32_t q) const {
    return (c * a.nphases + p) * a.kmax + q;
  }
  std::shared_ptr<Message> header(const Active& a, uint32_t chunk, uint32_t phase, uint32_t ring, uint32_t step) const;
  void pump();
  void start_phase(ChunkRef c, uint32_t p);
  void phase_done(ChunkRef c, uint32_t p);
  void try_receive(TaskRef t);
  void on_message(std::shared_ptr<Message> m);
  void sent_first(uint64_t coll, uint32_t chunk, uint32_t phase, uint32_t ring);

  std::string m_name;
  uint32_t m_npu;
  core::ActionQueue& m_actions;
  CommBackend& m_backend;
  std::function<void(std::shared_ptr<Message>)> m_transmit;
  std::function<void(const Collective&)> m_done;

  std::vector<std::unique_ptr<Active>> m_colls;    // by engine index; finished ones keep their slot
  std::unordered_map<uint64_t, uint32_t> m_by_id;  // CollectiveId::key() -> engine index (lookups only)
  std::vector<std::vector<ChunkRef>> m_waiting;    // per phase: chunks ready to enter, by (coll, chunk)
  std::unordered_map<MsgKey, std::shared_ptr<Message>, MsgKeyHash> m_inbox;  // lookups only, never iterated
  uint64_t m_inbox_bytes = 0;
  uint32_t m_in_flight = 0;
  uint32_t m_first_unloaded = 0;  // collectives before it have every chunk loaded
  bool m_lifo = false;
};

}  // namespace fabricvp::npu
