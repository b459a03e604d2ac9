// ACE datapath at transaction level, cycle-accurate against the RTL
// (rtl/ace/ace_datapath.sv; interface and timing in rtl/ace/README.md).
//
// A transaction is a Chunk: one beat of `lanes` 32-bit lanes from the network
// side with its op (add incoming to the local partial, store incoming, forward
// the local partial), element type, buffer partition and row, and whether the
// result is written back (wb) and/or sent out (send). Each chunk completes
// once, in order, with a Completion: its tag, the cycle it was accepted, the
// cycle it retired (was sent, or written back when not sent) and the result.
//
// Both implementations of DatapathModel, the C++ Datapath below and the
// verilated RTL (RtlDatapath, models/ace/rtl_datapath.h), give the same
// completions, bit for bit and cycle for cycle, for the same calls:
//
//   - chunks are offered in submission order; chunk k is offered `gap` cycles
//     after the cycle following chunk k-1's acceptance (gap 0: back to back),
//     but never before the cycle the model had reached when it was submitted
//     (cycle()); it is held until accepted;
//   - next() advances the model only as far as the next completion, so
//     cycle() becomes that completion's retire cycle + 1;
//   - configure() takes one cycle, advance(n) n cycles; both need pending() == 0;
//   - the send side takes a result in cycle c when ready(c) (set_out_ready).
//
// Timing (the RTL's): a chunk accepted at cycle a retires at the earliest at
// a + kLatency, one chunk per cycle, at most kInFlight in flight; a chunk that
// reads its row (add, forward) waits while an older chunk in flight will
// still write that row, so data behave as if chunks ran one at a time.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "models/core/dtype.h"

namespace fabricvp::ace {

/// Chunk operations, numbered as the RTL's in_op.
enum class Op : uint8_t {
  add = 0,      ///< result = incoming + local partial (element type dtype)
  store = 1,    ///< result = incoming (all 32 bits of each lane)
  forward = 2,  ///< result = local partial (all 32 bits of each lane)
  illegal = 3,  ///< completes with err: result zero, no write, always sent
};
const char* op_name(Op op);

/// The RTL's in_dtype encoding of an element type: fp32 0, bf16 1, fp16 2,
/// int32 3 (rtl/ace/ace_pkg.sv). Dtype::none has none.
inline uint32_t rtl_dtype_code(core::Dtype d) { return static_cast<uint32_t>(d) - 1; }

/// Sizes of a datapath: the RTL parameters LANES, DEPTH, PARTS, TW.
struct Geometry {
  uint32_t lanes = 8;          ///< 32-bit lanes per chunk
  uint32_t depth = 512;        ///< buffer rows (>= 2)
  uint32_t partitions = 4;     ///< partition table entries
  uint32_t tag_bits = 16;      ///< width of a chunk's tag
  uint32_t row_bits() const;   ///< width of a row field: ceil(log2(depth))
  uint32_t part_bits() const;  ///< width of a partition field: max(1, ceil(log2(partitions)))
  bool operator==(const Geometry& o) const {
    return lanes == o.lanes && depth == o.depth && partitions == o.partitions && tag_bits == o.tag_bits;
  }
  bool operator!=(const Geometry& o) const { return !(*this == o); }
};

/// The geometry the RTL library was built with (CMake ACE_LANES, ACE_DEPTH,
/// ACE_PARTS, ACE_TAG_BITS): what the ACE's datapath slices have, whichever
/// implementation runs them.
inline const Geometry& rtl_geometry() {
  static const Geometry g{FABRICVP_ACE_LANES, FABRICVP_ACE_DEPTH, FABRICVP_ACE_PARTS, FABRICVP_ACE_TAG_BITS};
  return g;
}

constexpr uint32_t kAluLatency = 3;  ///< ALU: accepted at cycle c, result valid in cycle c + 3
constexpr uint32_t kLatency = 4;     ///< datapath: accepted at cycle a, retires at a + 4 at the earliest
constexpr uint32_t kInFlight = 4;    ///< chunks in flight at most (receive stage + 3 ALU stages)
constexpr uint64_t kReadyLimit = uint64_t(1) << 24;  ///< cycles a result may wait for the send side (C++ model)

struct Chunk {
  Op op = Op::add;
  core::Dtype dtype = core::Dtype::fp32;
  uint32_t part = 0;           ///< partition (< 2^part_bits); >= partitions completes with err
  uint32_t row = 0;            ///< row in the partition (< 2^row_bits); outside it completes with err
  bool wb = true;              ///< write the result back to the row
  bool send = true;            ///< send the result out
  uint32_t tag = 0;            ///< returned with the completion (< 2^tag_bits)
  uint32_t gap = 0;            ///< idle cycles between the previous acceptance and this chunk's valid
  std::vector<uint32_t> data;  ///< `lanes` words; lane i is element i (16-bit types: low half)
};

struct Completion {
  uint32_t tag = 0;
  bool err = false;   ///< illegal op or row outside its partition
  bool sent = false;  ///< the result went out on the send side (send or err)
  uint64_t accept_cycle = 0;
  uint64_t retire_cycle = 0;   ///< sent, or written back / dropped when not sent
  std::vector<uint32_t> data;  ///< the result when sent (`lanes` words), else empty
};

/// The cycles of a reduction burst as the ACE issues it (models/ace/ace.h):
/// `rows` pairs of a store beat (the local partial into a staging row, written
/// back, not sent) and an add beat (the received elements + that row, sent),
/// every pair on another row, offered back to back to a datapath on which
/// every older chunk has retired before cycle `start`. Store k is accepted at
/// start + 6k and retires at + 4; its add reads the row, so it waits for that
/// write: accepted at start + 6k + 5, retired at start + 6k + 9; the next
/// store follows the add. Both DatapathModels give exactly these cycles
/// (tests compare with Datapath); timing-only collectives use them instead of
/// running the beats.
struct BurstCycles {
  uint64_t first_accept = 0, last_accept = 0, last_retire = 0;
};
inline BurstCycles reduce_burst_cycles(uint64_t start, uint64_t rows) {
  static_assert(kLatency == 4 && kInFlight == 4, "the burst's closed form assumes the RTL's pipeline");
  if (rows == 0) return BurstCycles{start, start, start};
  return BurstCycles{start, start + 6 * (rows - 1) + 5, start + 6 * (rows - 1) + 9};
}

/// A reduction burst (DatapathModel::reduce_burst): row k of the burst
/// stages staging row (row0 + k) % depth of partition `part`; its store beat
/// carries elements k * stride + lane0 + i (lane i < the model's lanes; those
/// at or past n zero) of `local`, `es` bytes each (2: a lane's low half).
struct Burst {
  core::Dtype dtype = core::Dtype::fp32;
  uint32_t part = 0;
  uint32_t row0 = 0;
  uint64_t rows = 0;
  const uint8_t* local = nullptr;
  uint32_t es = 4;
  uint64_t n = 0;
  uint32_t stride = 0;
  uint32_t lane0 = 0;
};

/// out_ready of the send side in a cycle.
using ReadyFn = std::function<bool(uint64_t cycle)>;

/// What the C++ model and the RTL wrapper both offer (see the top of this file).
class DatapathModel {
 public:
  virtual ~DatapathModel() = default;
  virtual const Geometry& geometry() const = 0;
  /// Partition `part` becomes rows [base, base + size) (rows past the buffer's
  /// end do not exist). One cycle; std::logic_error unless pending() == 0,
  /// std::invalid_argument unless part < partitions, base < depth, size <= depth.
  virtual void configure(uint32_t part, uint32_t base, uint32_t size) = 0;
  /// Back-pressure of the send side (default: always ready). The function is
  /// asked about cycles in increasing order; a result that waits kReadyLimit
  /// cycles is an error (std::runtime_error; the RTL wrapper's watchdog).
  virtual void set_out_ready(ReadyFn ready) = 0;
  /// Queue a chunk (std::invalid_argument if a field does not fit).
  virtual void submit(const Chunk& c) = 0;
  /// The next completion in order; false when none is pending (or the model
  /// failed). `out`'s storage is recycled: reuse one Completion to allocate nothing.
  virtual bool next(Completion& out) = 0;
  /// Let `cycles` cycles pass with nothing offered (pending() must be 0).
  /// False if the datapath produced anything meanwhile (it must not).
  virtual bool advance(uint64_t cycles) = 0;
  /// The first cycle whose inputs are not decided yet.
  virtual uint64_t cycle() const = 0;
  /// Chunks submitted and not yet returned by next().
  virtual size_t pending() const = 0;
  /// Host seconds spent evaluating the model so far (the RTL's; 0 where not measured).
  virtual double host_seconds() const { return 0; }
  /// A reduction burst (reduce_burst_cycles: `b.rows` pairs of a store beat,
  /// written back and not sent, and an add beat on the same row, sent, offered
  /// back to back from cycle()) in one call, where the model has a closed form
  /// for it: leaves the model as submitting those 2 * rows chunks and taking
  /// every completion would, and sets `out`. The add beats' results are the
  /// elements' sums (core::add, the ALU's add_lane), which the caller computes
  /// over the whole burst at once. False, with nothing done, where the model
  /// has no closed form (the RTL runs its beats; chunks pending, a send side
  /// that may not be ready, a row outside the partition).
  virtual bool reduce_burst(const Burst& b, BurstCycles& out) {
    (void)b;
    (void)out;
    return false;
  }
};

/// A FIFO whose slots are reused: push() hands out a slot that keeps the
/// storage of what it held before, so a steady stream allocates nothing.
template <typename T>
class Ring {
 public:
  bool empty() const { return m_size == 0; }
  size_t size() const { return m_size; }
  T& push() {
    if (m_size == m_slots.size()) grow();
    T& slot = m_slots[(m_head + m_size) % m_slots.size()];
    ++m_size;
    return slot;
  }
  T& front() { return m_slots[m_head]; }
  const T& front() const { return m_slots[m_head]; }
  void pop() {
    m_head = (m_head + 1) % m_slots.size();
    --m_size;
  }
  void clear() { m_head = m_size = 0; }

 private:
  void grow() {
    std::vector<T> slots(std::max<size_t>(8, 2 * m_slots.size()));
    for (size_t i = 0; i < m_size; ++i) slots[i] = std::move(m_slots[(m_head + i) % m_slots.size()]);
    m_slots = std::move(slots);
    m_head = 0;
  }
  std::vector<T> m_slots;
  size_t m_head = 0, m_size = 0;
};

/// Throws std::invalid_argument if `c` does not fit geometry `g`.
void check_chunk(const Geometry& g, const Chunk& c);
/// Throws std::invalid_argument / std::logic_error for a configure() call that is not allowed.
void check_configure(const Geometry& g, uint32_t part, uint32_t base, uint32_t size, size_t pending);

/// The C++ model: computes every completion when the chunk is submitted.
class Datapath final : public DatapathModel {
 public:
  explicit Datapath(const Geometry& g = Geometry{});

  const Geometry& geometry() const override { return m_geo; }
  void configure(uint32_t part, uint32_t base, uint32_t size) override;
  void set_out_ready(ReadyFn ready) override { m_ready = std::move(ready); }
  void submit(const Chunk& c) override;
  bool next(Completion& out) override;
  bool advance(uint64_t cycles) override;
  uint64_t cycle() const override { return m_horizon; }
  size_t pending() const override { return m_done.size(); }
  bool reduce_burst(const Burst& b, BurstCycles& out) override;

  /// Physical row of row `row` of partition `part`, if it exists.
  bool map(uint32_t part, uint32_t row, uint32_t& addr) const;
  /// Buffer row `addr` (`lanes` words) as left by every chunk submitted so far.
  const uint32_t* row(uint32_t addr) const { return &m_mem[size_t(addr) * m_geo.lanes]; }

 private:
  uint64_t first_ready(uint64_t t) const;

  struct Flight {
    uint64_t retire = 0;
    bool wb = false;
    uint32_t addr = 0;
  };

  Geometry m_geo;
  ReadyFn m_ready;
  std::vector<uint32_t> m_mem;
  std::vector<uint32_t> m_base, m_size;
  std::vector<uint32_t> m_result;            // scratch: one chunk's result
  std::array<Flight, kInFlight> m_flight{};  // the last kInFlight chunks, by index % kInFlight
  uint64_t m_submitted = 0;
  uint64_t m_horizon = 0;     // first undecided cycle
  uint64_t m_offer_base = 0;  // cycle after the last acceptance
  uint64_t m_last_retire = 0;
  Ring<Completion> m_done;
};

}  // namespace fabricvp::ace
