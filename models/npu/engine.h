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
// must agree on the order of the collectives they share (see npu.h). Messages
// are matched by (collective id, chunk, phase, ring, step); one that arrives
// before its ring step waits in the input buffers (the task's list, by step).
//
// Time. A message costs two actions of the owner's core::ActionQueue: its
// arrival here and its departure (the link serializes it then, in the order
// messages are ready). A backend takes a received message at once and books
// everything it does with it (memory, DMA, datapath) from the time the step
// may start; it reports the time the step's result is in place with
// step_done(t, ready), at once or later. The next message of the ring is
// taken as soon as it is here, its work booked from that time on. A phase
// ends when the last ring's last step has its result (an action then).
// Messages live in a pool (models/npu/afi.h MessagePool): no allocation per
// message, and timing-only steps compute no spans (ChunkPlan::shape).
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
  uint32_t chunk = 0;
  uint32_t task = 0;  ///< phase * rings + ring
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
  /// Send `elems` elements of the member's own (partially reduced) data as
  /// message `msg` (engine.message(msg): its header is set): `span` says which
  /// (empty in a timing-only collective). Set its bytes (and data), then
  /// CollectiveEngine::send(msg, ready).
  virtual void send_local(ChunkRef c, uint32_t msg, const Span& span, uint64_t elems) = 0;
  /// Message `in` arrived for `step` of task t (`step.local` is empty in a
  /// timing-only collective); the step may start at `start` (>= now: the
  /// ring's previous step has its result then). If `fwd` is not
  /// MessagePool::kNone, send that message (its header is set) with the
  /// step's forward data. Call step_done(t, ready) when the result is in
  /// place: from inside receive() with ready >= now (booked), or later. The
  /// engine frees `in` when receive() returns: take its data before.
  virtual void receive(TaskRef t, uint32_t in, const Step& step, uint32_t fwd, uint64_t start) = 0;
  /// After the last phase: write the chunk's output to memory, then call chunk_done(c).
  virtual void finish(ChunkRef c) = 0;
  /// Whether the ring's next message may be taken as soon as it is here, its
  /// work booked after the previous step's result (the NPU cores' memory
  /// queue); else it is taken when the previous step's result is in place
  /// (the ACE's FSM moves on then).
  virtual bool books_ahead() const { return false; }
};

class alignas(64) CollectiveEngine final : public core::Actor {
 public:
  /// `owner`: the endpoint whose statistics these are (sys.npu3: messages,
  /// bytes, reductions, input buffers). `transmit` puts a message on its AFI
  /// port now (the link takes its contents); `done` runs when a collective
  /// completes here.
  CollectiveEngine(const sc_core::sc_object* owner, std::string name, uint32_t npu, core::ActionQueue& actions,
                   CommBackend& backend, std::function<void(Message&)> transmit,
                   std::function<void(const Collective&)> done);
  CollectiveEngine(const CollectiveEngine&) = delete;
  CollectiveEngine& operator=(const CollectiveEngine&) = delete;

  /// Start a collective now.
  void submit(std::shared_ptr<Collective> c);
  /// Serve the last submitted collective first (new chunks and phase entry); default first come first served.
  void set_lifo(bool lifo) { m_lifo = lifo; }
  /// A message is on its way here: complete in the input buffers at m.arrival_ps. Its contents are taken.
  void deliver(Message& m);

  // For the backend.
  const Collective& collective(uint32_t coll) const { return *m_colls[coll]->c; }
  const ChunkPlan& chunk_plan(ChunkRef c) const;
  Message& message(uint32_t msg) { return m_pool[msg]; }
  /// Send message `msg` at time `ready` (>= now; counted when it leaves).
  void send(uint32_t msg, uint64_t ready);
  void loaded(ChunkRef c);
  /// The step taken by receive() has its result in place at `ready` (>= now).
  void step_done(TaskRef t, uint64_t ready);
  void chunk_done(ChunkRef c);
  core::ActionQueue& actions() { return m_actions; }
  uint64_t now() const { return m_actions.time(); }

  /// Collectives submitted and not yet complete.
  uint32_t in_flight() const { return m_in_flight; }
  /// Collectives submitted so far.
  uint64_t submitted() const { return m_submitted; }
  /// For a failed run: where the collectives got to.
  std::string progress() const;

  void act(uint32_t what, uint64_t arg) override;
  /// A message's departure: its slot; its arrival: its slot, then its
  /// collective, chunk, task and plan (stages 0 to 3).
  void prefetch(uint32_t what, uint64_t arg, unsigned stage) const override;
  /// A reduce step of `bytes` (the backend counts them).
  void reduced(uint64_t bytes) {
    ++m_hot.reduce_steps;
    m_hot.reduced_bytes += bytes;
  }

 private:
  // What the actions of a message read: the object's first four cache lines
  // (it is aligned to them), which the action queue requests ahead.
  uint32_t m_last_index = 0;  // the index of m_last_key (in the actor's tail padding)
  struct Hot {                // what every message updates, together
    uint64_t messages_sent = 0, messages_received = 0, bytes_sent = 0, bytes_received = 0, reduce_steps = 0,
             reduced_bytes = 0, peak_in_buffer_bytes = 0, inbox_bytes = 0;
  } m_hot;
  MessagePool m_pool;
  struct Active;
  std::vector<std::unique_ptr<Active>> m_colls;  // by engine index; a finished one's slot is reused
  uint64_t m_last_key = ~uint64_t(0);            // the last key looked up (CollectiveId::key())
  // Slots of finished collectives, reused (m_free_slots) only from the next action on: a collective may
  // finish while the engine's calls are on the stack (a step that finishes it inside receive()), and no
  // TaskRef of it may then resolve to a new collective's task.
  std::vector<uint32_t> m_released;
  // What every message calls, still in the lines the action queue requests.
  core::ActionQueue& m_actions;
  CommBackend& m_backend;
  std::function<void(Message&)> m_transmit;

 public:
  core::CounterRef messages_sent, messages_received, bytes_sent, bytes_received, reduce_steps, reduced_bytes,
      peak_in_buffer_bytes;

 private:
  enum What : uint32_t { kArrive, kSend, kPhaseDone, kEmpty, kPump, kStepDone };
  struct Task {
    uint32_t step = 0, total = 0;
    uint32_t head = MessagePool::kNone, tail = MessagePool::kNone;  ///< messages here for this ring, by step
    uint64_t free_ps = 0;                                           ///< the previous step's result is in place
    bool busy = false, live = false;
    bool in_receive = false, done_inside = false;  ///< receive() running; it called step_done()
  };
  struct ChunkState {
    int phase = -1;
    uint32_t rings_left = 0;
    uint64_t phase_end = 0;           ///< the latest result of the phase's rings so far
    std::unique_ptr<Task[]> tasks;    ///< [phase * kmax + ring]; while the chunk is in flight or has messages here
    std::unique_ptr<ChunkPlan> plan;  ///< while in flight
  };
  struct Active {
    std::shared_ptr<Collective> c;  ///< nullptr: a free slot
    uint64_t seq = 0;               ///< submission order here
    uint32_t nphases = 0, kmax = 1;
    std::vector<RingRole> roles;  // [phase * kmax + ring]
    std::vector<int32_t> after;   // [phase * kmax + ring]: CollectivePlan::ring_after
    std::vector<ChunkState> chunks;
    uint32_t next_load = 0, done = 0;
    uint64_t completion = 0;
    uint32_t esize = 4;
    bool timing_only = false;
  };

  /// A collective complete here: drop its lookup entry and free its slot.
  void release(uint32_t index);
  /// Served before y when loading chunks and entering phases (submission order, or its reverse with LIFO).
  bool served_before(const ChunkRef& x, const ChunkRef& y) const;
  /// The chunk's tasks, made if needed.
  Task* tasks(Active& a, uint32_t chunk);
  /// The task, or nullptr once its chunk (or collective) is done here.
  Task* task(TaskRef t);
  uint32_t header(const Active& a, uint32_t chunk, uint32_t phase, uint32_t ring, uint32_t step);
  void pump();
  void start_phase(ChunkRef c, uint32_t p);
  void phase_done(ChunkRef c);
  void try_receive(TaskRef t);
  void on_message(uint32_t msg);
  /// Put message `msg` (of collective `a`) in its task's list.
  void enqueue(Active& a, uint32_t coll, uint32_t msg);
  void sent_first(const Message& m);
  /// Ring `ring` of chunk c's current phase has its last result at `ready`.
  void ring_done(ChunkRef c, uint32_t ring, uint64_t ready);
  void finish_step(TaskRef t, uint64_t ready);

  std::string m_name;
  uint32_t m_npu;
  std::function<void(const Collective&)> m_done;

  std::vector<uint32_t> m_free_slots;  // slots of finished collectives (see m_released)
  // Collectives with chunks to load, by submission, from m_loading_head: (slot, seq); an entry whose slot now
  // holds another collective is one fully loaded.
  std::vector<std::pair<uint32_t, uint64_t>> m_loading;
  static constexpr size_t kSpareTasksMax = 64;
  std::vector<std::vector<std::unique_ptr<Task[]>>> m_spare_tasks;  // finished chunks' task arrays, by size
  std::unordered_map<uint64_t, uint32_t> m_by_id;               // CollectiveId::key() -> engine index (lookups only)
  std::unordered_map<uint64_t, std::vector<uint32_t>> m_early;  // messages of collectives not submitted here yet
  std::vector<std::vector<ChunkRef>> m_waiting;                 // per phase: chunks ready to enter, by (coll, chunk)
  std::vector<TaskRef> m_later;                                 // steps whose results come later (kStepDone), by slot
  std::vector<uint32_t> m_later_free;
  size_t m_loading_head = 0;
  uint32_t m_in_flight = 0;
  uint64_t m_submitted = 0;
  bool m_lifo = false;
};

}  // namespace fabricvp::npu
