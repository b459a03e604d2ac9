// The relabelling of re-plans (relabel.h).
#include "sw/optical/relabel.h"

#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <map>
#include <stdexcept>
#include <tuple>

namespace fabricvp::optical {

std::vector<uint32_t> keep_most(const std::vector<std::vector<int64_t>>& common) {
  const uint32_t q = static_cast<uint32_t>(common.size());
  using G = lemon::SmartDigraph;
  G g;
  std::vector<G::Node> old_label, new_label;
  for (uint32_t k = 0; k < q; ++k) old_label.push_back(g.addNode()), new_label.push_back(g.addNode());
  G::ArcMap<int64_t> cost(g), cap(g);
  G::NodeMap<int64_t> supply(g, 0);
  std::vector<G::Arc> arc;  // k * q + m
  arc.reserve(static_cast<size_t>(q) * q);
  for (uint32_t k = 0; k < q; ++k) {
    if (common[k].size() != q) throw std::invalid_argument("keep_most: not a square matrix");
    supply[old_label[k]] = 1;
    supply[new_label[k]] = -1;
    for (uint32_t m = 0; m < q; ++m) {
      arc.push_back(g.addArc(old_label[k], new_label[m]));
      cost[arc.back()] = -common[k][m];
      cap[arc.back()] = 1;
    }
  }
  lemon::NetworkSimplex<G, int64_t, int64_t> ns(g);
  ns.upperMap(cap).costMap(cost).supplyMap(supply);
  if (ns.run() != lemon::NetworkSimplex<G, int64_t, int64_t>::OPTIMAL)
    throw std::logic_error("keep_most: the assignment has no optimum");
  std::vector<uint32_t> to(q, 0);
  for (uint32_t k = 0; k < q; ++k)
    for (uint32_t m = 0; m < q; ++m)
      if (ns.flow(arc[static_cast<size_t>(k) * q + m])) to[m] = k;
  return to;
}

std::vector<Lightpath> keep_wavelengths(std::vector<Lightpath> paths, const std::vector<Lightpath>& before,
                                        uint32_t wavelengths) {
  std::map<std::tuple<uint32_t, uint32_t, bool>, std::vector<uint32_t>> old;  // (src, dst, clockwise) -> wavelengths
  for (const Lightpath& l : before)
    if (l.wavelength < wavelengths) old[{l.src, l.dst, l.clockwise}].push_back(l.wavelength);
  std::vector<std::vector<int64_t>> common(wavelengths, std::vector<int64_t>(wavelengths, 0));
  for (const Lightpath& l : paths) {
    if (l.wavelength >= wavelengths) throw std::invalid_argument("keep_wavelengths: a wavelength beyond the ring's");
    if (auto it = old.find({l.src, l.dst, l.clockwise}); it != old.end())
      for (uint32_t k : it->second) ++common[k][l.wavelength];
  }
  const std::vector<uint32_t> to = keep_most(common);
  for (Lightpath& l : paths) l.wavelength = to[l.wavelength];
  return paths;
}

}  // namespace fabricvp::optical
