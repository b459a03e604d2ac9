// One cable of a chip system: a C2C link between port a_port of chip a_chip and
// port b_port of chip b_chip (chip indices of the system's flat chip list).
// The system's wiring, the HAC network and the scheduler's machine view all
// describe cables with it.
#pragma once

#include <cstdint>

namespace fabricvp::c2c {

class Link;

struct Cable {
  uint32_t a_chip = 0, a_port = 0, b_chip = 0, b_port = 0;
  Link* link = nullptr;
  bool failed = false;  ///< marked dead (failed_links, or an end on a failed node)
};

}  // namespace fabricvp::c2c
