// `fabricvp run` on a hierarchical-torus platform (sys.topology: torus): NPUs
// with or without ACE run a hierarchical all-reduce on seeded data, every
// NPU's result is checked against a host reference that adds in the same
// order, and the run writes stats.json, config.yaml and a summary.
#pragma once

#include "sw/runtime/runner.h"

namespace fabricvp::runtime {

/// The configuration (platform file and -p overrides) is already loaded.
/// Returns an Exit code; throws core::ConfigError for bad input.
int run_torus(const RunOptions& opt);

}  // namespace fabricvp::runtime
