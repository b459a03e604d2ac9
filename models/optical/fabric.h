// SiP-ML's fabrics (seed 003 §2, §3, §4.1) as planes of an NPU fabric: every
// GPU reaches the plane through one AFI port; the plane's transceivers,
// switches and NICs are its own.
//
//   OcsFabric         SiP-OCS: Q optical circuit switches, GPU i on port i of
//                     each; a circuit carries B / Q (B: the GPU's bandwidth).
//   RingFabric        SiP-Ring: a ring of two fibers, W = B / 25 Gbit/s
//                     wavelengths per GPU; a lightpath carries 25 Gbit/s over
//                     at most `reach` hops, a GPU talks to at most `degree` peers.
//   ElectricalFabric  the electrical baselines: Elect-Flat, an ideal
//                     full-bisection switch (every GPU a port of B each way),
//                     and Elect-Cluster, servers of `gpus_per_server` GPUs on
//                     such a switch, joined through one NIC of `server_Gbps`
//                     each way per server.
//
// Circuit planes, per message (no event per byte): the circuits from the sending GPU
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
//
// Electrical planes, per message: an output-queued switch that cuts through:
// the message crosses a chain of ports (the GPU's port into the switch, the
// servers' NICs out and in, the receiver's port), each serializing one
// message at a time at its rate; at port k it starts s_k = max(s_(k-1),
// free_k), ends e_k = max(s_k + bytes / rate_k, e_(k-1)), and free_k = e_k;
// it arrives at e_last + latency. Buffers are unbounded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/core/module.h"
#include "models/core/stats.h"
#include "models/core/timebase.h"
#include "models/core/timed_queue.h"
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
  /// The fabric's action queue (reconfigurable planes hold messages on it).
  core::ActionQueue* actions = nullptr;
};

/// One plane: its ports, the NPUs on them, and how a message crosses it.
class Plane : public core::Module {
 public:
  ~Plane() override;
  uint32_t ports() const { return static_cast<uint32_t>(m_shape.npus.size()); }
  npu::AfiInitiator& tx(uint32_t p) { return *m_tx[p]; }
  npu::AfiTarget& rx(uint32_t p) { return *m_rx[p]; }
  const FabricShape& shape() const { return m_shape; }
  /// Whether the plane needs a configuration before it carries anything.
  virtual bool configurable() const { return false; }
  /// The busy time of every channel (a circuit plane's pairs, an electrical
  /// plane's ports), for utilizations.
  virtual void for_each_channel(const std::function<void(uint64_t busy_ps)>& f) const = 0;
  /// "pairs", "ports": what for_each_channel counts.
  virtual const char* channels() const = 0;

  core::Counter messages, bytes;
  /// What one port sent another (measured as messages are delivered).
  struct PairTraffic {
    uint32_t src = 0, dst = 0;  ///< ports
    uint64_t messages = 0, bytes = 0;
  };
  /// Every pair that carried anything, by source then destination port.
  std::vector<PairTraffic> pair_traffic() const;

 protected:
  Plane(const sc_core::sc_module_name& nm, const char* kind, FabricShape shape);
  /// Serialize `bytes` from port src to port dst, ready at `ready`: the start
  /// of its serialization and the end of it at the receiver's side; false
  /// (after raising a hardware error) if the plane cannot carry it.
  virtual bool cross(uint32_t src, uint32_t dst, uint64_t bytes, uint64_t ready, uint64_t& start, uint64_t& end) = 0;
  /// Take the message and deliver it later (deliver()); false: time it with cross() now.
  virtual bool hold(uint32_t src, uint32_t dst, npu::Message& m) {
    (void)src, (void)dst, (void)m;
    return false;
  }
  /// Hand a held message to its receiver: serialized from `start` to `end`.
  void deliver(uint32_t src, uint32_t dst, npu::Message& m, uint64_t start, uint64_t end);

 private:
  class Rx;
  void carry(uint32_t src_port, npu::Message& m, uint64_t now);
  FabricShape m_shape;
  std::vector<std::unique_ptr<npu::AfiInitiator>> m_tx;
  std::vector<std::unique_ptr<npu::AfiTarget>> m_rx;
  std::vector<std::unique_ptr<Rx>> m_rx_if;
  npu::AfiNoBw m_bw;
  uint32_t m_pid = 0;                                 // trace process (0: off)
  std::unordered_map<uint64_t, PairTraffic> m_pairs;  // src * ports + dst
};

/// A plane of circuits between GPU pairs (SiP-OCS, SiP-Ring).
///
/// One-shot (`schedule: one_shot`): one configuration for the run, installed
/// before it starts; a message is timed in closed form when it is handed over.
///
/// Dynamic (`schedule: dynamic`): the plane holds each message until its
/// serialization ends (one action per message), so a reconfiguration can
/// re-time what is in flight. Every `period` (counted from the end of the
/// previous reconfiguration) it hands the traffic offered since the last
/// reconfiguration, plus what is still queued, to its planner (the control
/// plane, set by the system), which installs the result: circuits present before and
/// after keep carrying, changed ones are dark for `dark` (the OCS's
/// reconfiguration delay, the micro-rings' retuning), then the pair runs at
/// its new rate. A message for a pair without a circuit waits for a
/// configuration that has one. While the plane is idle no epoch runs.
///
/// `estimate` says what a re-plan is for: `past`, the traffic offered since
/// the last reconfiguration plus what is queued (seed 003 §3.3: the last
/// window's traffic matrix estimates the next one); `schedule`, what is
/// queued only, to which the planner adds the traffic the job's schedule
/// will offer before the next re-plan (its execution graph or training loop, read ahead:
/// the predictability the seed leaves for future work). With `schedule` the
/// epochs go on while the planner reports the job progressing, so circuits
/// are planned before the traffic that needs them arrives.
class CircuitFabric : public Plane, public core::Actor {
 public:
  ~CircuitFabric() override;
  /// Circuits installed from port src to port dst, and their summed rate in Gbit/s.
  uint32_t circuits(uint32_t src, uint32_t dst) const;
  double pair_gbps(uint32_t src, uint32_t dst) const;
  bool configured() const { return m_configured; }
  bool configurable() const override { return true; }
  bool dynamic() const { return schedule.get() == "dynamic"; }
  void for_each_channel(const std::function<void(uint64_t)>& f) const override;
  const char* channels() const override { return "pairs"; }
  /// Dynamic: the control plane, called at every epoch with the measured
  /// traffic to serve (bytes by port pair, as `estimate` says); it installs
  /// the new configuration, and returns whether the epochs should go on
  /// although the plane carried nothing since the last one (the job still
  /// progressing: `schedule` only).
  using Planner = std::function<bool(CircuitFabric&, const std::vector<Demand>&)>;
  void set_planner(Planner planner) { m_planner = std::move(planner); }
  bool plans_ahead() const { return estimate.get() == "schedule"; }
  /// Dynamic: the time from one re-plan to the end of the next one's dark
  /// time (what a plan made now must serve).
  uint64_t horizon_ps() const { return 2 * m_dark + m_period; }
  void act(uint32_t what, uint64_t arg) override;

  core::Param<std::string> schedule, estimate;
  core::Counter circuits_installed, pairs_installed, configurations, held_ps;
  core::Derived mean_pair_utilization, max_pair_utilization;

 protected:
  CircuitFabric(const sc_core::sc_module_name& nm, const char* kind, FabricShape shape);
  /// Dynamic timing: reconfigure `period` after the last reconfiguration
  /// ended, for the traffic offered since the last one began plus what is
  /// queued; changed circuits dark for `dark`.
  void set_epochs(uint64_t period_ps, uint64_t dark_ps);
  /// Replace the circuits: `count` circuits of `circuit_gbps` each from src
  /// to dst, of which `kept` were in the previous configuration (they carry
  /// on through a reconfiguration; the others are dark for the dark time).
  struct PairCircuits {
    uint32_t src, dst, count, kept;
  };
  void set_circuits(const std::vector<PairCircuits>& pairs, double circuit_gbps);
  bool cross(uint32_t src, uint32_t dst, uint64_t bytes, uint64_t ready, uint64_t& start, uint64_t& end) override;
  bool hold(uint32_t src, uint32_t dst, npu::Message& m) override;

 private:
  struct Pair {
    uint32_t dst = 0, count = 0, lit = 0;  // circuits installed; circuits carrying now (dynamic: kept while dark)
    core::SerialRate rate;                 // at `lit` circuits
    uint64_t free_ps = 0, busy_ps = 0, bytes = 0;
    // dynamic: the messages held, the head's serialization
    std::vector<uint32_t> queue;  // pool ids, head at queue_head
    size_t queue_head = 0;
    uint64_t seg_start = 0, left = 0, first_start = 0, gen = 0, offered = 0, queued_bytes = 0;
  };
  enum : uint32_t { kHead = 0, kEpoch = 1, kLit = 2 };
  Pair* find(uint32_t src, uint32_t dst);
  const Pair* find(uint32_t src, uint32_t dst) const;
  Pair& pair_for(uint32_t src, uint32_t dst);
  void retime(Pair& p, uint64_t now);
  /// Run the pair at `lit` circuits from now (running: re-time its head message).
  void relight(Pair& p, uint32_t lit, uint64_t now, bool running);
  void start_head(Pair& p, uint64_t now);
  void epoch(uint64_t now);
  double m_circuit_gbps = 0;
  std::vector<std::vector<Pair>> m_out;                // per source port: its pairs (at most D, scanned)
  std::vector<std::pair<uint32_t, uint32_t>> m_index;  // action arg -> (src, position in m_out[src])
  bool m_configured = false;
  // dynamic
  Planner m_planner;
  uint64_t m_period = 0, m_dark = 0;
  bool m_epoch_pending = false;
  uint64_t m_last_traffic = 0;  // when a message was last handed over
  npu::MessagePool m_held;
};

/// Elect-Flat (sys.dim<d>.flat<g>) and Elect-Cluster (sys.dim<d>.cluster<g>).
class ElectricalFabric final : public Plane {
 public:
  /// `cluster`: servers joined through their NICs (else one flat switch).
  ElectricalFabric(const sc_core::sc_module_name& nm, FabricShape shape, bool cluster);
  std::optional<core::Param<uint32_t>> gpus_per_server;
  std::optional<core::Param<double>> server_Gbps;
  uint32_t servers() const { return static_cast<uint32_t>(m_nic_out.size()); }
  void for_each_channel(const std::function<void(uint64_t)>& f) const override;
  const char* channels() const override { return "ports"; }

  core::Derived mean_port_utilization, max_nic_utilization;
  core::Counter nic_bytes;

 protected:
  bool cross(uint32_t src, uint32_t dst, uint64_t bytes, uint64_t ready, uint64_t& start, uint64_t& end) override;

 private:
  struct Port {
    core::SerialRate rate;
    uint64_t free_ps = 0, busy_ps = 0;
  };
  std::vector<Port> m_up, m_down;         // per GPU: into the switch, out of it
  std::vector<Port> m_nic_out, m_nic_in;  // per server (cluster)
  uint32_t m_per_server = 0;
};

/// SiP-OCS (sys.dim<d>.ocs<g>): `switches` circuit switches.
class OcsFabric final : public CircuitFabric {
 public:
  OcsFabric(const sc_core::sc_module_name& nm, FabricShape shape);
  core::Param<uint32_t> switches;
  core::Param<double> reconfig_delay_us, history;
  /// Q = switches: the degree of every GPU.
  uint32_t degree() const { return switches.get(); }
  double circuit_gbps() const { return shape().gbps / switches.get(); }
  /// Install switch configurations; returns every violation (nothing is
  /// installed then): Q switches of `ports()` ports, each a partial
  /// permutation with no circuit to itself.
  std::vector<std::string> install(const OcsConfig& config);
  const OcsConfig& config() const { return m_config; }

 private:
  OcsConfig m_config;
};

/// SiP-Ring (sys.dim<d>.ring<g>): GPUs in port order around the ring.
class RingFabric final : public CircuitFabric {
 public:
  RingFabric(const sc_core::sc_module_name& nm, FabricShape shape);
  core::Param<double> wavelength_Gbps;
  core::Param<uint32_t> reach, degree;
  core::Param<double> replan_us, retune_us;
  /// The ring's geometry (W = B / wavelength_Gbps, a whole number: checked).
  RingSpec spec() const;
  /// Install lightpaths; returns every violation (nothing is installed then):
  /// ends and wavelength in range, reach, a wavelength at most once on a fiber
  /// segment and at a GPU's transmitter and receiver, degree.
  std::vector<std::string> install(const std::vector<Lightpath>& paths);
  const std::vector<Lightpath>& lightpaths() const { return m_paths; }

 private:
  uint32_t m_wavelengths = 0;
  std::vector<Lightpath> m_paths;
};

}  // namespace fabricvp::optical
