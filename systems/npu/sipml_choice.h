// Which run of a SiP-ML configuration the experiments keep (seed 003 §4.1,
// §4.2: the paper searches the parallelization and the global batch of every
// network for the shortest time to accuracy). SystemC-free.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace fabricvp::npusys {

/// One run of a configuration: its k (GPUs per model-parallel group) and
/// global batch, and what it gave (a failed run: iteration NaN, `failed` why).
struct Tried {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  uint32_t k = 0;
  uint64_t batch = 0;  ///< samples per iteration (a failed run: its sipml.batch, else 0)
  double iteration = kNaN, compute = kNaN, exposed = kNaN;  ///< ps
  double tta_s = kNaN;                                      ///< time to accuracy; NaN: no estimate
  std::string tta_note, failed;
  size_t job = 0;  ///< the sweep point
  double samples_per_s() const { return batch / (iteration * 1e-12); }
};

/// Whether run `a` is better than run `b`: a failed run never is; a run with
/// a time to accuracy beats one without (its batch is beyond the table); two
/// with one: the shorter; two without: the shorter iteration at one batch,
/// else the more samples per second. (When sipml.batch is unset the batch is
/// GPUs / k x the op graph's batch per group, so runs of different k differ in
/// batch too and are compared by time to accuracy or throughput, not by
/// iteration.)
inline bool better(const Tried& a, const Tried& b) {
  if (std::isnan(a.iteration)) return false;
  if (std::isnan(b.iteration)) return true;
  if (std::isnan(a.tta_s) != std::isnan(b.tta_s)) return !std::isnan(a.tta_s);
  if (!std::isnan(a.tta_s)) return a.tta_s < b.tta_s;
  if (a.batch == b.batch) return a.iteration < b.iteration;
  return a.samples_per_s() > b.samples_per_s();
}

}  // namespace fabricvp::npusys
