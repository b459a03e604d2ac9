// `fabricvp run`: the one run driver of every system kind.
//
//   configuration (platform file, -p) -> the platform's kind (systems/kind.h)
//   -> elaborate `sys` -> effective configuration (config.yaml)
//   -> prepare (compile / schedule / plan, load programs) -> load inputs
//   -> simulate -> finish -> check against the host reference
//   -> status and exit code -> statistics (stats.json with the run manifest)
//   -> replay after a machine check (a fresh process per attempt) -> summary table
//
// Traces (Perfetto JSON) are opened before elaboration when asked for.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "systems/kind.h"

namespace fabricvp::runtime {

/// Exit codes of `fabricvp run`.
enum Exit : int {
  kOk = 0,
  kInputError = 1,      ///< bad platform file, parameter, option or program
  kHardwareError = 2,   ///< the model raised a hardware error (overflow, underflow, hazard, ...)
  kMismatch = 3,        ///< the result differs from the host reference
  kTimingMismatch = 4,  ///< simulated completion differs from the prediction
  kInternalError = 5,   ///< a model invariant failed (a fabricvp bug; please report it)
  kMachineCheck = 6,    ///< internal: an attempt ended in a machine check and will be replayed
};

/// Run a platform as `opt` says; returns the exit code. With max_replays > 0
/// every attempt runs in a child process (SystemC cannot rewind).
int run(const systems::RunOptions& opt);

/// One attempt in this process (what each child of run() does).
int run_attempt(const systems::RunOptions& opt);

/// Load a platform with its overrides and elaborate it through its kind
/// (`params`, `topology`): every parameter exists, none is unknown. Throws core::ConfigError.
std::unique_ptr<systems::Scenario> elaborate(const std::string& platform, const std::vector<std::string>& overrides);

}  // namespace fabricvp::runtime
