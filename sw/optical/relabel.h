// Re-plans that keep what they can (seed 003 §3.3: a circuit or lightpath
// present before and after a reconfiguration carries on; a changed one is
// dark while the switch or the micro-rings settle). The labels of a plan's
// interchangeable resources (SiP-OCS's switches: every GPU is on every one;
// SiP-Ring's wavelengths: every GPU tunes to any) can be permuted without
// changing what the plan serves, so the new plan is relabelled to match the
// old one most. SystemC-free.
#pragma once

#include <cstdint>
#include <vector>

#include "models/optical/config.h"

namespace fabricvp::optical {

/// common[k][m]: what old label k and new label m have in common (q x q).
/// Returns to[m], the label new label m takes: a permutation maximizing the
/// sum of common[to[m]][m] (an assignment, by LEMON's network simplex).
std::vector<uint32_t> keep_most(const std::vector<std::vector<int64_t>>& common);

/// SiP-Ring: `paths` with their wavelengths relabelled (one permutation of
/// the ring's `wavelengths` for every lightpath, so still legal) to keep most
/// of `before`'s lightpaths (same GPUs, direction and wavelength).
std::vector<Lightpath> keep_wavelengths(std::vector<Lightpath> paths, const std::vector<Lightpath>& before,
                                        uint32_t wavelengths);

}  // namespace fabricvp::optical
