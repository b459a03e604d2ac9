// A Flare host (seed 004): a NIC and the memory holding one vector of an
// in-network allreduce, on a full-duplex link to a PsPIN-like switch port.
//
// Protocol (sw/handlers/include/flare.h, docs/flare.md): the vector is cut
// into blocks of one packet each (IPv4 + UDP + the 16-byte Flare header +
// the block's elements; PsPIN message id = block id). A host keeps at most
// `window` blocks in flight (sent, result not back): the host-side flow
// control that bounds the switch memory. It sends its blocks in order, or,
// staggered, each group of `window` consecutive blocks starting at offset
// host x window / hosts in the group (so that hosts do not all hit the same
// block's buffer at once). The switch answers every block once with the
// reduced elements, to every host; a host is done when it has every block.
//
// Links are loss-free: the host's transmitter serializes packets back to back
// (core::SerialChannel) and the first bit reaches the switch port `latency`
// later; a result's last bit arrives `latency` after it left the switch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/core/channel.h"
#include "models/core/module.h"
#include "models/core/timed_queue.h"
#include "models/pspin/switch.h"

namespace fabricvp::flare {

/// What a job computes. In-network: allreduce only. Host-based (`ring`):
/// allreduce (reduce-scatter then all-gather around the ring),
/// reducescatter (the ring's first half: host i ends with segment i reduced),
/// allgather (its second half: host i starts with segment i), alltoall
/// (direct: host i sends segment j of its vector to host j, whose result
/// holds it as segment i). Segments are elems / hosts elements each.
enum class Collective : uint8_t { allreduce, reducescatter, allgather, alltoall };

/// One allreduce (or host-based collective) as every host runs it.
struct Job {
  uint32_t reduction = 0;
  uint32_t hosts = 1;
  uint32_t fan_in = 0;  ///< contributions a block takes at the hosts' switch (a fat tree's leaf; 0: hosts)
  uint8_t dtype = 0;    ///< FLARE_INT32 | FLARE_FP32
  uint8_t op = 0;       ///< FLARE_SUM | FLARE_MIN | FLARE_MAX
  uint32_t esize = 4;   ///< bytes per element (2 for fp16, bf16)
  uint64_t elems = 0;
  uint32_t block_elems = 256;
  /// Block b goes out as block id block_base + b (PsPIN message id and Flare header): the allreduces of a
  /// training run number their blocks one after the other, so that no two share a switch buffer or a log entry.
  uint32_t block_base = 0;
  uint32_t window = 64;  ///< blocks a host keeps in flight
  bool stagger = false;  ///< groups of `window` blocks start at offset host x window / hosts
  /// The host-based baseline instead: a ring allreduce (reduce-scatter, then
  /// all-gather; 2 (hosts - 1) steps of one segment each, packet by packet)
  /// through a switch that forwards each packet to its IPv4 destination
  /// (sw/handlers/flare/forward.c). Its packets carry block = step << 20 | packet
  /// (all-to-all: the packet's number in the segment): at most kMaxPeerHosts
  /// hosts and 2^20 packets a segment (checked where jobs are made).
  bool ring = false;
  /// Host-based only: the collective (its packets to other hosts carry UDP destination port kPeerPort, which
  /// the aggregation kernels forward unchanged).
  Collective kind = Collective::allreduce;
  /// Sparse blocks (flare.h): block b is the index range [b x block_elems, (b + 1) x block_elems); a
  /// host sends its nonzero elements of it as (offset, value) pairs, kSparsePairs per packet.
  bool sparse = false;
  /// op FLARE_USER: the user's operator on the elements' words (the kernels run the same C function).
  uint32_t (*user_op)(uint32_t acc, uint32_t in) = nullptr;
  uint64_t blocks() const { return (elems + block_elems - 1) / block_elems; }
  /// Elements of block b (the last one may be short).
  uint32_t block_count(uint64_t b) const {
    return static_cast<uint32_t>(std::min<uint64_t>(block_elems, elems - b * block_elems));
  }
  /// Elements of a host's input and of its result (elems: the whole vector).
  uint64_t input_elems() const { return kind == Collective::allgather ? elems / hosts : elems; }
  uint64_t result_elems() const { return kind == Collective::reducescatter ? elems / hosts : elems; }
};

/// UDP destination port of a packet from one host to another (host-based collectives); Flare blocks go to 9000.
constexpr uint16_t kPeerPort = 9001;
/// PsPIN message ids: a block's is its block id (below this), a host-to-host packet's has this bit set.
constexpr uint32_t kPeerMessage = 0x80000000u;
/// Host-based collectives' limits (their packets number steps << 20 | packet, in 31 bits).
constexpr uint32_t kMaxPeerHosts = 1024;
constexpr uint64_t kMaxSegmentPackets = 1u << 20;

/// Why a host-based job (`ring`) cannot number its packets (more than kMaxPeerHosts hosts, or a segment of
/// kMaxSegmentPackets packets or more), or "" if it can.
std::string host_based_limits(const Job& job);

/// Bytes of the IPv4 + UDP + Flare headers of a block packet.
constexpr uint32_t kHeaderBytes = 28 + 16;
/// Largest block payload, and the bytes of one block buffer in the switch
/// (flare_slot_t of sw/handlers/include/flare.h, which asserts the same size).
constexpr uint32_t kMaxBlockBytes = 1024;
constexpr uint32_t kSlotBytes = 16 + 2 * 256 + kHeaderBytes + kMaxBlockBytes;
/// The multiple-buffers variant's block (flare_multi_slot_bytes()).
constexpr uint32_t multi_slot_bytes(uint32_t buffers) { return 636 + buffers * kMaxBlockBytes; }
constexpr uint32_t kMaxBuffers = 8;
/// The tree variant's buffer of one block (flare_tree_slot_bytes()).
constexpr uint32_t tree_slot_bytes(uint32_t hosts) { return 60 + hosts * kMaxBlockBytes; }

/// Sparse blocks: pairs per packet, a packet's weight (flare.h FLARE_LAST, FLARE_UNIT), and the sparse
/// kernel's block buffer (flare_sparse_slot_bytes(); format 0 array, 1 hash, 2 two-level).
constexpr uint32_t kSparsePairs = 128;
constexpr uint16_t kLast = 0x8000;
constexpr uint32_t kUnit = 0x8000;
constexpr uint32_t weight(uint16_t seq) { return (seq & kLast) ? kUnit - (seq & (kLast - 1)) : 1; }
constexpr uint32_t sparse_slot_bytes(uint32_t format, uint32_t span, uint32_t entries) {
  return format == 0   ? 1100 + span * 4 + span / 8
         : format == 1 ? 1100 + entries * 8
                       : 1100 + (span / 32 + 1) / 2 * 4 + entries * 33 * 4;
}
/// A nonzero element of a sparse vector: its index and its value's word (a 16-bit value in the low bits).
struct Pair {
  uint32_t index = 0;
  uint32_t value = 0;
  bool operator==(const Pair& o) const { return index == o.index && value == o.value; }
};
/// A host's sparse allreduce: its nonzero elements in index order, where block b's start (first[b]; first[blocks]:
/// all of them), and its result: block b's pairs (offsets in its range), in offset order.
struct SparseRun {
  std::vector<Pair> input;
  std::vector<uint64_t> first;
  std::vector<std::vector<Pair>> result;
};
/// A sparse packet of block `b` (block id job.block_base + b): `n` pairs (offsets in the block's range) numbered
/// `seq` (| kLast) from `host`.
std::vector<uint8_t> sparse_packet(const Job& job, uint32_t host, uint32_t b, uint16_t seq, const Pair* pairs,
                                   uint32_t n);

/// The packet of block `b` from host `host`, its elements at `elems`.
std::vector<uint8_t> block_packet(const Job& job, uint32_t host, uint64_t b, const uint8_t* elems);
/// A packet of elements [first, first + count) of `data` from `host` to IPv4 destination `dst` with Flare header block
/// `block`.
std::vector<uint8_t> packet(const Job& job, uint32_t host, uint32_t dst, uint32_t block, uint64_t first, uint32_t count,
                            const uint8_t* data);
/// op(acc, in) for one element, as the kernels compute it (sw/handlers/flare/dense.c combine()): the
/// reference of every check and the ring baseline's reduction.
uint32_t combine(uint8_t dtype, uint8_t op, uint32_t acc, uint32_t in);
/// The same with the job's operator (its user operator for FLARE_USER).
inline uint32_t combine(const Job& job, uint32_t acc, uint32_t in) {
  return job.op == 3 ? job.user_op(acc, in) : combine(job.dtype, job.op, acc, in);
}
/// acc[i] = combine(job, acc[i], in[i]) for i < n: the same bits, the operator chosen once.
void combine_all(const Job& job, uint32_t* acc, const uint32_t* in, size_t n);

/// The vectors of one in-network dense allreduce, kept once for all of its hosts (64 hosts of 100 MiB would
/// otherwise hold 128 copies, 13 GB): each host's input is made block by block when the host sends it
/// (`fill(host, first, count, out)` writes elements [first, first + count) of that host's input, the same
/// ones at every call), and the result is kept once, as the first copy of each block to reach any host. A
/// later host's copy is compared with it when it arrives; only a copy that differs is kept (with its host),
/// so the check still sees every host's result.
class SharedVectors {
 public:
  using Fill = std::function<void(uint32_t host, uint64_t first, uint64_t count, uint8_t* out)>;
  /// `job`: an in-network dense allreduce (not ring, not sparse). Throws std::logic_error otherwise.
  SharedVectors(const Job& job, Fill fill);
  const Job& job() const { return m_job; }
  /// Elements [first, first + count) of host `host`'s input.
  void input(uint32_t host, uint64_t first, uint64_t count, uint8_t* out) const { m_fill(host, first, count, out); }
  /// Host `host` received block b's result (its elements' `bytes`, checked by the host).
  void arrived(uint32_t host, uint64_t b, const uint8_t* data, size_t bytes);
  /// Block b as host `host` received it, or nullptr if it did not.
  const uint8_t* block(uint32_t host, uint64_t b) const;
  /// Host `host`'s whole result (zeros where a block did not arrive).
  std::vector<uint8_t> result(uint32_t host) const;
  /// Hosts whose copy of block b differs from the first one to arrive.
  uint32_t differing(uint64_t b) const { return m_differing[b]; }
  /// Bytes of block b.
  size_t block_bytes(uint64_t b) const;

 private:
  Job m_job;
  Fill m_fill;
  std::vector<uint8_t> m_result;                                           // the first copy of every block
  std::vector<bool> m_have;                                                // [block * hosts + host]
  std::vector<uint32_t> m_copies;                                          // per block: hosts that have it
  std::map<std::pair<uint64_t, uint32_t>, std::vector<uint8_t>> m_differ;  // (block, host): a copy that differs
  std::vector<uint32_t> m_differing;                                       // per block: its entries in m_differ
};

class Host : public core::Module, public core::Actor {
 public:
  /// Host `id` (of all hosts) on port `port` of its switch; `to_switch` takes a packet whose first
  /// bit reaches the switch at its offered_ps (pspin::Switch::inject).
  Host(const sc_core::sc_module_name& nm, uint32_t id, uint32_t port, double link_Gbps, double latency_ns,
       core::ActionQueue& q, std::function<void(pspin::Packet)> to_switch);

  /// Start a host-based collective (job.ring) now on `input` (job.input_elems() x job.esize bytes). A host runs
  /// any number of collectives at once, told apart by their reduction ids (a host-based packet of one not
  /// started here yet is kept for it); its `window` bounds its blocks in flight over all of its in-network
  /// ones, the earliest started sending first.
  /// keep_input = false (a ring allreduce only): the input becomes the result in place, and the host keeps no
  /// copy of it (take() and input() give none; the check makes it again).
  void start(const Job& job, std::vector<uint8_t> input, bool keep_input = true);
  /// Start an in-network dense allreduce, whose vectors every host of it shares (SharedVectors: vectors.job()).
  void start(std::shared_ptr<SharedVectors> vectors);
  /// Start a sparse allreduce (job.sparse) on the nonzero elements `input`, in index order.
  void start_sparse(const Job& job, std::vector<Pair> input);
  /// Called (from the host's action queue, at the completion time) when a collective is done here, with its
  /// reduction id.
  void on_done(std::function<void(uint32_t reduction)> fn) { m_on_done = std::move(fn); }
  /// What a finished collective leaves: its input and result (sparse: its pairs).
  struct Finished {
    std::vector<uint8_t> input, result;
    SparseRun sparse;
    std::shared_ptr<SharedVectors> shared;  ///< started with SharedVectors: input and result are there
  };
  /// Take a finished collective's input and result (the host keeps nothing of it after).
  Finished take(uint32_t reduction);

  // The collective started last, kept after it is done (a single allreduce's check reads it here).
  const std::vector<uint8_t>& result() const { return last().result; }
  const std::vector<uint8_t>& input() const { return last().input; }
  /// Its shared vectors, if it was started with them (else nullptr: input() and result()).
  const SharedVectors* shared() const { return last().shared.get(); }
  /// Sparse: the host's nonzero elements and its result (SparseRun).
  const SparseRun& sparse_run() const { return last().sparse; }
  /// Packets this host sends for its sparse vector (after start_sparse).
  uint64_t sparse_packets() const;
  /// A packet the switch sent on this host's port: it arrives `latency` after `p.time_ps`.
  void deliver(pspin::EgressPacket&& p);

  /// Every collective started here is done.
  bool done() const;
  /// Host-based packets kept for a collective that never came (counted as protocol errors by the check).
  uint64_t kept_packets() const { return m_early.size(); }
  /// Blocks sent and not answered, now (all collectives).
  uint32_t in_flight() const;
  /// Blocks (host-based: packets) received, and how many it takes (all collectives started here).
  uint64_t blocks_received() const;
  uint64_t blocks_expected() const;

  void act(uint32_t what, uint64_t arg) override;

  core::SerialChannel tx;  ///< the link towards the switch
  core::Counter packets_received, bytes_received, peak_in_flight, peak_collectives, protocol_errors;
  core::Value<uint64_t> completion_ps;

 private:
  /// One collective here.
  struct Run {
    Job job;
    std::vector<uint8_t> input, result;  // empty with shared vectors
    std::shared_ptr<SharedVectors> shared;
    std::vector<uint8_t> have;  // per block: its result arrived
    uint64_t blocks = 0, sent = 0, received = 0;
    uint32_t offset = 0;  // stagger offset in a group
    SparseRun sparse;
    struct Open {  // a sparse block's result packets so far, by number
      std::vector<std::vector<uint8_t>> packets;
      uint32_t weight = 0;
    };
    std::vector<Open> open;  // by block
    // the host-based collectives: the ring's steps [t0, t1) (segments shifted by shift), or all-to-all
    uint32_t t0 = 0, t1 = 0, shift = 0;
    std::vector<std::vector<uint8_t>> ring_got;  // [step - t0][packet]; all-to-all: [sender][packet]
    uint64_t ring_packets = 0, ring_received = 0;
    bool finished = false;
    bool complete() const { return job.ring ? ring_received == ring_packets : received == blocks; }
  };
  Run& add_run(const Job& job);
  Run* find(uint32_t reduction);  // the collective in flight with this reduction id, or nullptr
  const Run& last() const;
  uint64_t block_at(const Run& r, uint64_t position) const;  // the block sent position-th
  void pump();
  void arrived(std::vector<uint8_t>&& bytes, bool kept = false);
  void send(std::vector<uint8_t>&& bytes, uint32_t msg);
  void completed(Run& r);
  std::function<void(uint32_t)> m_on_done;
  std::vector<std::unique_ptr<Run>> m_runs;   // in the order they started; a finished one until taken
  std::vector<std::vector<uint8_t>> m_early;  // host-based packets of collectives not started here yet
  std::string sparse_arrived(Run& r, std::vector<uint8_t>&& p);
  uint32_t sparse_packets_of(const Run& r, uint64_t block) const;
  uint64_t seg_first(const Run& r, uint32_t s) const { return uint64_t(s) * r.job.elems / r.job.hosts; }
  uint32_t seg_packets(const Run& r, uint32_t s) const;
  uint32_t ring_sends(const Run& r, uint32_t step) const;     // the segment sent at a step
  uint32_t ring_receives(const Run& r, uint32_t step) const;  // the segment received at a step
  void ring_send(Run& r, uint32_t step, uint32_t p);
  std::string ring_arrived(Run& r, const std::vector<uint8_t>& p);
  void start_host_based(Run& r);
  /// A host-based packet of elements [first, first + count) of `data` to host `dst` (Flare header block
  /// `block`, PsPIN message kPeerMessage | msg).
  void peer_send(const Run& r, uint32_t dst, uint32_t block, uint32_t msg, uint64_t first, uint32_t count,
                 const uint8_t* data);
  std::string alltoall_arrived(Run& r, const std::vector<uint8_t>& p);

  uint32_t m_id, m_port;
  core::ActionQueue& m_q;
  std::function<void(pspin::Packet)> m_to_switch;
  std::vector<uint8_t> m_block;            // a block's elements made for its packet (shared vectors)
  std::vector<std::vector<uint8_t>> m_rx;  // packets on their way here, by slot
  std::vector<uint32_t> m_rx_free;
};

}  // namespace fabricvp::flare
