// SiP-ML's circuit-switched optical fabrics (seed 003 §2, §3) as a plane of
// an NPU fabric: every GPU's photonic interface is one AFI port into the
// fabric, whose transceivers (D of them, or W wavelengths) reach the peers
// the installed configuration gives it light paths to.
//
//   OcsFabric   SiP-OCS: Q optical circuit switches, GPU i on port i of each;
//               a circuit carries B / Q (B: the GPU's bandwidth).
//   RingFabric  SiP-Ring: a ring of two fibers, W = B / 25 Gbit/s wavelengths
//               per GPU; a lightpath carries 25 Gbit/s over at most `reach`
//               hops, a GPU talks to at most `degree` peers.
//
// Timing, per message (no event per byte): the circuits from the sending GPU
// to the receiving one together serialize at their summed rate, one message
// at a time in the order they are handed over (a message's bytes are striped
// over the pair's circuits, as the transceivers of one peer work in
// parallel):
//   start = max(ready, pair free),  arrival = start + ser(bytes) + latency
// Pairs never share a circuit, so no other traffic slows a pair down. A
// message for a pair with no circuit is a hardware error: the control plane
// gave the fabric a configuration that does not serve the traffic.
//
// install() takes a configuration from the control plane (sw/optical) and
// refuses an illegal one with every violation (its own check, independent
// of sw/optical's checkers).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/core/module.h"
#include "models/core/stats.h"
#include "models/core/timebase.h"
#include "models/npu/afi.h"
#include "models/optical/config.h"

namespace fabricvp::optical {

/// What a plane of optical fabric is built from (the dimension's parameters).
struct FabricShape {
  std::vector<uint32_t> npus;  ///< the NPU on port p (port = the GPU's index in the fabric)
  uint32_t afi_port = 0;       ///< the AFI port every NPU has into this fabric
  double gbps = 0;             ///< B: a GPU's bandwidth over all its transceivers, payload Gbit/s
  uint64_t latency_ps = 0;     ///< end of serialization to the receiver (the fabric latency)
  /// The port of the GPU a message for NPU `dst` goes to (a member of this plane).
  std::function<uint32_t(uint32_t)> port_of;
};

class CircuitFabric : public core::Module {
 public:
  ~CircuitFabric() override;
  uint32_t ports() const { return static_cast<uint32_t>(m_shape.npus.size()); }
  npu::AfiInitiator& tx(uint32_t p) { return *m_tx[p]; }
  npu::AfiTarget& rx(uint32_t p) { return *m_rx[p]; }
  const FabricShape& shape() const { return m_shape; }
  /// Circuits installed from port src to port dst, and their summed rate in Gbit/s.
  uint32_t circuits(uint32_t src, uint32_t dst) const;
  double pair_gbps(uint32_t src, uint32_t dst) const;
  bool configured() const { return m_configured; }
  /// f(src port, dst port, circuits, busy ps) for every pair with circuits.
  template <typename F>
  void for_each_pair(F&& f) const {
    for (uint32_t src = 0; src < m_out.size(); ++src)
      for (const Pair& p : m_out[src]) f(src, p.dst, p.count, p.busy_ps);
  }

  core::Counter messages, bytes, circuits_installed, pairs_installed, configurations;
  core::Derived mean_pair_utilization, max_pair_utilization;

 protected:
  CircuitFabric(const sc_core::sc_module_name& nm, const char* kind, FabricShape shape);
  /// Replace the circuits: count[src][dst] circuits of `circuit_gbps` each.
  struct PairCircuits {
    uint32_t src, dst, count;
  };
  void set_circuits(const std::vector<PairCircuits>& pairs, double circuit_gbps);

 private:
  class Rx;
  struct Pair {
    uint32_t dst = 0, count = 0;
    core::SerialRate rate;
    uint64_t free_ps = 0, busy_ps = 0, bytes = 0;
  };
  void carry(uint32_t src_port, npu::Message& m, uint64_t now);
  Pair* find(uint32_t src, uint32_t dst);
  const Pair* find(uint32_t src, uint32_t dst) const;
  FabricShape m_shape;
  std::vector<std::vector<Pair>> m_out;  // per source port: its pairs (at most D, scanned)
  std::vector<std::unique_ptr<npu::AfiInitiator>> m_tx;
  std::vector<std::unique_ptr<npu::AfiTarget>> m_rx;
  std::vector<std::unique_ptr<Rx>> m_rx_if;
  npu::AfiNoBw m_bw;
  bool m_configured = false;
  uint32_t m_pid = 0;  // trace process (0: off)
};

/// SiP-OCS (sys.dim<d>.ocs<g>): `switches` circuit switches.
class OcsFabric final : public CircuitFabric {
 public:
  OcsFabric(const sc_core::sc_module_name& nm, FabricShape shape);
  core::Param<uint32_t> switches;
  /// Q = switches: the degree of every GPU.
  uint32_t degree() const { return switches.get(); }
  double circuit_gbps() const { return shape().gbps / switches.get(); }
  /// Install switch configurations; returns every violation (nothing is
  /// installed then): Q switches of `ports()` ports, each a partial
  /// permutation with no circuit to itself.
  std::vector<std::string> install(const OcsConfig& config);
};

/// SiP-Ring (sys.dim<d>.ring<g>): GPUs in port order around the ring.
class RingFabric final : public CircuitFabric {
 public:
  RingFabric(const sc_core::sc_module_name& nm, FabricShape shape);
  core::Param<double> wavelength_Gbps;
  core::Param<uint32_t> reach, degree;
  /// The ring's geometry (W = B / wavelength_Gbps, a whole number: checked).
  RingSpec spec() const;
  /// Install lightpaths; returns every violation (nothing is installed then):
  /// ends and wavelength in range, reach, a wavelength at most once on a fiber
  /// segment and at a GPU's transmitter and receiver, degree.
  std::vector<std::string> install(const std::vector<Lightpath>& paths);

 private:
  uint32_t m_wavelengths = 0;
};

}  // namespace fabricvp::optical
