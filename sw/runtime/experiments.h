// `fabricvp experiment <name>`: studies from seed 000, each made of real
// simulation runs (`fabricvp run` in child processes, since SystemC elaborates
// once per process; two at a time by default), printed as a table and written
// as <out>/<name>.json.
//
//   nonminimal         Fig 10: latency of one tensor between two TSPs of a node
//                      vs size, minimal route only and with 1, 2, 4 and 6
//                      detours, and the size from which detours pay off.
//   hop-latency        §5.6: one vector across the 256-TSP system's longest
//                      (3-cable) route, per hop and in all; and a one-vector
//                      all-reduce over all 256 TSPs.
//   allreduce-sweep    Fig 16: realized 8-way all-reduce bandwidth vs size.
//   bandwidth-profile  Fig 2: bisection bandwidth per TSP vs system size, from
//                      the generated cabling, with the packaging cliffs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabricvp::runtime {

struct ExperimentOptions {
  std::string name;
  std::string out_dir = "out/experiments";
  uint32_t jobs = 2;
  bool quick = false;  ///< fewer, smaller points (tests)
};

/// Returns a process exit code; prints errors.
int run_experiment(const ExperimentOptions& opt);

/// Names of the experiments.
std::vector<std::string> experiment_names();

}  // namespace fabricvp::runtime
