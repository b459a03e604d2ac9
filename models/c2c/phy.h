// C2C physical layer: Reed-Solomon FEC framing, lane striping, seeded bit-error
// injection and the error statistics of one link direction (seed 000 §2.3, §4.5).
//
// Framing. The packets of a burst form one bit stream (packet_bytes x 8 bits
// each: an 8-byte header carrying the stream index, then the 320-byte vector).
// The stream is cut into FEC messages of k x 10 bits; each becomes a codeword
// of n symbols (message, then parity); the last codeword of a burst is filled
// up with idle bits. Symbol s of a codeword travels on lane s mod lanes.
//
// Rates. `lane_gbps` is the rate of the packet stream per lane; the SerDes
// signals at lane_gbps x n / k (KP4: 25 -> 26.46 Gb/s), so FEC parity costs
// signalling rate, not payload rate, and 320/328 stays the packet efficiency.
// Latency. The receiver releases a packet a fixed time after its last bit:
// one codeword accumulation (k x 10 bits at the packet-stream rate) plus the
// decoder pipeline. Fixed, so that the schedule stays exact (docs/phy.md).
//
// Errors. Independent bit errors at `ber` and error bursts starting at
// `burst_rate` per bit (length geometric with mean `burst_length_mean` bits,
// first and last bit flipped, bits between flipped with probability 1/2),
// each burst on one lane. Error positions come from a seeded geometric skip,
// so a codeword without an injected error costs one comparison and is never
// decoded. A codeword with errors is built from the real bytes of its packets,
// encoded, corrupted, and decoded by the real codec:
//   - corrected: counted, the vectors arrive intact;
//   - uncorrectable: every vector the codeword carries is flagged; the
//     receiving chip raises a machine check when a RECV takes it;
//   - miscorrected (the decoder accepted a wrong codeword): a silent
//     corruption a real system cannot see; the model applies the wrong bits to
//     the delivered vectors and counts them.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/c2c/fec.h"
#include "models/core/module.h"

namespace fabricvp::c2c {

/// System-wide PHY settings (`sys.phy.*`), added to every link's own.
class Phy : public core::Module {
 public:
  explicit Phy(const sc_core::sc_module_name& nm);
  core::Param<double> ber;
  core::Param<double> burst_rate;
  core::Param<double> burst_length_mean;
};

/// Error injection and FEC decoding of one link direction.
class FecLane {
 public:
  struct Setup {
    FecCode code;
    uint32_t lanes;
    uint32_t packet_bytes;
    double ber, burst_rate, burst_length_mean;
    uint64_t seed;
  };
  explicit FecLane(const Setup& s);

  /// Bits of one codeword's message (k x 10) and of the whole codeword.
  uint32_t message_bits() const { return m_kbits; }
  /// Codewords a burst of `count` packets occupies.
  uint64_t codewords_for(uint64_t count) const;

  struct Outcome {
    uint32_t bit_errors = 0;     ///< bits flipped in the codeword
    uint32_t symbol_errors = 0;  ///< symbols that differ from the sent ones
    enum Kind { clean, corrected, uncorrectable, miscorrected } kind = clean;
    uint32_t corrected_symbols = 0;
  };
  /// Does the next codeword (in this direction's order) get any error? Draws
  /// the error positions; false for an error-free codeword (no work at all).
  bool next_codeword_has_errors();
  /// Fault injection: the next codeword gets exactly these flipped bits
  /// (positions within the n x 10 codeword bits), in addition to the random ones.
  void inject_next(std::vector<uint32_t> bits) { m_forced = std::move(bits); }
  /// Run the codeword drawn by next_codeword_has_errors() through encode,
  /// corruption and decode. `wire(p)` returns packet p's wire image
  /// (packet_bytes) for the packets [first, last] the codeword overlaps;
  /// `bit0` is the codeword's first bit within packet `first`'s image; bits
  /// after the last packet are idle fill (zero). On a miscorrection `received`
  /// holds the delivered wire images of those packets.
  Outcome decode(const std::vector<const uint8_t*>& wire, uint64_t bit0, std::vector<uint8_t>& received);

 private:
  uint64_t draw();
  double uniform();
  uint64_t skip(double inv_log);

  RsCodec m_codec;
  uint32_t m_lanes, m_packet_bits, m_kbits, m_nbits;
  double m_inv_ber = 0, m_inv_burst = 0, m_burst_p = 0;
  uint64_t m_state;
  uint64_t m_cw = 0;                                            // next codeword index
  uint64_t m_next_bit = UINT64_MAX, m_next_burst = UINT64_MAX;  // stream positions (n x 10 bits per codeword)
  std::vector<uint32_t> m_flips;  // bit positions (within the codeword) to flip, from the last draw
  std::vector<uint32_t> m_forced;
  std::array<uint16_t, kFecMaxN> m_sent{}, m_word{};
};

}  // namespace fabricvp::c2c
