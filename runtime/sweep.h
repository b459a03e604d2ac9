// `fabricvp sweep`: a design-space sweep, every point its own `fabricvp run`
// process, results in one SQLite file (docs/sweeps.md).
//
//   sweep file (YAML) -> points (cartesian product of the axes, zipped axes
//   advancing together, times the seeds) -> the points not yet in the
//   database run N at a time (systems::run_jobs) -> each finished point is
//   one row of `runs`: its parameters, seed, status, exit code and message,
//   manifest (version, config hash) and the recorded statistics.
//
// Only this process writes the database, one row per finished point, so an
// interrupted sweep resumes where it stopped: points already recorded are
// skipped (failed ones too, unless asked to retry them).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "systems/sweep_file.h"

namespace fabricvp::runtime {

struct SweepOptions {
  std::string file;
  uint32_t jobs = 2;
  std::string db;  ///< default <out>/<name>.sqlite
  std::string out = "out/sweeps";
  bool retry_failed = false;
  bool quiet = false;
  bool quick = false;  ///< only the values of the sweep file's `quick:` map
  /// Submit the points as one Slurm job array instead of running them here
  /// (sbatch; each task leaves <folder>/exit_code), or collect what finished.
  bool slurm = false, collect = false;
  std::string partition, time, mem;
  std::string sbatch = "sbatch";
};

/// Run a sweep here, submit it to Slurm, or collect what Slurm finished;
/// returns the exit code (0: every point recorded ok; else the exit code of
/// the first failed point, 1 for a bad sweep file or a refused submission).
int run_sweep(const SweepOptions& o);

}  // namespace fabricvp::runtime
