// The collectives of one NPU-fabric run: what the command line asked for
// (--workload .. or repeated --collective kind,key=value,...), and per
// collective its communicators, plans, handles and results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/core/dtype.h"
#include "models/npu/collective.h"
#include "systems/kind.h"
#include "systems/npu/system.h"

namespace fabricvp::npusys {

using npu::CollectiveKind;

/// One collective of the run, issued on every communicator of its group.
struct Spec {
  std::string text;  ///< as given (reports)
  CollectiveKind kind = CollectiveKind::allreduce;
  uint64_t bytes = 0;
  core::Dtype dtype = core::Dtype::fp32;
  std::string group = "all";
  std::vector<uint32_t> dims;
  uint32_t root = 0;
  uint64_t at_ps = 0;
  // Set up by prepare().
  uint64_t address = 0;
  uint64_t elems = 0;
  std::vector<Group> comms;
  std::vector<std::vector<std::shared_ptr<const npu::CollectivePlan>>> plans;  // [comm][rank]
  std::vector<std::vector<npu::CollectiveHandle>> handles;                     // [comm][rank]
  // Results.
  uint64_t completion = 0;
  uint64_t mismatched = 0;
  uint32_t members_ok = 0, members = 0;
  struct Bad {
    uint32_t npu;
    uint64_t byte;
    double expected, got;
  };
  std::vector<Bad> first;
  uint32_t size() const { return comms.empty() ? 0 : comms[0].size(); }
  const npu::CollectivePlan& plan0() const { return *plans[0][0]; }
  uint64_t duration() const { return completion > at_ps ? completion - at_ps : 0; }
};

/// "allreduce,bytes=1MiB,dtype=bf16,group=local+vertical,root=3,at=10us"; the
/// defaults come from the single-collective options.
Spec parse_spec(const std::string& text, const systems::RunOptions& opt);

}  // namespace fabricvp::npusys
