// Accelerator-fabric interface (AFI) protocol and link (seed 001 Table IV,
// seed 002 §IV): NPUs exchange messages (a chunk's segment for one ring step)
// over full-duplex point-to-point links of the hierarchical torus.
//
// A message is a whole burst: one b_transport hands it to the link, which
// computes its serialization start s = max(ready, free) and its arrival
//   arrival = s + ser(bytes) + latency,   ser(b) = ceil(b * 8 / (GBps * 8 * efficiency)) ps
// (efficiency: data flits / all flits, Table IV's 94 %), and forwards it to
// the receiving AFI. No event per byte or packet; packets are counted.
// Messages carry their real bytes, or only their size in a timing-only
// collective (CollectiveRequest::timing_only).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <tlm>
#include <vector>

#include "models/core/channel.h"
#include "models/core/module.h"
#include "models/core/timebase.h"

namespace fabricvp::npu {

/// One message of a collective: the data of one ring step of one chunk.
struct Message {
  uint32_t src = 0, dst = 0;  ///< NPU ids
  uint64_t coll = 0;          ///< collective (CollectiveId::key(): communicator, sequence)
  uint32_t chunk = 0;         ///< chunk index
  uint16_t phase = 0, ring = 0, step = 0;
  uint32_t tx_port = 0;  ///< set by the sender: the AFI port it leaves on
  uint64_t bytes = 0;    ///< payload bytes (what the link serializes)
  std::vector<uint8_t>
      data;  ///< the payload itself (elements of the step's segment, in span order); empty in timing-only collectives
  uint64_t ready_ps = 0;    ///< set by the sender: in the output buffer
  uint64_t start_ps = 0;    ///< set by the link: serialization start
  uint64_t arrival_ps = 0;  ///< set by the link: complete in the receiver's input buffer
  uint32_t port = 0;        ///< set by the link: the receiver's AFI port
  /// Every field but the data from `o`.
  void set_header(const Message& o) {
    src = o.src;
    dst = o.dst;
    coll = o.coll;
    chunk = o.chunk;
    phase = o.phase;
    ring = o.ring;
    step = o.step;
    tx_port = o.tx_port;
    bytes = o.bytes;
    ready_ps = o.ready_ps;
    start_ps = o.start_ps;
    arrival_ps = o.arrival_ps;
    port = o.port;
  }
};

/// Messages held by one module (in flight to it, waiting in its input
/// buffers, or built to be sent), by index: no allocation per message once
/// the pool has grown, and payload buffers are reused. Indices stay valid
/// until give(); references until the next take().
class MessagePool {
 public:
  static constexpr uint32_t kNone = ~0u;
  /// A message with default fields and empty data (its buffer keeps its capacity).
  uint32_t take();
  void give(uint32_t id) { m_free.push_back(id); }
  Message& operator[](uint32_t id) { return m_blocks[id >> kShift][id & (kBlock - 1)]; }
  const Message& operator[](uint32_t id) const { return m_blocks[id >> kShift][id & (kBlock - 1)]; }
  /// Take `m` in: its fields, and its data by swapping buffers (m keeps this slot's old one).
  uint32_t adopt(Message& m);
  /// Request where message `id`'s block is (a hint: nothing changes).
  void prefetch_block(uint32_t id) const { __builtin_prefetch(m_blocks.data() + (id >> kShift)); }
  /// Request message `id`'s cache lines (a hint: nothing changes).
  void prefetch(uint32_t id) const {
    const char* m = reinterpret_cast<const char*>(&(*this)[id]);
    for (size_t at = 0; at < sizeof(Message); at += 64) __builtin_prefetch(m + at);  // every line it spans
    __builtin_prefetch(m + sizeof(Message) - 1);
  }
  /// A link for lists of waiting messages (kNone at the end).
  uint32_t& next(uint32_t id) { return m_next[id]; }
  size_t in_use() const { return m_next.size() - m_free.size(); }

 private:
  static constexpr uint32_t kShift = 6, kBlock = 1u << kShift;
  std::vector<std::unique_ptr<Message[]>> m_blocks;  // blocks: growing never moves a message
  std::vector<uint32_t> m_next, m_free;
};

struct afi_protocol {
  using tlm_payload_type = Message;
  using tlm_phase_type = tlm::tlm_phase;
};
using AfiFwIf = tlm::tlm_fw_transport_if<afi_protocol>;
using AfiBwIf = tlm::tlm_bw_transport_if<afi_protocol>;
using AfiInitiator = tlm::tlm_initiator_socket<32, afi_protocol, 1, sc_core::SC_ZERO_OR_MORE_BOUND>;
using AfiTarget = tlm::tlm_target_socket<32, afi_protocol, 1, sc_core::SC_ZERO_OR_MORE_BOUND>;

/// A blocking-only forward interface: implement b_transport; a non-blocking
/// call is served as a blocking one, and there is no DMI or debug access.
class AfiBlockingTarget : public AfiFwIf {
 public:
  tlm::tlm_sync_enum nb_transport_fw(Message& m, tlm::tlm_phase&, sc_core::sc_time& t) override {
    b_transport(m, t);
    return tlm::TLM_COMPLETED;
  }
  bool get_direct_mem_ptr(Message&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(Message&) override { return 0; }
};

/// Blocking-only backward interface (nothing comes back on a link).
class AfiNoBw : public AfiBwIf {
 public:
  tlm::tlm_sync_enum nb_transport_bw(Message&, tlm::tlm_phase&, sc_core::sc_time&) override {
    return tlm::TLM_COMPLETED;
  }
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
};

class FabricLink;

/// One direction of a link: the serializer (core::SerialChannel: messages,
/// payload bytes, packets, busy time, utilization) and the sender's output buffer.
class LinkChannel : public core::SerialChannel, public AfiBlockingTarget {
 public:
  struct Names {
    const char* dir;
    core::SerialChannel::Names serial;
    const char* peak_out_buffer_bytes;
  };
  LinkChannel(FabricLink& link, const Names& names, uint32_t rx_port);
  void b_transport(Message& m, sc_core::sc_time& delay) override;

 private:
  // What every message reads and updates, together, first among this
  // class's members.
  AfiFwIf* m_to = nullptr;  // what `out` is bound to (found at the first message)
  uint64_t m_packet_bytes;  // the link's packet_bytes
  uint32_t m_rx_port;
  uint32_t m_tid;  // trace track: 1 a->b, 2 b->a
  // The output buffer: (serialization end, bytes) of the messages still in
  // it, a ring of m_queued.size() (a power of two) slots from m_head (ends
  // never decrease).
  size_t m_head = 0, m_count = 0;
  uint64_t m_queued_bytes = 0;
  std::vector<std::pair<uint64_t, uint64_t>> m_queued = std::vector<std::pair<uint64_t, uint64_t>>(4);

 public:
  core::Counter peak_out_buffer_bytes;
  AfiTarget in;      ///< bound by the sending AFI port
  AfiInitiator out;  ///< bound to the receiving AFI port

 private:
  friend class FabricLink;
  FabricLink& m_link;
  AfiNoBw m_bw;
};

class FabricLink : public core::Module {
 public:
  struct Defaults {
    double GBps;
    uint32_t latency_cycles;
    uint32_t packet_bytes;
    double efficiency = 0.94;
  };
  /// Link between NPU a's port a_port and NPU b's port b_port.
  FabricLink(const sc_core::sc_module_name& nm, const Defaults& d, uint32_t a, uint32_t a_port, uint32_t b,
             uint32_t b_port);

  core::Param<double> GBps;
  core::Param<double> efficiency;
  core::Param<uint32_t> latency_cycles;
  core::Param<double> clock_mhz;
  core::Param<uint32_t> packet_bytes;

  uint32_t a() const { return m_a; }
  uint32_t b() const { return m_b; }
  /// Payload rate of one direction, GB/s (bandwidth x efficiency).
  double payload_GBps() const { return GBps.get() * efficiency.get(); }
  /// Perfetto process of this link (0 when tracing is off).
  uint32_t trace_pid() const { return m_pid; }

  LinkChannel a_to_b;
  LinkChannel b_to_a;

 private:
  uint32_t m_a, m_b;
  uint32_t m_pid = 0;
};

}  // namespace fabricvp::npu
