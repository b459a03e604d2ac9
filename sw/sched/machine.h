// What the scheduler knows about the machine: every chip's documented timing
// (docs/isa.md), every port's cable (peer, timing, dead or alive), and the job's
// logical chips (ranks) with their (rack, node, tsp) coordinates. Built from the
// elaborated platform's effective parameters, so the schedule and the
// simulation see the same numbers; the prediction is then checked against the
// simulation.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "models/core/timebase.h"
#include "models/tsp/coord.h"

namespace fabricvp::sched {

constexpr uint32_t kNoChip = std::numeric_limits<uint32_t>::max();

struct LinkSpec {
  core::SerialRate rate;
  uint64_t latency_ps = 0;  ///< end of serialization -> in the receive buffer
};

struct PortSpec {
  uint32_t peer = kNoChip;  ///< chip at the other end, kNoChip if no cable
  uint32_t peer_port = 0;
  LinkSpec out;         ///< this port -> peer
  bool failed = false;  ///< dead cable (or dead peer): never routed
};

struct ChipSpec {
  std::string name;
  core::Clock clock;
  uint32_t send_latency = 0, recv_latency = 0, add_latency = 0;
  uint32_t fly_latency = 0;  ///< VXM fly-by: cycles each chained instruction adds (docs/isa.md "Fly-by")
  uint32_t mxm_planes = 0, mxm_latency = 0, lw_rate = 1, lw_latency = 0;  ///< matrix unit (docs/isa.md)
  uint32_t sxm_units = 0, sxm_rate = 1, sxm_latency = 0;                  ///< SXM TRANSPOSE (docs/isa.md)
  core::SerialRate pcie;                                                  ///< host -> chip: one packet per vector
  uint64_t pcie_latency_ps = 0;
  uint32_t queues = 0, alus = 0, tx_buffer = 0, rx_buffer = 0, imem = 0;
  uint32_t node = 0;  ///< physical node index (chips of one node share it)
  bool failed = false;
  std::vector<PortSpec> ports;
};

using tsp::Coord;

struct Machine {
  std::vector<ChipSpec> chips;                                ///< physical chips
  std::vector<uint32_t> ranks;                                ///< job rank -> physical chip
  std::vector<Coord> coord;                                   ///< job rank -> logical coordinates
  uint32_t racks = 1, nodes_per_rack = 1, tsps_per_node = 1;  ///< logical shape of the job
  uint32_t size() const { return static_cast<uint32_t>(ranks.size()); }
};

}  // namespace fabricvp::sched
