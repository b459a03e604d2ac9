// Groq TSP systems (seed 000): the `sys` module tree generated from a few
// parameters, for the kind "groq" (systems/groq/scenario.cpp).
//
// Topologies (seed 000 §2.2, Fig 6):
//   groq_node   one node of `tsps_per_node` TSPs (the GroqNode: 8)
//   dragonfly   `racks` x `nodes_per_rack` nodes. A node's global ports
//               (tsps x global_ports = 32) form a virtual router. With one rack,
//               every pair of nodes is joined by floor(32 / (nodes - 1)) global
//               links (33 nodes: 1 each, 264 TSPs). With several racks, half of
//               each node's global ports join the nodes of its rack (two per
//               pair for 9 nodes) and the other half, round-robin over the
//               rack's nodes, join the other racks (145 racks: one link per
//               pair of racks, 10,440 TSPs).
// Inside a node the TSPs are wired `node_wiring: full` (every pair one cable on
// the local ports, Fig 6a) or `ring` (each neighbour pair `ring_links` cables,
// the radix-8 local group of Fig 6b).
//
// Names: sys.node<N>.tsp<T> (one rack) or sys.rack<R>.node<N>.tsp<T>; local
// cables <node>.link<i>_<j> (ring: link<i>_<j>_<k>); global cables
// sys.glink<a>_<b>_<k> (one rack), sys.rack<R>.rlink<a>_<b>_<k> (inside a rack)
// and sys.xlink<R1>_<R2>_<k> (between racks). Port use: local ports first,
// then global ports; global port g of a node (0..31) is on TSP g % tsps.
//
// Resilience (seed 000 §4.5): `spares` keeps one hot-spare node per rack or per
// system out of the job; `failed_nodes` and `failed_links` mark hardware dead.
// A failed node's logical place is taken by a spare, and routes avoid dead
// links and nodes, so the job runs on the remaining hardware.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <array>
#include <unordered_map>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/c2c/cable.h"
#include "models/c2c/link.h"
#include "models/core/module.h"
#include "models/hac/hac.h"
#include "models/tsp/coord.h"
#include "models/tsp/tsp.h"

namespace fabricvp::groq {

/// Host side of every chip's control socket (program and data loading, result readback).
class Host : public core::Module {
 public:
  SC_HAS_PROCESS(Host);
  explicit Host(const sc_core::sc_module_name& nm);
  tlm_utils::multi_passthrough_initiator_socket<Host> mem;
  /// Chips' HOSTW writes over PCIe (socket index = chip), kept per chip.
  tlm_utils::multi_passthrough_target_socket<Host> pcie_in;
  /// What chip `chip` wrote to host memory (HOSTW) at byte `addr`: false if
  /// any vector of the range was never written (it reads as zero).
  bool received(size_t chip, uint64_t addr, void* data, uint64_t len) const;
  uint64_t received_vectors() const;
  void write(size_t chip, uint64_t addr, const void* data, uint64_t len);
  void read(size_t chip, uint64_t addr, void* data, uint64_t len);
  /// Timed write of whole vectors over the chip's PCIe link (TLM b_transport),
  /// ready at `ready_ps`; returns when its last vector is readable (ps).
  uint64_t dma(size_t chip, uint64_t addr, const void* data, uint64_t len, uint64_t ready_ps);

  /// A write over PCIe the host issues during the run; `fill` makes its data
  /// then (none: a timing-only write, for chips in Tsp::set_timing_only).
  struct TimedWrite {
    uint32_t chip = 0;
    uint64_t addr = 0, len = 0, ready_ps = 0;
    std::function<void(uint8_t*)> fill;
  };
  /// Issue `writes` during the run, per chip in the order given (the link's
  /// FIFO order, as a compiler booked them), each when it is ready or, if
  /// later, when the chip's previous one is issued: only the writes on their
  /// way are held, and the link's timing is the same as issuing all at once.
  void schedule(std::vector<TimedWrite> writes);
  /// The same list issued `rounds` times, round k's writes ready k * period_ps
  /// later (a program repeated by LOOP); each write's data made by
  /// fill(write, k, out), none if fill is empty (timing only). A round's last
  /// write must be issued before the next round's first is ready.
  using RoundFill = std::function<void(size_t write, uint64_t round, uint8_t* out)>;
  void schedule(std::vector<TimedWrite> writes, uint64_t rounds, uint64_t period_ps, RoundFill fill);

  /// Host runtime (seed 000 §5.4, Fig 17): every host-initiated transfer of
  /// an invoked run starts after an invocation delay drawn from an exponential
  /// distribution of this mean (seeded by the run's seed and the transfer); 0: none.
  core::Param<double> pcie_jitter_ns;
  /// Host runtime: from an invoked run's inputs landing to its program's launch on every chip.
  core::Param<double> launch_ns;
  /// The host runtime serving `runs` inferences one after the other: for run
  /// r, after an invocation delay, the writes `inputs(r)` over PCIe (their
  /// ready_ps is ignored); when the last has landed, after launch_ns, every
  /// chip of `chips` is started (its program time 0 is the launch); the run is
  /// done when `out_chip`'s HOSTW to host vector `out_vec` is in host memory,
  /// which the host notices after another invocation delay; then `done(r)`
  /// and the next run.
  struct Invocation {
    uint32_t runs = 1;
    std::function<std::vector<TimedWrite>(uint32_t run)> inputs;
    std::vector<tsp::Tsp*> chips;
    tsp::Tsp* out_chip = nullptr;
    uint64_t out_vec = 0;
    std::function<void(uint32_t run)> done;
  };
  /// One invoked run's times (ps): begun, inputs landed, launched, output in host memory, noticed.
  struct RunTimes {
    uint64_t begin = 0, inputs = 0, launch = 0, output = 0, noticed = 0;
  };
  void invoke(Invocation inv);
  const std::vector<RunTimes>& run_times() const { return m_runs; }

 private:
  void access(size_t chip, uint64_t addr, void* data, uint64_t len, bool write);
  void writer();
  std::vector<TimedWrite> m_writes;
  std::vector<uint8_t> m_buf;  // the write being issued (reused)
  void pcie_b(int chip, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  std::vector<std::unordered_map<uint64_t, std::array<uint8_t, tsp::kVectorBytes>>> m_from;  // [chip][host vector]
  std::vector<std::pair<uint64_t, size_t>> m_order;  // (issue time, write), in issue order
  size_t m_next = 0;
  uint64_t m_round = 0, m_rounds = 1, m_period_ps = 0;
  RoundFill m_round_fill;
  sc_core::sc_event m_go;
  // The runtime of invoked runs.
  void runtime();
  uint64_t invocation_delay(uint64_t stream) const;
  enum class Phase { idle, begin, inputs, launch, noticed };
  Invocation m_inv;
  Phase m_phase = Phase::idle;
  std::vector<RunTimes> m_runs;
  std::vector<uint8_t> m_rt_buf;  // a run's input being written
  sc_core::sc_event m_rt;
};

/// What the generators wire and where (made by System, handed to the nodes and
/// racks it builds): the shape of a node and the cables still to be bound.
struct Wiring {
  uint32_t tsps = 8, local_ports = 7, global_ports = 4;
  std::string node_wiring = "full";
  uint32_t ring_links = 3;
  /// Cable that still has to be bound: endpoints as (rack, node, tsp) + port.
  struct Pending {
    tsp::Coord a;
    uint32_t pa;
    tsp::Coord b;
    uint32_t pb;
    c2c::Link* link;
  };
  std::vector<Pending> pending;
  const c2c::Phy* phy = nullptr;  ///< the system-wide PHY settings every link adds to its own
  /// Global port g (0 .. tsps * global_ports - 1) of a node: on TSP g % tsps, spread over the TSPs.
  std::pair<uint32_t, uint32_t> global_port(uint32_t g) const { return {g % tsps, local_ports + g / tsps}; }
};

class Node : public core::Module {
 public:
  /// Records its cables in `w` with rack and node 0 (the caller places them).
  Node(const sc_core::sc_module_name& nm, Wiring& w);
  ~Node() override;
  std::vector<std::unique_ptr<tsp::Tsp>> tsp;
  std::vector<std::unique_ptr<c2c::Link>> link;  ///< cables between this node's TSPs
};

class Rack : public core::Module {
 public:
  /// Records its cables in `w` with rack 0 (the caller places them).
  Rack(const sc_core::sc_module_name& nm, uint32_t nodes, Wiring& w);
  ~Rack() override;
  std::vector<std::unique_ptr<Node>> node;
  std::vector<std::unique_ptr<c2c::Link>> link;  ///< cables between this rack's nodes
};

using tsp::Coord;

class System : public core::Module {
 public:
  explicit System(const sc_core::sc_module_name& nm = "sys");
  ~System() override;

  core::Param<std::string> description;
  core::Param<std::string> topology;
  core::Param<uint32_t> tsps_per_node;
  core::Param<std::string> node_wiring;
  core::Param<uint32_t> ring_links;
  core::Param<std::string> failed_nodes;
  core::Param<std::string> failed_links;
  c2c::Phy phy;  ///< system-wide PHY settings (sys.phy.ber, ...), read by every link
  // dragonfly only
  std::unique_ptr<core::Param<uint32_t>> racks;
  std::unique_ptr<core::Param<uint32_t>> nodes_per_rack;
  std::unique_ptr<core::Param<std::string>> spares;

  std::vector<std::unique_ptr<Rack>> rack;       ///< several racks
  std::vector<std::unique_ptr<Node>> node;       ///< one rack (also groq_node)
  std::vector<std::unique_ptr<c2c::Link>> link;  ///< glink / xlink cables
  Host host;

  // Flat views, physical chip order (rack, node, tsp).
  std::vector<tsp::Tsp*> chips;
  std::vector<Coord> coord;
  std::vector<c2c::Cable> cables;
  std::vector<c2c::Link*> links;
  std::vector<bool> chip_failed;
  /// HAC network (sys.hac): counters exchange, spanning tree, TRANSMIT codes.
  std::unique_ptr<hac::Network> hac;

  uint32_t rack_count() const { return m_racks; }
  uint32_t nodes_in_rack() const { return m_nodes; }
  /// Path of a node below sys: "node5" or "rack3.node2".
  std::string node_path(uint32_t rack, uint32_t node) const;

  /// The job's chips: rank r runs on physical chip ranks[r] (spares mapped in,
  /// failed nodes mapped out), with its logical coordinates in rank_coord[r].
  std::vector<uint32_t> ranks;
  std::vector<Coord> rank_coord;
  /// Active (logical) nodes per rack, and racks (1 if a spare maps across racks).
  uint32_t logical_racks = 1, logical_nodes_per_rack = 1;

 private:
  tsp::Tsp& chip_at(uint32_t r, uint32_t n, uint32_t t);
  uint32_t chip_index(uint32_t r, uint32_t n, uint32_t t) const { return (r * m_nodes + n) * m_tsps + t; }
  void wire_global(Wiring& w);
  c2c::Link& cable(std::vector<std::unique_ptr<c2c::Link>>& owner, const std::string& name, uint32_t a, uint32_t pa,
                   uint32_t b, uint32_t pb);
  void apply_failures_and_spares();
  uint32_t m_racks = 1, m_nodes = 1, m_tsps = 8;
};

/// Split a list parameter ("a, b,c") into its items.
std::vector<std::string> split_list(const std::string& s);

}  // namespace fabricvp::groq
