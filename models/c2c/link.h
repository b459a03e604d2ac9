// C2C SerDes link (seed 000 §2.3): full duplex, `lanes` x `lane_gbps`, one
// 320-byte vector per 328-byte packet, no back-pressure, no arbitration.
//
// Timing of one direction. A burst whose first vector is ready at the
// serializer at time r starts at s = max(r, free), where `free` is the end of
// the previous burst; packet i (0-based) leaves the serializer at
// s + ser(i + 1) and is complete in the receiver's buffer at
//   arrival(i) = s + ser(i + 1) + L
// with ser(n) = ceil(n * packet_bytes * 8 / (lanes * lane_gbps)) ps.
//
// with L = tx_pipeline_ps + propagation_ps + fec_latency_ps() + rx_pipeline_ps.
//
// PHY (models/c2c/phy.h, docs/phy.md): packets are framed into RS-FEC
// codewords per burst; with error injection on, every codeword that gets an
// error is built from the real bytes, corrupted and decoded; corrected words
// deliver intact vectors, uncorrectable ones flag their vectors (the receiving
// chip raises a machine check), miscorrected ones deliver the wrong bits
// (through keep()) and are counted as silent corruptions.
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/c2c/phy.h"
#include "models/c2c/protocol.h"
#include "models/core/channel.h"
#include "models/core/module.h"
#include "models/core/timebase.h"

namespace fabricvp::c2c {

class Link;

/// One direction of a link: the serializer (core::SerialChannel: bursts of
/// packets, busy time, utilization) and the vectors in flight.
class Channel : public core::SerialChannel, public FwIf {
 public:
  /// Stat leaf names of one direction (static strings, "a_to_b.packets", ...).
  struct Names {
    const char *dir, *out;
    core::SerialChannel::Names serial;
    const char *wire_bytes, *peak_in_flight;
    const char *codewords, *corrected_codewords, *corrected_symbols, *uncorrectable_codewords, *miscorrected_codewords,
        *flagged_vectors, *corrupted_vectors, *bit_errors, *hist;
  };
  /// `phy`: the system-wide PHY settings added to the link's own (or none).
  Channel(Link& link, const Names& names, uint32_t trace_tid, const Phy* phy);
  ~Channel() override;

  /// Reserve a share of the lane bandwidth for control codes interleaved with
  /// the packets (the HAC exchange, models/hac): packets serialize at
  /// lanes x lane_gbps x (1 - share). Call before anything is scheduled.
  void reserve_control_share(double share);
  double control_share() const { return m_control_share; }
  /// Packet i of burst b is complete in the receiver's buffer.
  uint64_t arrival_ps(const Burst& b, uint64_t i) const { return b.start_ps + rate().ps(i + 1) + latency_ps(); }
  /// "sys.node0.link2_5.a_to_b" (made when asked: a large machine has 10^5 of these).
  std::string name() const;

  // Data path. The transmitter hands over each vector when it reads it from
  // SRAM, as a reference to that SRAM vector (no copy); the receiver copies it
  // into its own SRAM when it writes it. If the sender is about to overwrite a
  // vector still in flight, it first has the channel keep() a private copy, so
  // the receiver always gets the value the transmitter read.
  /// Hand over one vector; returns its stream index (0, 1, 2, ... per direction).
  uint64_t push(const uint8_t* vector);
  bool empty() const { return m_head == m_tail; }
  const uint8_t* front() const { return m_ring[m_head & m_mask]; }
  void pop() {
    if (!m_kept.empty()) m_kept.erase(m_head);
    ++m_head;
  }
  /// False while the FEC codeword(s) carrying the next vector have not been
  /// decoded yet (their later packets are not yet read at the source).
  bool head_decoded() const { return !m_fec || m_head < m_decoded; }
  /// The receiver needs the head now and the source has been drained to that
  /// time: no burst can still join the open frame back to back, so its last
  /// codeword is completed with idle bits and decoded.
  void close_frame();
  /// The next vector was carried by an uncorrectable codeword.
  bool head_flagged() {
    if (!m_fec) return false;
    auto& f = m_fec->flagged;
    while (!f.empty() && f.front() < m_head) f.pop_front();
    return !f.empty() && f.front() == m_head;
  }
  /// Stream index of the next vector the receiver takes.
  uint64_t head() const { return m_head; }
  /// Give the in-flight vector `stream_index` a private copy of its current bytes.
  void keep(uint64_t stream_index);
  size_t in_flight() const { return m_tail - m_head; }
  Producer* producer() const { return m_producer; }
  void set_producer(Producer* p) { m_producer = p; }

  void bind_out(RxSocket& rx);
  TxSocket& out() { return m_out; }

  // TLM forward interface (the transmitter calls b_transport).
  void b_transport(Burst& b, sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_fw(Burst& b, tlm::tlm_phase& ph, sc_core::sc_time& t) override;
  bool get_direct_mem_ptr(Burst& b, tlm::tlm_dmi& dmi) override;
  unsigned int transport_dbg(Burst& b) override;

 private:
  class Bw : public BwIf {
   public:
    tlm::tlm_sync_enum nb_transport_bw(Burst&, tlm::tlm_phase&, sc_core::sc_time&) override;
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
  };

  Link& m_link;
  const char* m_dir;
  uint32_t m_tid;
  double m_control_share = 0;
  uint64_t m_next_index = 0;
  Producer* m_producer = nullptr;
  Bw m_bw;
  TxSocket m_out;

  std::vector<const uint8_t*> m_ring;  // power-of-two ring, indexed by stream index & mask
  uint64_t m_mask = 0, m_head = 0, m_tail = 0;
  std::unordered_map<uint64_t, std::array<uint8_t, kVectorBytes>> m_kept;  // private copies, by stream index

  // PHY. The error-injection state exists only where errors can occur, so a
  // large machine at BER 0 pays nothing for it.
  // A frame is a run of back-to-back bursts: one continuous bit stream cut
  // into codewords. While open (the next burst may still follow back to back)
  // its last codeword, which the next burst would complete, is not decoded.
  struct Frame {
    uint64_t first, count, codewords, next;  // stream index of the first packet; codewords; next to decode
    bool open;
  };
  struct Errors {
    explicit Errors(const FecLane::Setup& s) : lane(s) {}
    FecLane lane;
    std::deque<Frame> frames;
    std::deque<uint64_t> flagged;  // stream indices carried by uncorrectable codewords, ascending
    std::vector<const uint8_t*> wire;
    std::vector<uint8_t> wirebuf, received;
    std::array<uint64_t, 32> hist{};  // codewords by injected symbol errors (last: more)
  };
  void decode_through(uint64_t stream_index);
  std::unique_ptr<Errors> m_fec;
  uint64_t m_decoded = 0;  // vectors below this stream index are decoded
  uint32_t m_kbits = 0;    // FEC message bits per codeword (0: no FEC)
  uint32_t m_fill = 0;     // message bits used in the last codeword of the stream (0: none)
  uint32_t m_t = 0;        // symbols the code corrects

 public:
  core::Counter wire_bytes, peak_in_flight;
  core::Counter codewords, corrected_codewords, corrected_symbols, uncorrectable_codewords, miscorrected_codewords,
      flagged_vectors, corrupted_vectors, bit_errors;
  core::Derived symbol_error_hist;
};

class Link : public core::Module {
 public:
  /// `phy`: the system-wide PHY settings added to the link's own (none: the link's alone).
  Link(const sc_core::sc_module_name& nm, const std::string& a_name, const std::string& b_name,
       const Phy* phy = nullptr);

  core::Param<uint32_t> lanes;
  core::Param<double> lane_gbps;
  core::Param<uint32_t> packet_bytes;
  core::Param<uint64_t> tx_pipeline_ps;
  core::Param<uint64_t> propagation_ps;
  core::Param<uint64_t> rx_pipeline_ps;
  core::Param<std::string> fec;
  core::Param<uint64_t> fec_decoder_ps;
  core::Param<double> ber;
  core::Param<double> burst_rate;
  core::Param<double> burst_length_mean;
  core::Param<bool> marginal;

  /// FEC code of this link (false: no FEC).
  bool fec_code(FecCode& code) const;
  /// Receiver latency of FEC: one codeword accumulation plus the decoder (0 without FEC).
  uint64_t fec_latency_ps() const;
  /// SerDes signalling rate per lane including FEC parity, Gb/s.
  double line_gbps() const;

  RxSocket a_tx;  ///< bound by endpoint A's transmitter
  RxSocket b_tx;  ///< bound by endpoint B's transmitter
  Channel a_to_b;
  Channel b_to_a;

  const std::string& a_name() const { return m_a; }
  const std::string& b_name() const { return m_b; }
  uint32_t trace_pid() const { return m_pid; }
  /// Payload bandwidth of one direction, GB/s.
  double payload_GBps() const { return a_to_b.rate().payload_GBps(kVectorBytes); }

 private:
  std::string m_a, m_b;
  uint32_t m_pid = 0;
};

}  // namespace fabricvp::c2c
