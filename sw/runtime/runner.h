// `fabricvp run`: elaborate a platform, compile or load the programs, load the
// data, simulate, check the result and report.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/core/param.h"
#include "models/core/timebase.h"
#include "models/tsp/isa.h"

namespace fabricvp::platform {
class System;
class Host;
}  // namespace fabricvp::platform
namespace fabricvp::sched {
struct Machine;
struct Region;
}  // namespace fabricvp::sched

namespace fabricvp::runtime {

struct RunOptions {
  std::string platform;
  std::vector<std::string> overrides;  ///< -p key=value
  uint64_t seed = 1;
  std::string out_dir = "out";
  bool trace = false;
  uint64_t trace_from_ps = 0, trace_to_ps = core::kNever;
  bool quiet = false;

  // A collective ...
  std::string workload = "allreduce";
  uint64_t bytes = 0;
  core::Dtype dtype = core::Dtype::fp32;
  uint32_t root = 0;  ///< broadcast root; p2p source rank
  uint32_t peer = 1;  ///< p2p destination rank
  // ... or hand-written programs: <programs_dir>/<chip name>.s for every chip that has one.
  std::string programs_dir;

  // Software replay (seed 000 §4.5): a machine check (uncorrectable FEC
  // codeword) restarts the program from the start, up to max_replays times.
  uint32_t max_replays = 3;
  struct MachineCheck {
    uint64_t time_ps;
    std::string link, chip;
  };
  // Set by run() for each attempt (a fresh process: SystemC cannot rewind).
  uint32_t attempt = 0;
  std::vector<MachineCheck> history;  ///< machine checks of the earlier attempts
  int report_fd = -1;
};

/// Exit codes of `fabricvp run`.
enum Exit : int {
  kOk = 0,
  kInputError = 1,      ///< bad platform file, parameter, option or program
  kHardwareError = 2,   ///< the model raised a hardware error (overflow, underflow, hazard, ...)
  kMismatch = 3,        ///< the result differs from the host reference
  kTimingMismatch = 4,  ///< simulated completion differs from the scheduler's prediction
  kInternalError = 5,   ///< a model invariant failed (a fabricvp bug; please report it)
  kMachineCheck = 6,    ///< internal: an attempt ended in a machine check and will be replayed
};

int run(const RunOptions& opt);

/// Run-level parameters (not part of any module): declared by every command
/// that elaborates a platform, so `-p sched.*` works and config.yaml lists them.
struct RunParams {
  RunParams();
  core::Param<uint32_t> chunk_vectors;
  core::Param<uint32_t> staging_chunks;
  core::Param<uint32_t> min_piece_vectors;
  core::Param<std::string> routing;
  core::Param<uint32_t> paths;
  core::Param<uint32_t> save_programs_max_chips;
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
CheckResult check_outputs(platform::Host& host, const std::vector<uint32_t>& chips,
                          const std::vector<std::vector<sched::Region>>& outputs, const Expected& expected,
                          core::Dtype dt);

/// The scheduler's view of an elaborated platform.
sched::Machine machine_of(const platform::System& sys);

/// Parse "64MiB", "1GiB", "1000", "4KiB", "1.5MiB"; throws core::ConfigError.
uint64_t parse_bytes(const std::string& s);
/// Parse "10us", "2.5ms", "100ns", "5000ps"; throws core::ConfigError.
uint64_t parse_time_ps(const std::string& s);

}  // namespace fabricvp::runtime
