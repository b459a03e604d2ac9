// One C2C port of a TSP (sys.node0.tsp3.c2c2): the transmit socket, the
// receive socket and the receive buffer between the link and the core clock.
//
// The receive buffer holds `rx_buffer_vectors` vectors. There is no
// back-pressure: a vector arriving at a full buffer is an overflow, and a RECV
// that takes a vector which has not arrived is an underflow. Both are hardware
// errors reported with chip, port and cycle. Arrivals and consumptions are known
// for whole bursts when SEND and RECV issue, so the buffer is checked by
// sweeping both sequences in time order, without an event per vector.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "models/c2c/link.h"
#include "models/core/module.h"

namespace fabricvp::tsp {

class Tsp;

class Port : public core::Module, public c2c::FwIf, public c2c::BwIf {
 public:
  Port(const sc_core::sc_module_name& nm, Tsp& chip, uint32_t index);

  c2c::TxSocket tx;
  c2c::RxSocket rx;

  /// Wire this port to a link: `out` carries what this port sends, `in` what it receives.
  void attach(c2c::Channel& out, c2c::Channel& in, const std::string& peer);
  bool connected() const { return m_out != nullptr; }
  c2c::Channel* out() const { return m_out; }
  c2c::Channel* in() const { return m_in; }
  const std::string& peer() const { return m_peer; }
  uint32_t index() const { return m_index; }

  /// True if a RECV taking its first vector at `t` would overlap the previous RECV.
  bool rx_busy(uint64_t t) const { return m_rx_any && t <= m_rx_busy_until; }
  /// Time the latest RECV takes its last vector.
  uint64_t rx_busy_until() const { return m_rx_busy_until; }
  /// A RECV issued at `issue_cycle` takes `count` vectors at q0 + ser(i).
  void add_consume(uint64_t q0, uint32_t count, uint64_t issue_cycle);
  /// Check the receive buffer up to `horizon` (arrivals before consumptions at equal times).
  void sweep(uint64_t horizon);
  /// After the final sweep: vectors that arrived but were never received.
  void finish();

  // Receive side of the link protocol: a burst is on its way to this port.
  void b_transport(c2c::Burst& b, sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_fw(c2c::Burst&, tlm::tlm_phase&, sc_core::sc_time&) override;
  bool get_direct_mem_ptr(c2c::Burst&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(c2c::Burst&) override { return 0; }
  // Transmit side: blocking transport only.
  tlm::tlm_sync_enum nb_transport_bw(c2c::Burst&, tlm::tlm_phase&, sc_core::sc_time&) override;
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}

  core::Counter tx_vectors, tx_peak_backlog, rx_vectors, rx_peak_occupancy, rx_wait_ps;

 private:
  struct Arrivals {
    uint64_t base;  // arrival(i) = base + ser(i + 1)
    uint32_t count, done;
  };
  struct Consumes {
    uint64_t base;  // take(i) = base + ser(i)
    uint32_t count, done;
    uint64_t issue_cycle;
  };
  void error(uint64_t t, const std::string& what);

  Tsp& m_chip;
  uint32_t m_index;
  c2c::Channel* m_out = nullptr;
  c2c::Channel* m_in = nullptr;
  std::string m_peer;
  std::deque<Arrivals> m_arrivals;
  std::deque<Consumes> m_consumes;
  std::vector<uint64_t> m_buffered;  // arrival times of vectors in the buffer (ring)
  uint64_t m_buf_head = 0, m_buf_count = 0;
  uint64_t m_arrived = 0, m_taken = 0;
  uint64_t m_rx_busy_until = 0;
  bool m_rx_any = false;
};

}  // namespace fabricvp::tsp
