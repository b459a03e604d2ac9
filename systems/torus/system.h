// Hierarchical torus of NPUs (seed 001 §II-C, Fig 3a; seed 002's evaluation
// platform): `local_npus` NPUs per package on intra-package rings, packages on
// a `vertical_npus` x `horizontal_npus` grid joined by inter-package rings.
//
// Generated from a few parameters: dimension sizes and unidirectional rings
// per dimension (ring q runs + when q is even, - when odd, on physical link
// q / 2 of each neighbour pair; seed 001 Table IV: 2 unidirectional rings in
// the package, 2 bidirectional = 4 unidirectional across packages). Link
// defaults are Table IV's: intra-package 200 GB/s, 90 cycles, 512-byte
// packets; inter-package 25 GB/s, 200 cycles, 256-byte packets; 94 %
// efficiency; 1 GHz cycles.
//
// Names: sys.npu<i> (i = local + L x (vertical + V x horizontal)), its
// memory, compute and ace; links sys.llink<a>_<b>_<k> (local),
// sys.vlink<a>_<b>_<k> (vertical), sys.hlink<a>_<b>_<k> (horizontal) between
// NPU a and its + neighbour b, physical link k.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/ace/ace.h"
#include "models/core/module.h"
#include "models/core/timed_queue.h"
#include "models/npu/afi.h"
#include "models/npu/npu.h"
#include "sw/collectives/torus.h"

namespace fabricvp::torus {

/// Platform-wide choices that belong to no module (keys ace.*, collective.*).
struct Choices {
  Choices();
  core::Param<std::string> ace_model;
  core::Param<std::string> algorithm;
  core::Param<uint32_t> chunk_kib;
  core::Param<uint32_t> align_elems;
};

class System : public core::Module {
 public:
  explicit System(const sc_core::sc_module_name& nm);
  ~System() override;

  core::Param<std::string> description;
  core::Param<std::string> topology;
  core::Param<uint32_t> local_npus, vertical_npus, horizontal_npus;
  core::Param<uint32_t> local_rings, vertical_rings, horizontal_rings;

  Choices choices;
  collectives::TorusShape shape;
  std::vector<std::unique_ptr<npu::Npu>> npus;
  std::vector<ace::Ace*> aces;  ///< one per NPU (empty with ace.model=none)
  std::vector<std::unique_ptr<npu::FabricLink>> links;
  std::vector<uint32_t> link_dim;  ///< dimension of each link
  /// Submits collectives at later simulated times (workloads that start them after time 0).
  core::ActionQueue launcher;
};

}  // namespace fabricvp::torus
