// NPU fabrics (seeds 001, 002): NPUs with a collective service at every
// endpoint (the NPU's cores or the ACE), joined by serializing links.
//
// topology: torus — the hierarchical torus of seed 001 §II-C, Fig 3a (seed
// 002's evaluation platform): `local_npus` NPUs per package on
// intra-package rings, packages on a `vertical_npus` x `horizontal_npus` grid
// joined by inter-package rings. Dimension sizes and unidirectional rings per
// dimension (ring q runs + when q is even, - when odd, on physical link q / 2
// of each neighbour pair; seed 001 Table IV: 2 unidirectional rings in the
// package, 2 bidirectional = 4 unidirectional across packages). Link defaults
// are Table IV's: intra-package 200 GB/s, 90 cycles, 512-byte packets;
// inter-package 25 GB/s, 200 cycles, 256-byte packets; 94 % efficiency.
// Names: sys.npu<i> (i = local + L x (vertical + V x horizontal)), its
// memory, compute and ace; links sys.llink<a>_<b>_<k> (local),
// sys.vlink<a>_<b>_<k>, sys.hlink<a>_<b>_<k> between NPU a and its +
// neighbour b, physical link k.
//
// topology: ndim — an N-dimensional fabric as ASTRA-sim's congestion-aware
// analytical network describes it (sw/collectives/ndim.h): `dims`
// dimensions sys.dim<d>, each a Ring, FullyConnected or Switch of `npus`
// NPUs with `links` links per NPU, GBps and latency_ns per link. Every link
// direction and every switch port serializes (one message at a time, the
// others wait in its output queue); Ring messages to a non-neighbour are
// forwarded store-and-forward by the NPUs on the way, Switch messages by the
// switch. Names: sys.dim<d>.link<a>_<b>_<k> (Ring: NPU a and its +
// neighbour b; FullyConnected: every pair a < b), sys.dim<d>.switch<g>_<k>
// (g: the group's lowest NPU) and its links sys.dim<d>.up<a>_<k>.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/ace/ace.h"
#include "models/core/module.h"
#include "models/core/timed_queue.h"
#include "models/npu/afi.h"
#include "models/npu/npu.h"
#include "models/npu/switch.h"
#include "models/optical/fabric.h"
#include "sw/collectives/ndim.h"
#include "sw/collectives/torus.h"
#include "sw/optical/ocs.h"

namespace fabricvp::npusys {

/// Platform-wide choices that belong to no module (keys ace.*, collective.*).
struct Choices {
  Choices();
  core::Param<std::string> ace_model;
  core::Param<std::string> algorithm;
  core::Param<uint32_t> chunk_kib;
  core::Param<uint32_t> chunks;
  core::Param<uint32_t> align_elems;
  core::Param<std::string> allreduce_implementation, reducescatter_implementation, allgather_implementation,
      alltoall_implementation;
  // SiP-ML's hybrid parallelism for op-graph workloads (seed 003 §3.2, sw/optical/hybrid.h)
  core::Param<uint32_t> sipml_mp, sipml_delta, sipml_batch;
  core::Param<double> sipml_tau_us, sipml_bucket_MiB, sipml_gpu_memory_GB;
};

/// The parameters of one dimension of an ndim fabric (keys sys.dim<d>.*):
/// read before any dimension is built, since every link needs the whole shape.
struct DimParams {
  explicit DimParams(const std::string& prefix);
  std::string prefix;  // (first: the parameters keep a pointer to it)
  core::Param<std::string> type;
  core::Param<uint32_t> npus, links;
  core::Param<double> GBps, latency_ns, efficiency;
  core::Param<uint32_t> packet_bytes;
  core::Param<std::string> fabric;
  collectives::ndim::DimSpec spec() const;
};

class System;

/// One dimension of an ndim fabric: sys.dim<d>, parent of its links and switches.
class Dim : public core::Module {
 public:
  Dim(const sc_core::sc_module_name& nm, System& sys, uint32_t d, const DimParams& p);
  ~Dim() override;
  std::vector<std::unique_ptr<npu::FabricSwitch>> switches;
  std::vector<std::unique_ptr<npu::FabricLink>> links;
  /// fabric ocs, ring, flat or cluster: one plane per group (sys.dim<d>.ocs<g>, ...), in place of switches and links.
  std::vector<std::unique_ptr<optical::Plane>> planes;
};

/// The NPUs a collective runs on: a communicator (ranked members).
struct Group {
  uint32_t id = 0;
  std::vector<uint32_t> dims;
  std::vector<uint32_t> npus;  ///< by rank
  std::string text;            ///< "local+vertical through npu5 (16 NPUs)"
  /// ndim: the (split) shape whose logical dimensions `dims` are; null: the fabric's.
  std::shared_ptr<const collectives::ndim::Shape> shape;
  uint32_t size() const { return static_cast<uint32_t>(npus.size()); }
};

class System : public core::Module {
 public:
  explicit System(const sc_core::sc_module_name& nm);
  ~System() override;
  core::Param<std::string> description;
  core::Param<std::string> topology;
  // topology: torus
  std::optional<core::Param<uint32_t>> local_npus, vertical_npus, horizontal_npus;
  std::optional<core::Param<uint32_t>> local_rings, vertical_rings, horizontal_rings;
  // topology: ndim
  std::optional<core::Param<uint32_t>> dims;
  std::vector<std::unique_ptr<DimParams>> dim_params;
  std::vector<std::unique_ptr<Dim>> dim;
  Choices choices;
  collectives::TorusShape shape;    ///< torus
  collectives::ndim::Shape fabric;  ///< both (a torus is Ring x Ring x Ring)
  std::vector<std::unique_ptr<npu::Npu>> npus;
  std::vector<ace::Ace*> aces;                          ///< one per NPU (empty with ace.model=none)
  std::vector<std::unique_ptr<npu::FabricLink>> links;  ///< torus (ndim: owned by their dimension)
  std::vector<npu::FabricLink*> all_links;              ///< every link of the platform
  std::vector<uint32_t> link_dim;                       ///< dimension of each of all_links
  /// The one action queue of the fabric: every NPU, ACE, switch and the
  /// workloads (collectives started after time 0) run on it.
  core::ActionQueue actions;

  bool is_torus() const { return topology.get() == "torus"; }
  uint32_t ndims() const { return fabric.ndims(); }
  /// "local", "vertical", "horizontal" (torus); "dim0", "dim1", .. (ndim).
  std::string dim_name(uint32_t d) const;
  /// "all", or dimension names joined by '+' or ',' (torus: local, vertical,
  /// horizontal or l, v, h; ndim: dim0, dim1, .. or 0, 1, ..).
  std::vector<uint32_t> parse_group(const std::string& text) const;
  /// The groups of `dims` that together hold every NPU once, by lowest member.
  /// ndim: `dims` are logical dimensions of `logical` (a split of the fabric) if given.
  std::vector<Group> partition(const std::vector<uint32_t>& dims,
                               std::shared_ptr<const collectives::ndim::Shape> logical = nullptr) const;
  /// Every member's plan of a collective on group g (plans[rank]).
  std::vector<std::shared_ptr<const npu::CollectivePlan>> plans(const Group& g, npu::CollectiveKind kind,
                                                                core::Dtype dtype, uint64_t elems, uint32_t root) const;
  /// Compare a collective's results in the members' memories (its buffer at
  /// `address`) with the host reference (collectives::check_collective):
  /// `input(npu, byte offset, bytes, dst)` makes a member's input bytes
  /// again, `bad(npu, byte offset, want, got)` hears of every wrong element.
  /// Returns the wrong elements.
  uint64_t check(const Group& g, const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans, uint32_t root,
                 uint64_t address, const std::function<void(uint32_t, uint64_t, uint64_t, uint8_t*)>& input,
                 const std::function<void(uint32_t, uint64_t, const uint8_t*, const uint8_t*)>& bad) const;
  /// "all-reduce ring, ring; optimization enhanced" (reports).
  std::string algorithm_text(npu::CollectiveKind kind) const;

  // Planes of seed 003 (DimParams::fabric ocs, ring, flat, cluster): the
  // optical ones' circuits are planned for the run's traffic before it starts (one-shot).
  /// Every plane of the fabric.
  std::vector<optical::Plane*> optical_planes() const;
  /// Some plane needs a configuration planned for the run's traffic (ocs, ring).
  bool plans_circuits() const;
  /// Add to `out` what the members of a collective on group g send each
  /// other across optical planes, `times` over: every message of every chunk,
  /// phase and ring of their plans (bytes by NPU id).
  /// `only`: the member of that rank alone (default: every member).
  void optical_demand(const Group& g, const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                      double times, std::vector<optical::Demand>& out, uint32_t only = UINT32_MAX) const;
  /// Plan every optical plane's configuration for `demand` (sw/optical),
  /// check it with sw/optical's checker and install it (the plane checks it
  /// again). Throws core::ConfigError naming the plane if no configuration
  /// can serve the traffic (more peers than the degree).
  void configure_optical(const std::vector<optical::Demand>& demand);
  /// The job's traffic ahead, for dynamic planes that plan from the schedule
  /// (`estimate: schedule`; set by a workload with an execution graph): adds
  /// to `out` what NPUs will send each other within `horizon_ps` from now
  /// (bytes by NPU id) and returns how far the job is.
  struct Progress {
    uint64_t finished = 0;   ///< the job's nodes finished so far
    bool computing = false;  ///< some NPU is computing
  };
  using Forecast = std::function<Progress(uint64_t horizon_ps, std::vector<optical::Demand>& out)>;
  void set_forecast(Forecast f) { m_forecast = std::move(f); }

 private:
  void build_npus(uint32_t count, uint32_t ports);
  void build_torus();
  void build_ndim();
  collectives::ndim::PlanOptions ndim_options(npu::CollectiveKind kind) const;
  /// `demand` (by NPU) on the plane of dimension d, added to `pairs` (by port).
  void add_plane_demand(uint32_t d, const optical::Plane& plane, const std::vector<optical::Demand>& demand,
                        std::map<std::pair<uint32_t, uint32_t>, double>& pairs) const;
  /// A dynamic plane's re-plan (its planner): `measured` (by port pair) and, planning from the schedule, the
  /// forecast ahead, each pair capped at its GPU's bandwidth over the horizon, within the degree. Returns
  /// whether the job goes on: some NPU computes or nodes finished since the last plan (`seen`); else, stuck or
  /// done, the epochs stop until the next message.
  bool replan(optical::CircuitFabric& p, uint32_t d, uint32_t degree, const std::vector<optical::Demand>& measured,
              uint64_t& seen);
  Forecast m_forecast;
};

}  // namespace fabricvp::npusys
