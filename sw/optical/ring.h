// SiP-Ring wavelengths (seed 003 §3.1, §4.1, Appendix A.1): N GPUs on a ring
// of two fibers (clockwise: GPU i to i + 1, counter-clockwise: i to i - 1),
// W wavelengths of 25 Gbit/s per GPU. A lightpath carries one wavelength from
// a GPU's transmitter along the fiber to a GPU at most `reach` hops away (the
// power budget of §4.4), occupying every segment between them; micro-rings
// let a wavelength be reused on segments that do not overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/optical/config.h"
#include "sw/optical/ocs.h"

namespace fabricvp::optical {

/// Every violation of the ring's rules (empty: legal): GPUs and wavelength in
/// range, no lightpath to itself or beyond the reach, no fiber segment
/// carrying a wavelength twice, no GPU sending or receiving on one wavelength
/// to or from more than one peer, no GPU sending to or receiving from more
/// than `degree` peers.
std::vector<std::string> check_ring(const RingSpec& ring, const std::vector<Lightpath>& paths);

/// What ring_plan did (reports, tests).
struct RingPlanInfo {
  uint32_t wavelengths_clockwise = 0, wavelengths_counter = 0;  ///< the split of W between the fibers
  uint32_t iterations = 0;                                      ///< min-cost-flow rounds (Appendix A.1 step 3)
  uint32_t solves = 0;                  ///< network-simplex runs (one per start of a round's wavelength)
  uint32_t patterns = 0;                ///< distinct wavelength patterns in the allocation
  uint32_t repaired = 0;                ///< demands the patterns left unlit, given a free wavelength after
  uint32_t filled = 0;                  ///< lightpaths added by the fill (the worst-off demand, free wavelengths)
  double min_wavelengths_per_byte = 0;  ///< the ILP's objective for the result: min lightpaths(i, j) / TM(i, j)
};

/// One candidate lightpath of a wavelength pattern around a fiber of n
/// positions (positions increase along the light): from `from`, `hops`
/// long, at an integer cost (negative: wanted).
struct PatternArc {
  uint32_t from = 0, hops = 0;
  int64_t cost = 0;
};
enum class PatternSolver : uint8_t {
  network_simplex,  ///< LEMON's network simplex, one min-cost flow per start (Appendix A.1 as written)
  dag,              ///< the same optimum by dynamic programming over the cut ring's positions (acyclic)
};
/// The cheapest wavelength pattern: arcs that do not overlap, tiling the ring
/// with unlit segments (cost 0); a unit of flow from a cut back to it. An arc
/// across the cut (position 0) is the multi-edge-cut case: the flow then
/// starts where it lands and ends where it starts; one solve per landing
/// point and one for a cut crossed by nothing (counted in `solves`). Returns
/// the cost; `lit`: the pattern's arcs (indices, sorted; empty if none).
int64_t best_pattern(uint32_t n, const std::vector<PatternArc>& arcs, PatternSolver solver, std::vector<uint32_t>& lit,
                     uint32_t& solves);

/// SiP-Ring wavelength allocation by min-cost flow (seed 003 Appendix A.1);
/// each round's flow problem solved by `solver` (best_pattern: both give the
/// optimum; the dynamic programme is ~100x faster at 1,024 GPUs):
///   - each demand takes the fiber on which its peer is nearer (clockwise on a
///     tie) and must be within the reach; a GPU may have at most `degree`
///     peers each way; the W wavelengths are split between the two fibers in
///     proportion to their bytes (disjoint wavelength numbers, so a GPU's
///     transmitter of one wavelength serves one peer);
///   - one wavelength around one fiber is a unit of flow from a cut of the
///     ring back to it through lightpaths (arcs u -> v of the demands, cost
///     -1 / remaining bytes) and unlit segments (cost 0); a lightpath across
///     the cut is the multi-edge-cut case: the flow then starts where that
///     lightpath lands and ends where it starts (one solve per landing point
///     and one for a cut crossed by nothing, the cheapest wins);
///   - each round's pattern serves a step of every demand on it (step: the
///     largest demand / the fiber's wavelengths) until every demand is
///     served; the fiber's wavelengths go to the patterns in proportion to
///     how often they were chosen (largest remainder); with more patterns
///     than wavelengths, the ones that light demands the others do not come
///     first, and a demand still unlit gets the first wavelength free along
///     its path;
///   - fill: the demand with the fewest lightpaths per byte takes a
///     wavelength still free along its path (either fiber within the reach)
///     until the worst-off demand cannot gain one.
/// Throws std::invalid_argument for a bad matrix (GPU out of range or to
/// itself, bytes not positive and finite), a demand beyond the reach either
/// way, a GPU with more than `degree` peers, or a demand for which no
/// wavelength is free after the others.
std::vector<Lightpath> ring_plan(const RingSpec& ring, const std::vector<Demand>& tm, RingPlanInfo* info = nullptr,
                                 PatternSolver solver = PatternSolver::dag);

/// The ILP of Appendix A.1 itself, solved by GLPK's branch and cut (small
/// rings: it measures how far ring_plan is from the optimum): maximize
/// min over the demands of lightpaths(i, j) / TM(i, j), a demand's lightpaths
/// on either fiber within the reach and on any wavelength, under the ring
/// constraint (a wavelength once per fiber segment) and the node constraint
/// (a GPU sends, and receives, each wavelength to or from one peer). Refuses
/// a bad matrix, a demand beyond the reach both ways, or a GPU with more than
/// `degree` peers (std::invalid_argument); throws std::runtime_error if GLPK
/// finds no optimum within time_limit_s.
std::vector<Lightpath> ring_ilp(const RingSpec& ring, const std::vector<Demand>& tm, double time_limit_s = 60);

}  // namespace fabricvp::optical
