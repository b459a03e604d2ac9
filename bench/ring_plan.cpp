// SiP-Ring wavelength planning at scale (issue 14's performance target):
// ring_plan on 1,024 GPUs with the traffic shape Algorithm 1 gives SiP-ML
// (seed 003 Fig. 7): MP groups of k consecutive GPUs, each GPU sending to the
// next min(k - 1, 15) GPUs of its group (less the further away), plus the DP
// ring to its counterpart in the next group. Prints wall time and the plan's
// figures for each solver (results: docs/benchmarks.md).
//
//   build/bin/fabricvp_bench_ring_plan [k] [wavelengths] [dag|network_simplex|both]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <systemc>  // declares sc_main (extern "C")

#include "sw/optical/ring.h"

using namespace fabricvp::optical;

// sc_main: the planner links the core library, and with it SystemC, whose main calls this.
int sc_main(int argc, char** argv) {
  const uint32_t n = 1024;
  const uint32_t k = argc > 1 ? static_cast<uint32_t>(std::atoi(argv[1])) : 16;
  const uint32_t w = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 320;
  const std::string which = argc > 3 ? argv[3] : "dag";
  if (k < 2 || k > n || n % k != 0 || w == 0) {
    fmt::print(stderr, "usage: {} [k dividing 1024, >= 2] [wavelengths >= 1] [dag|network_simplex|both]\n", argv[0]);
    return 1;
  }
  std::vector<Demand> tm;
  for (uint32_t g = 0; g < n; ++g) {
    const uint32_t group = g / k, i = g % k;
    for (uint32_t d = 1; d < k && d < 16; ++d) tm.push_back({g, group * k + (i + d) % k, double(1 << 20) / d});
    tm.push_back({g, (g + k) % n, double(1 << 19)});
  }
  const RingSpec ring{n, w, 16, 16};
  for (const auto& [name, solver] :
       {std::pair{"dag", PatternSolver::dag}, std::pair{"network_simplex", PatternSolver::network_simplex}}) {
    if (which != "both" && which != name) continue;
    const auto t0 = std::chrono::steady_clock::now();
    RingPlanInfo info;
    const auto paths = ring_plan(ring, tm, &info, solver);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto bad = check_ring(ring, paths);
    fmt::print("| {} | {} | {} | {:.2f} | {} | {} | {} | {} | {} | {:.3g} | {} |\n", name, k, w, s, paths.size(),
               info.iterations, info.solves, info.patterns, info.filled, info.min_wavelengths_per_byte * (1 << 20),
               bad.empty() ? "legal" : bad.front());
  }
  return 0;
}
