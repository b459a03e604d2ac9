// Time-ordered execution of a chip's per-vector memory operations.
//
// Instructions are issued by the sequencer at their exact cycle, and their
// timing is computed for the whole burst at issue. The data side — reading a
// vector from SRAM into a link, writing a received vector, an ALU read or
// write — is performed here, one vector at a time, in exact simulated-time
// order, without a SystemC event per vector: each burst is a Cursor that knows
// the time of its next operation, and the Timeline applies operations from a
// small heap when the chip is drained up to a horizon (always <= the current
// simulated time, when every operation up to it is known).
//
// Order of operations at equal times: writes before reads (a vector written at
// t is visible to a read at t), then creation order. Because operations run in
// true time order, a program that reads a vector before it is written, or
// overwrites it before a SEND has read it, behaves exactly like the hardware.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/core/timed_queue.h"

namespace fabricvp::tsp {

/// When an operation happens: t = simulated time (ps), order = kWrite before
/// kRead at equal t, seq = creation order of the cursor.
using OpKey = core::TimeKey;

constexpr uint64_t kWrite = 0;
constexpr uint64_t kRead = 1;

class Cursor {
 public:
  virtual ~Cursor() = default;
  /// Perform the operation at `key`, then advance `key`; false when finished.
  virtual bool step() = 0;
  OpKey key;
};

class Timeline {
 public:
  void add(std::unique_ptr<Cursor> c);
  /// Apply every operation with time <= horizon. `stop` is polled between
  /// operations (a hardware error halts the data path).
  void run(uint64_t horizon, const bool& stop);
  bool empty() const { return m_heap.empty(); }
  /// Time of the next operation (the timeline must not be empty).
  uint64_t next_time() const { return m_heap.top_key().t; }
  /// Time of the operation being applied (valid while running).
  uint64_t current() const { return m_current; }
  uint64_t ops() const { return m_ops; }
  uint64_t next_seq() { return m_heap.next_seq(); }

 private:
  struct KeyOf {
    const core::TimeKey& operator()(const Cursor* c) const { return c->key; }
  };
  core::TimedHeap<Cursor*, KeyOf> m_heap;  // by each cursor's key (a pointer per entry); owned
  uint64_t m_current = 0;
  uint64_t m_ops = 0;

 public:
  Timeline() = default;
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  ~Timeline();
};

}  // namespace fabricvp::tsp
