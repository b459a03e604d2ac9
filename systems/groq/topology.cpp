#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "models/core/output_file.h"
#include "sw/sched/routing.h"
#include "systems/groq/machine.h"
#include "systems/groq/scenario.h"

namespace fabricvp::groq {

/// Cables by kind, the job's ranks, minimal-route hop counts from a sample of
/// sources, and the bisection along the packaging.
int GroqScenario::topology(const std::string& platform, uint32_t sources, nlohmann::json& json) {
  const System& sys = *m_sys;
  std::map<std::string, size_t> kinds, dead;
  for (const c2c::Cable& w : sys.cables) {
    std::string leaf = std::string(w.link->basename());
    std::string kind = leaf.substr(0, leaf.find_first_of("0123456789"));
    ++kinds[kind];
    if (w.failed) ++dead[kind];
  }
  size_t failed_chips = std::count(sys.chip_failed.begin(), sys.chip_failed.end(), true);
  fmt::print("{}: {} chips in {} rack(s) x {} node(s) x {} TSPs, {} cables\n", platform, sys.chips.size(),
             sys.rack_count(), sys.nodes_in_rack(), sys.tsps_per_node.get(), sys.cables.size());
  for (const auto& [k, n] : kinds)
    fmt::print("  {:<6} {:>7} cables{}\n", k, n, dead[k] ? fmt::format(" ({} dead)", dead[k]) : "");
  fmt::print("  job: {} ranks (levels {} x {} x {}), {} chips on failed nodes, {} spare or unused\n", sys.ranks.size(),
             sys.tsps_per_node.get(), sys.logical_nodes_per_rack, sys.logical_racks, failed_chips,
             sys.chips.size() - sys.ranks.size() - failed_chips);
  sched::Machine m = machine_of(sys);
  sched::Router router(m);
  std::vector<uint64_t> hist;
  uint32_t step = std::max<uint32_t>(1, m.size() / std::max<uint32_t>(1, sources));
  uint64_t pairs = 0;
  for (uint32_t a = 0; a < m.size(); a += step)
    for (uint32_t b = 0; b < m.size(); ++b) {
      if (a == b) continue;
      uint32_t d = router.distance(m.ranks[a], m.ranks[b]);
      if (hist.size() <= d) hist.resize(d + 1, 0);
      ++hist[d];
      ++pairs;
    }
  fmt::print("  minimal routes from {} source rank(s) to every rank ({} pairs):\n", (m.size() + step - 1) / step,
             pairs);
  for (size_t d = 1; d < hist.size(); ++d)
    if (hist[d]) fmt::print("    {} cable(s): {:>10} pairs ({:.2f}%)\n", d, hist[d], 100.0 * hist[d] / pairs);
  // Bisection along the packaging: the first half of the racks (or of the
  // nodes, or of a node's TSPs) against the rest; live cables across it.
  uint64_t crossing = 0;
  auto half_of = [&](uint32_t chip) {
    const tsp::Coord& c = sys.coord[chip];
    if (sys.rack_count() > 1) return c.rack < sys.rack_count() / 2;
    if (sys.nodes_in_rack() > 1) return c.node < sys.nodes_in_rack() / 2;
    return c.tsp < sys.tsps_per_node / 2;
  };
  uint64_t left = 0;
  for (uint32_t c = 0; c < sys.chips.size(); ++c) left += half_of(c);
  for (const c2c::Cable& w : sys.cables)
    if (!w.failed && half_of(w.a_chip) != half_of(w.b_chip)) ++crossing;
  const double link = sys.links.empty() ? 0.0 : sys.links[0]->payload_GBps();
  const double per_tsp = left ? crossing * link / static_cast<double>(left) : 0.0;
  fmt::print("  bisection: {} cables between {} and {} TSPs = {:.1f} GB/s per direction, {:.2f} GB/s per TSP\n",
             crossing, left, sys.chips.size() - left, crossing * link, per_tsp);
  json = {{"platform", platform},        {"chips", sys.chips.size()},         {"ranks", sys.ranks.size()},
          {"cables", sys.cables.size()}, {"bisection_cables", crossing},      {"bisection_tsps", left},
          {"link_payload_GBps", link},   {"bisection_GBps_per_tsp", per_tsp}, {"route_cables_histogram", hist}};
  auto unit = [](const char* u, const char* d) { return nlohmann::json{{"unit", u}, {"description", d}}; };
  json["schema"] = {{"chips", unit("TSPs", "TSP chips built, spares and failed nodes included")},
                    {"ranks", unit("TSPs", "ranks of the job")},
                    {"cables", unit("cables", "C2C cables of every kind")},
                    {"bisection_cables", unit("cables", "live cables across the packaging-aligned bisection")},
                    {"bisection_tsps", unit("TSPs", "TSPs on the first side of the bisection")},
                    {"link_payload_GBps", unit("GB/s", "payload rate of one link direction")},
                    {"bisection_GBps_per_tsp", unit("GB/s", "bisection bandwidth (one direction) per TSP on one side")},
                    {"route_cables_histogram", unit("pairs", "rank pairs per minimal-route length in cables (index)")}};
  return 0;
}

}  // namespace fabricvp::groq
