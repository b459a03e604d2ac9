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

namespace fabricvp::runtime {

/// One axis: a key (a run option such as "--bytes", or a platform parameter
/// set with -p) and its values; a zipped axis has several keys whose values
/// advance together.
struct SweepAxis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  ///< [point along the axis][key]
};

struct SweepSpec {
  std::string file;                  ///< the sweep file
  std::string name;                  ///< rows carry it (default: the file's stem)
  std::string platform;              ///< resolved against the sweep file's folder
  std::vector<std::string> options;  ///< fixed `fabricvp run` options
  std::vector<SweepAxis> axes;
  std::vector<uint64_t> seeds;      ///< default {1}
  std::vector<std::string> record;  ///< statistics, as dotted paths into stats.json
};

struct SweepPoint {
  size_t index = 0;                                         ///< in the sweep's full list (output folder points/<index>)
  std::vector<std::pair<std::string, std::string>> params;  ///< (key, value) in axis order
  uint64_t seed = 1;
  std::string key;  ///< canonical: what the database knows the point by
};

/// Read and check a sweep file. Throws core::ConfigError naming file, line and key.
SweepSpec load_sweep(const std::string& path);
/// The same from the file's text (`path` names it and anchors the platform's path; fuzz target).
SweepSpec load_sweep_string(const std::string& text, const std::string& path);
/// Every point of the sweep, in order: the first axis varies slowest, seeds fastest.
std::vector<SweepPoint> sweep_points(const SweepSpec& s);
/// `fabricvp run` arguments of a point (after "run"), writing into `out_dir`.
std::vector<std::string> point_args(const SweepSpec& s, const SweepPoint& p, const std::string& out_dir);

struct SweepOptions {
  std::string file;
  uint32_t jobs = 2;
  std::string db;  ///< default <out>/<name>.sqlite
  std::string out = "out/sweeps";
  bool retry_failed = false;
  bool quiet = false;
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
