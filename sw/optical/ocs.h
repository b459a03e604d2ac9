// SiP-OCS circuits (seed 003 §3.1, §3.3, Appendix A.2): Q optical circuit
// switches of N ports, every GPU on one port of every switch. Switch k's
// configuration is a partial permutation (GPU i's transmitter to GPU j's
// receiver), so a GPU has at most Q circuits out and Q in (degree D = Q),
// each carrying B / Q. The circuits are set once for a job (one-shot) from its
// traffic matrix, maximizing the smallest circuits-per-byte of any demand
// (the ILP of Appendix A.2), i.e. minimizing the longest transfer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/optical/config.h"

namespace fabricvp::optical {

/// The demands merged per (src, dst). Throws std::invalid_argument naming the
/// demand for a GPU out of range, a GPU sending to itself, or bytes not
/// positive and finite (at most 1e18).
std::map<std::pair<uint32_t, uint32_t>, double> merge_demands(uint32_t gpus, const std::vector<Demand>& tm);

/// Every violation of the OCS's rules (empty: legal): each switch a partial
/// permutation of the GPUs (a transmitter and a receiver on at most one
/// circuit each, no circuit to itself), GPUs in range; with a traffic matrix,
/// also every demand with no circuit.
std::vector<std::string> check_ocs(const OcsConfig& config, const std::vector<Demand>& tm = {});

/// min over the demands of circuits(src, dst) / bytes: the objective of
/// Appendix A.2 (0 when a demand has no circuit).
double min_circuits_per_byte(const OcsConfig& config, const std::vector<Demand>& tm);

/// One-shot circuits with the ILP's optimum, without an ILP solver: the
/// circuits a pair needs for a target circuits-per-byte are monotone in the
/// target, so the best target is found by bisection over the finitely many
/// candidates (m / bytes, m = 1..Q), subject to every GPU sending and
/// receiving on at most Q circuits; by König's theorem that bipartite
/// multigraph of circuits splits into Q matchings, one per switch (edge
/// colouring by alternating paths). Ports left over go, one circuit at a
/// time, to the demand with the fewest circuits per byte. Throws
/// std::invalid_argument on a bad matrix (a GPU out of range, a GPU sending to
/// itself, bytes not positive or above 1e18) or one no configuration serves
/// (a GPU with more than Q peers in either direction).
/// `keep` (a re-plan): the circuits a pair keeps stay on the switches they
/// had in that configuration where the colouring allows, so they carry on
/// through the reconfiguration instead of going dark; the counts are the same.
OcsConfig ocs_one_shot(uint32_t gpus, uint32_t switches, const std::vector<Demand>& tm,
                       const OcsConfig* keep = nullptr);

/// The ILP of Appendix A.2 itself, solved by GLPK's branch and cut (small N and
/// Q: it cross-checks ocs_one_shot). Refuses what ocs_one_shot refuses; throws
/// std::runtime_error if GLPK finds no optimum within time_limit_s.
OcsConfig ocs_ilp(uint32_t gpus, uint32_t switches, const std::vector<Demand>& tm, double time_limit_s = 60);

}  // namespace fabricvp::optical
