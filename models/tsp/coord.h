// Where a TSP sits in the packaging of a Groq system (seed 000 §2.2): rack,
// node in the rack, chip in the node. Physical places of chips and logical
// places of a job's ranks are both coordinates.
#pragma once

#include <cstdint>

namespace fabricvp::tsp {

struct Coord {
  uint32_t rack = 0, node = 0, tsp = 0;
};

}  // namespace fabricvp::tsp
