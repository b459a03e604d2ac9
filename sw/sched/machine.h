// What the scheduler knows about the machine: the documented timing of every
// chip and link (docs/isa.md) and which port reaches which chip. It is built
// from the elaborated platform's effective parameters, so the schedule and the
// simulation see the same numbers; the schedule's predicted completion is then
// checked against the simulation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/core/timebase.h"

namespace fabricvp::sched {

struct ChipSpec {
  std::string name;
  core::Clock clock;
  uint32_t send_latency = 0, recv_latency = 0, add_latency = 0;
  uint32_t queues = 0, alus = 0, tx_buffer = 0, rx_buffer = 0, imem = 0, ports = 0;
};

struct LinkSpec {
  core::SerialRate rate;
  uint64_t latency_ps = 0;  ///< end of serialization -> in the receive buffer
};

struct Machine {
  std::vector<ChipSpec> chips;
  std::vector<std::vector<int>> port;       ///< port[a][b]: port of chip a linked to chip b, or -1
  std::vector<std::vector<LinkSpec>> link;  ///< link[a][b]: direction a -> b
  uint32_t size() const { return static_cast<uint32_t>(chips.size()); }
};

}  // namespace fabricvp::sched
