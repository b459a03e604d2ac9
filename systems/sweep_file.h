// Sweep files (docs/sweeps.md): a base platform, fixed `fabricvp run` (or
// `topology`) options, parameter axes (values or ranges, zipped axes advancing
// together), seeds and the statistics to record, expanded into points.
// `fabricvp sweep` (runtime/sweep.h) runs them into SQLite; the experiments
// (systems/experiment.h) take their points from sweeps/experiments/.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fabricvp::systems {

/// One axis: a key (a run option such as "--bytes", or a platform parameter
/// set with -p) and its values; a zipped axis has several keys whose values
/// advance together.
struct SweepAxis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  ///< [point along the axis][key]
};

/// An axis value written as null (~): the point leaves the key unset (the
/// platform's value, the option's default). Never a real value: those cannot
/// contain a newline.
extern const char* const kUnset;

struct SweepSpec {
  std::string file;  ///< the sweep file
  /// What each point runs: "run" (`fabricvp run`, stats.json) or "topology"
  /// (`fabricvp topology --json`, topology.json: elaboration only, no seeds).
  std::string command = "run";
  std::string name;      ///< rows carry it (default: the file's stem)
  std::string platform;  ///< resolved against the sweep file's folder; empty if a --platform axis gives one per point
  std::vector<std::string> options;  ///< fixed `fabricvp run` options
  std::vector<SweepAxis> axes;
  std::vector<uint64_t> seeds;      ///< default {1}
  std::vector<std::string> record;  ///< statistics, as dotted paths into stats.json
  /// `quick:` axis key -> the values a quick run keeps (`--quick`, tests).
  std::vector<std::pair<std::string, std::vector<std::string>>> quick;
};

struct SweepPoint {
  size_t index = 0;                                         ///< in the sweep's full list (output folder points/<index>)
  std::vector<std::pair<std::string, std::string>> params;  ///< (key, value) in axis order; unset keys left out
  uint64_t seed = 1;
  std::string key;  ///< canonical: what the database knows the point by
};

/// Read and check a sweep file. Throws core::ConfigError naming file, line and key.
SweepSpec load_sweep(const std::string& path);
/// The same from the file's text (`path` names it and anchors the platform's path; fuzz target).
SweepSpec load_sweep_string(const std::string& text, const std::string& path);
/// Keep only the values the sweep's `quick:` map names (a no-op without one).
void restrict_to_quick(SweepSpec& s);
/// Every point of the sweep, in order: the first axis varies slowest, seeds fastest.
std::vector<SweepPoint> sweep_points(const SweepSpec& s);
/// The values of an axis key, in order, also of one key of a zipped axis (kUnset where a point leaves it
/// unset; throws std::out_of_range if there is none).
std::vector<std::string> values_of(const SweepSpec& s, const std::string& key);
/// The value of parameter `key` at point `p` (throws std::out_of_range if the point does not set it).
const std::string& param(const SweepPoint& p, const std::string& key);
/// The value of parameter `key` at point `p`, or `otherwise` if the point leaves it unset.
std::string param_or(const SweepPoint& p, const std::string& key, const std::string& otherwise);
/// The fabricvp arguments of a point (its command first), writing into `out_dir`.
std::vector<std::string> point_args(const SweepSpec& s, const SweepPoint& p, const std::string& out_dir);

}  // namespace fabricvp::systems
