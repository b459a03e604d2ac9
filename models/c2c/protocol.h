// C2C link protocol types for TLM-2.0.
//
// Links carry bursts of 320-byte vectors, not memory-mapped reads, so they get
// their own payload and protocol-types class: a C2C socket cannot be bound to a
// memory socket by mistake. One b_transport call hands a whole burst to the
// link; the link fills in exact per-packet timing (serialization start, stream
// position) and forwards the burst to the receiver. The vectors' bytes travel
// through the link's Channel at the exact time the transmitter reads them.
#pragma once

#include <cstdint>
#include <tlm>

namespace fabricvp::c2c {

constexpr uint32_t kVectorBytes = 320;  ///< payload of one packet (one TSP vector)

class Channel;

/// One burst of back-to-back vectors on one link direction.
struct Burst {
  // Set by the transmitter.
  uint32_t count = 0;     ///< vectors in the burst
  uint64_t ready_ps = 0;  ///< first vector ready at the serializer
  // Set by the link.
  uint64_t start_ps = 0;       ///< serialization start of the first packet; packet i ends at start + ser(i + 1)
  uint64_t stream_index = 0;   ///< position of the first vector in this direction's stream
  Channel* channel = nullptr;  ///< the link direction that carries it
};

struct protocol_types {
  using tlm_payload_type = Burst;
  using tlm_phase_type = tlm::tlm_phase;
};

// Sockets may stay unbound: a chip port without a cable simply has no link
// (the program loader rejects SEND/RECV on it).
using TxSocket = tlm::tlm_initiator_socket<32, protocol_types, 1, sc_core::SC_ZERO_OR_MORE_BOUND>;
using RxSocket = tlm::tlm_target_socket<32, protocol_types, 1, sc_core::SC_ZERO_OR_MORE_BOUND>;
using FwIf = tlm::tlm_fw_transport_if<protocol_types>;
using BwIf = tlm::tlm_bw_transport_if<protocol_types>;

/// Interface of a component that produces data into a Channel lazily: the
/// consumer asks it to apply its operations up to a time before reading.
class Producer {
 public:
  virtual ~Producer() = default;
  virtual void drain(uint64_t horizon_ps) = 0;
};

}  // namespace fabricvp::c2c
