// Sweep files: a file is read or refused with file:line; a sweep that reads
// expands into its points (when there are few enough to list here), each with
// a distinct key and `fabricvp run` arguments that carry every parameter.
#include <set>

#include "fuzz.h"
#include "systems/sweep_file.h"

using namespace fabricvp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  systems::SweepSpec s;
  try {
    // In the source tree's sweeps/, so "platform: ../platforms/groq-node.yaml" resolves.
    s = systems::load_sweep_string(fuzz::text(data, size), FABRICVP_SOURCE_DIR "/sweeps/fuzz.yaml");
  } catch (const core::ConfigError&) {
    return 0;
  }
  uint64_t n = s.seeds.size();
  for (const systems::SweepAxis& a : s.axes) n *= a.values.size();
  if (n > 2000) return 0;  // (larger sweeps expand the same way, only slower under the sanitizers)
  const std::vector<systems::SweepPoint> points = systems::sweep_points(s);
  fuzz::require(points.size() == n, "a sweep has the product of its axes times its seeds points");
  std::set<std::string> keys;
  for (const systems::SweepPoint& p : points) {
    fuzz::require(keys.insert(p.key).second, "every point has its own key");
    const std::vector<std::string> args = systems::point_args(s, p, "out");
    fuzz::require(args.size() >= 2 + s.options.size() + 2 * p.params.size(), "a point's run carries its parameters");
  }
  return 0;
}
