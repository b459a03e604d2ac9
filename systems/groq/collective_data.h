// Host side of a checked collective on a Groq system: seeded inputs loaded
// slice by slice straight into each rank's SRAM, and the expected bytes of
// every rank's output, against which the results are compared element by
// element. Chip inputs are seeded from the chip's hierarchical name;
// reductions follow the schedule's order: the TSPs of a node in order, then
// the nodes of a rack, then the racks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sw/sched/collectives.h"
#include "systems/groq/system.h"

namespace fabricvp::groq {

class CollectiveData {
 public:
  CollectiveData(System& sys, const sched::Machine& m, const sched::Plan& plan, const sched::Request& req);
  /// Generate every rank's input, write it into its SRAM regions and fold it into the reference.
  void load();
  /// Expected bytes [pos, pos + len) of rank r's output stream.
  void expected(uint32_t r, uint64_t pos, uint8_t* out, uint64_t len) const;

 private:
  uint64_t seed(uint32_t r) const;
  void fold(uint8_t* acc, const uint8_t* x, uint64_t len, bool first) const;

  System& m_sys;
  const sched::Machine& m_m;
  const sched::Plan& m_plan;
  const sched::Request& m_req;
  std::vector<std::vector<uint8_t>> m_acc;  // per level: node, rack, system partial sums
  std::vector<uint8_t> m_ref;
};

struct CheckResult {
  struct Mismatch {
    uint32_t rank;
    uint64_t byte;  ///< offset in the rank's output stream
    double expected, got;
  };
  uint64_t mismatched = 0;      ///< elements that differ, over all ranks
  uint32_t ranks_ok = 0;        ///< ranks with an output, bit-exact
  uint32_t ranks_checked = 0;   ///< ranks with an output
  std::vector<Mismatch> first;  ///< the first few differences
};

/// Fills expected bytes [pos, pos + len) of a rank's output stream.
using Expected = std::function<void(uint32_t rank, uint64_t pos, uint8_t* out, uint64_t len)>;

/// Compare every rank's output regions (read through the host from chip
/// chips[rank]) element by element with what `expected` says.
CheckResult check_outputs(Host& host, const std::vector<uint32_t>& chips,
                          const std::vector<std::vector<sched::Region>>& outputs, const Expected& expected,
                          core::Dtype dt);

}  // namespace fabricvp::groq
