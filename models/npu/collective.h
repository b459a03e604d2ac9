// The collective service of an NPU endpoint, as the models see it: what a
// collective is, how an algorithm tells an endpoint what to do, and the
// request a workload submits. SystemC-free.
//
// A collective works in place on one buffer of `elems` elements in each
// member's memory (nccl-tests conventions, docs/collectives.md):
//   allreduce      every member ends with the sum of all members' buffers
//   reducescatter  the buffer is N blocks; member r ends with block r summed
//   allgather      the buffer is N blocks; member r contributes block r, all end with all
//   alltoall       the buffer is N blocks; block s of member r goes to member s, where it is block r
//   broadcast      the root's buffer ends in every member's
// (N = members of the communicator, r = a member's rank in it).
//
// Algorithms are ring algorithms over the links of a topology, in phases
// (e.g. the hierarchical torus all-reduce of seed 001: reduce-scatter on the
// local rings, all-reduce on the vertical and horizontal ones, all-gather on
// the local ones). The buffer is cut into chunks that pipeline through the
// phases. In a phase, each ring a member sits on carries one part of the
// chunk as a sequence of messages: the member may send one message from its
// own data when the phase starts, and then receives messages step by step;
// each received message is added to (reduce) or stored in its data, and may
// be forwarded to the next member as the next step.
//
// The algorithm layer (sw/collectives) implements CollectivePlan for one
// member; the endpoint's engine (models/npu/engine.h) executes it with real
// bytes, and the ACE or the NPU's cores move and reduce them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/core/dtype.h"

namespace fabricvp::npu {

/// A list of element ranges [first, second), taken in order.
struct Span {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t elems() const;
  /// Elements [from, to) of the concatenation.
  Span sub(uint64_t from, uint64_t to) const;
  /// Append the ranges of `s` (merging a range that continues the last one).
  void append(const Span& s);
  bool empty() const { return ranges.empty(); }
};

enum class CollectiveKind : uint8_t { allreduce, reducescatter, allgather, alltoall, broadcast };
const char* collective_name(CollectiveKind k);
/// "allreduce", "reducescatter", "allgather", "alltoall", "broadcast".
bool parse_collective(const std::string& s, CollectiveKind& out);

/// How a member takes part in one ring of one phase.
struct RingRole {
  uint32_t port = 0;         ///< AFI port its messages leave on
  uint32_t next = 0;         ///< NPU id its messages go to
  uint32_t receives = 0;     ///< messages it receives in this phase
  uint32_t first_step = 0;   ///< message step of its first receive (receive t is step first_step + t)
  bool sends_first = false;  ///< it sends one message (step 0) from its own data when the phase starts
  bool active() const { return receives > 0 || sends_first; }
};

/// What a member does with its received message t of a ring (message step
/// first_step + t; a forward is message step first_step + t + 1).
struct Step {
  /// The message's first local.elems() elements belong here: added to the
  /// member's data (reduce) or stored over it.
  Span local;
  /// local.elems(), also where `local` is left empty (ChunkPlan::shape). The
  /// engine sets it for the backend; plans need not.
  uint64_t elems = 0;
  bool reduce = false;
  /// Message t + 1 goes on to the next member: `local` after the reduction
  /// (if forward_local), followed by the received message's remaining
  /// `passthrough` elements (data for members further on; all-to-all).
  bool forward = false;
  bool forward_local = true;
  uint64_t passthrough = 0;
};

/// One chunk of a collective at one member (made when the chunk starts, kept
/// while it is in flight).
class ChunkPlan {
 public:
  virtual ~ChunkPlan() = default;
  /// Elements of the buffer the chunk works on, in the order the ACE keeps them.
  virtual const Span& span() const = 0;
  /// Elements read from memory before the first phase (a subset of span()).
  virtual const Span& input() const = 0;
  /// Elements written back to memory after the last phase (a subset of span()).
  virtual const Span& output() const = 0;
  /// The message a member sends from its own data when phase p starts on ring q.
  virtual Span first_send(uint32_t phase, uint32_t ring) const = 0;
  /// What received message t of ring q in phase p carries and what to do with it.
  virtual Step step(uint32_t phase, uint32_t ring, uint32_t t) const = 0;
  /// step() without its spans: `elems` and the flags, `local` empty (what a
  /// timing-only collective needs, once per message). Plans override it
  /// with a computation that makes no spans.
  virtual Step shape(uint32_t phase, uint32_t ring, uint32_t t) const {
    Step s = step(phase, ring, t);
    s.elems = s.local.elems();
    s.local = Span{};
    return s;
  }
  /// first_send(phase, ring).elems(), without the span.
  virtual uint64_t first_send_elems(uint32_t phase, uint32_t ring) const { return first_send(phase, ring).elems(); }
};

/// A collective's algorithm at one member (implemented in sw/collectives).
class CollectivePlan {
 public:
  virtual ~CollectivePlan() = default;
  virtual CollectiveKind kind() const = 0;
  virtual core::Dtype dtype() const = 0;
  /// Elements of the buffer.
  virtual uint64_t elems() const = 0;
  virtual uint32_t chunks() const = 0;
  /// Most elements any chunk's span() has (sizes the ACE's SRAM slots).
  virtual uint64_t chunk_capacity() const = 0;
  /// Segment boundaries are multiples of this many elements.
  virtual uint32_t align() const = 0;
  virtual uint32_t phases() const = 0;
  /// Rings of phase p (a member has a role on each, possibly inactive).
  virtual uint32_t rings(uint32_t phase) const = 0;
  virtual RingRole ring(uint32_t phase, uint32_t ring) const = 0;
  virtual std::unique_ptr<ChunkPlan> chunk(uint32_t c) const = 0;
  /// "reduce-scatter local, all-reduce vertical, ..." (reports).
  virtual std::string describe() const = 0;
  /// The network dimension phase p runs on (per-dimension chunk limits,
  /// statistics); plans whose phases are not tied to one dimension say p.
  virtual uint32_t phase_dim(uint32_t p) const { return p; }
  /// A ring whose receives must wait until ring `ring_after(p, q)` of the same
  /// chunk and phase has taken all of its own (a fixed order of reductions
  /// into one segment, so floating-point results do not depend on arrival
  /// order), or -1 (independent).
  virtual int32_t ring_after(uint32_t, uint32_t) const { return -1; }
  uint32_t esize() const { return core::dtype_bytes(dtype()); }
};

/// Identity of one collective on a communicator: every member numbers the
/// collectives it submits on communicator `comm` 0, 1, 2, ...; messages of
/// the k-th one carry (comm, k).
struct CollectiveId {
  uint32_t comm = 0, seq = 0;
  uint64_t key() const { return (uint64_t(comm) << 32) | seq; }
};

/// What a workload hands to its endpoint's collective service.
struct CollectiveRequest {
  std::shared_ptr<const CollectivePlan> plan;  ///< the algorithm at this member
  uint64_t address = 0;                        ///< the buffer in NPU memory
  uint32_t comm = 0;                           ///< communicator id (the same at every member)
  /// Move no payload: messages carry only their size, reductions cost their
  /// time but compute nothing (fast sweeps). Every timing is the same as with data.
  bool timing_only = false;
};

/// A submitted collective at one endpoint: its request and, once done, when.
struct Collective {
  CollectiveRequest request;
  CollectiveId id;
  uint64_t submitted_ps = 0;
  bool done = false;
  uint64_t completion_ps = 0;  ///< the last chunk's result in memory
  uint32_t tag = 0;            ///< the submitting endpoint's record of it (its completion names it too)
  const CollectivePlan& plan() const { return *request.plan; }
};

using CollectiveHandle = std::shared_ptr<const Collective>;
/// Called at the simulated time a collective completes at this endpoint.
using CompletionFn = std::function<void(const Collective&)>;

}  // namespace fabricvp::npu
