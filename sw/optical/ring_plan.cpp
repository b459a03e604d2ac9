// SiP-Ring wavelength allocation by min-cost flow (seed 003 Appendix A.1);
// the method is described in ring.h.
#include <fmt/format.h>
#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "sw/optical/ring.h"

namespace fabricvp::optical {

namespace {

/// A demand on one fiber, in that fiber's coordinates (positions increase
/// along the light).
struct Arc {
  uint32_t from = 0, hops = 0;
  double bytes = 0, left = 0;
  uint32_t src = 0, dst = 0;  // the GPUs
};

/// The wavelength patterns of one fiber: arcs lit together on one
/// wavelength, and how many rounds chose each.
struct Patterns {
  std::map<std::vector<uint32_t>, uint32_t> chosen;  // sorted arc indices -> rounds
  uint32_t rounds = 0, solves = 0;
};

/// Appendix A.1 steps 1-3 on one fiber of n positions: rounds of min-cost flow.
Patterns plan_fiber(uint32_t n, std::vector<Arc>& arcs, uint32_t wavelengths) {
  Patterns out;
  double largest = 0;
  for (const Arc& a : arcs) largest = std::max(largest, a.bytes);
  const double step = largest / wavelengths;
  // The rounds stop when every demand is served; each round serves at least a
  // step of the demand it favours most, so this bound is never reached with
  // a correct solver (it guards against an endless loop).
  const uint64_t max_rounds = 4 * static_cast<uint64_t>(wavelengths) * (arcs.size() + 1) + 16;
  using G = lemon::SmartDigraph;
  while (true) {
    double smallest = 0;
    for (const Arc& a : arcs)
      if (a.left > 0 && (smallest == 0 || a.left < smallest)) smallest = a.left;
    if (smallest == 0) break;
    if (out.rounds >= max_rounds) throw std::logic_error("ring_plan: the min-cost-flow rounds did not converge");
    // Positions 0 .. n (n: position 0 again, after a full turn), one sink.
    // Arc costs: -round(2^40 x smallest / left) for a demand still open
    // (favour the small ones, Eq. (2)), 0 for an unlit segment.
    G g;
    std::vector<G::Node> pos(n + 1);
    for (auto& v : pos) v = g.addNode();
    const G::Node sink = g.addNode();
    G::ArcMap<int64_t> cost(g), upper(g);
    std::vector<std::pair<G::Arc, int64_t>> arc_of;  // graph arc -> demand (-1: a segment, -2: the sink)
    std::map<int, int64_t> index;                    // graph arc id -> demand arc index or tag
    auto add = [&](G::Node a, G::Node b, int64_t c, int64_t tag) {
      const G::Arc e = g.addArc(a, b);
      cost[e] = c;
      upper[e] = 1;
      index[G::id(e)] = tag;
      return e;
    };
    for (uint32_t x = 0; x < n; ++x) add(pos[x], pos[x + 1], 0, -1);
    std::map<uint32_t, std::vector<std::pair<G::Arc, uint32_t>>> landing;  // crossing arcs by where they land
    std::vector<G::Arc> end_arc;                                           // position n -> sink (no crossing)
    for (uint32_t i = 0; i < arcs.size(); ++i) {
      const Arc& a = arcs[i];
      if (a.left <= 0) continue;
      const int64_t c = -std::llround(std::ldexp(smallest / a.left, 40));
      if (a.from + a.hops <= n) {
        add(pos[a.from], pos[a.from + a.hops], c, i);
      } else {  // across the cut: the flow ends at its start, and begins where it lands
        landing[a.from + a.hops - n].push_back({add(pos[a.from], sink, c, i), i});
      }
    }
    end_arc.push_back(add(pos[n], sink, 0, -2));
    // One solve per start: 0 (nothing crosses the cut) and every landing point.
    std::vector<uint32_t> starts{0};
    for (const auto& [v, list] : landing) starts.push_back(v);
    int64_t best_cost = 0;
    std::vector<uint32_t> best;
    bool found = false;
    for (uint32_t v : starts) {
      // Only this start's way into the sink is open.
      for (const auto& [w, list] : landing)
        for (const auto& [e, i] : list) upper[e] = w == v ? 1 : 0;
      upper[end_arc[0]] = v == 0 ? 1 : 0;
      lemon::NetworkSimplex<G, int64_t, int64_t> ns(g);
      ns.upperMap(upper).costMap(cost).stSupply(pos[v], sink, 1);
      ++out.solves;
      if (ns.run() != lemon::NetworkSimplex<G, int64_t, int64_t>::OPTIMAL) continue;
      const int64_t c = ns.totalCost();
      if (found && c >= best_cost) continue;
      std::vector<uint32_t> lit;
      for (G::ArcIt e(g); e != lemon::INVALID; ++e)
        if (ns.flow(e) > 0 && index[G::id(e)] >= 0) lit.push_back(static_cast<uint32_t>(index[G::id(e)]));
      if (lit.empty()) continue;
      found = true;
      best_cost = c;
      best = std::move(lit);
    }
    if (!found) throw std::logic_error("ring_plan: no wavelength pattern serves an open demand");
    std::sort(best.begin(), best.end());
    for (uint32_t i : best) arcs[i].left = std::max(0.0, arcs[i].left - step);
    ++out.chosen[best];
    ++out.rounds;
  }
  return out;
}

}  // namespace

std::vector<Lightpath> ring_plan(const RingSpec& ring, const std::vector<Demand>& tm, RingPlanInfo* info) {
  const uint32_t n = ring.gpus;
  if (n < 2) throw std::invalid_argument("a ring needs at least 2 GPUs");
  if (ring.wavelengths == 0) throw std::invalid_argument("a ring needs at least one wavelength");
  const auto m = merge_demands(n, tm);
  // Fibers and reach; the degree.
  std::vector<Arc> fiber[2];  // 0: clockwise, 1: counter-clockwise (positions mirrored)
  double fiber_bytes[2] = {0, 0};
  std::vector<std::set<uint32_t>> out_peers(n), in_peers(n);
  for (const auto& [pair, bytes] : m) {
    const auto [src, dst] = pair;
    const uint32_t cw = ring_hops(n, src, dst, true), ccw = n - cw;
    const bool clockwise = cw <= ccw;
    const uint32_t hops = clockwise ? cw : ccw;
    if (hops > ring.reach)
      throw std::invalid_argument(fmt::format(
          "GPU {} -> GPU {}: {} hops away on the nearer fiber, beyond the reach of {}", src, dst, hops, ring.reach));
    const uint32_t f = clockwise ? 0 : 1;
    const uint32_t from = clockwise ? src : (n - src) % n;  // counter-clockwise: position = -GPU mod n
    fiber[f].push_back(Arc{from, hops, bytes, bytes, src, dst});
    fiber_bytes[f] += bytes;
    out_peers[src].insert(dst);
    in_peers[dst].insert(src);
  }
  for (uint32_t g = 0; g < n; ++g)
    if (out_peers[g].size() > ring.degree || in_peers[g].size() > ring.degree)
      throw std::invalid_argument(fmt::format("GPU {} sends to {} and receives from {} GPUs: more than the degree {}",
                                              g, out_peers[g].size(), in_peers[g].size(), ring.degree));
  // The wavelengths of the two fibers: in proportion to their bytes, at least one for a fiber with demands.
  uint32_t w[2] = {0, 0};
  if (fiber[0].empty() || fiber[1].empty()) {
    w[fiber[0].empty() ? 1 : 0] = ring.wavelengths;
  } else {
    if (ring.wavelengths < 2)
      throw std::invalid_argument("demands on both fibers need at least 2 wavelengths (one per fiber)");
    const double share = fiber_bytes[0] / (fiber_bytes[0] + fiber_bytes[1]);
    w[0] = static_cast<uint32_t>(std::llround(share * ring.wavelengths));
    w[0] = std::clamp<uint32_t>(w[0], 1, ring.wavelengths - 1);
    w[1] = ring.wavelengths - w[0];
  }
  std::vector<Lightpath> paths;
  RingPlanInfo in;
  in.wavelengths_clockwise = w[0];
  in.wavelengths_counter = w[1];
  uint32_t next_wavelength = 0;
  for (uint32_t f = 0; f < 2; ++f) {
    if (fiber[f].empty()) continue;
    Patterns p = plan_fiber(n, fiber[f], w[f]);
    in.iterations += p.rounds;
    in.solves += p.solves;
    // Step 4: wavelengths in proportion to the rounds (largest remainder), at
    // least one per pattern. With more patterns than wavelengths, the most
    // chosen ones that light a demand no more chosen one lights are kept
    // first, then the most chosen of the rest; demands left without a
    // lightpath are repaired below.
    std::vector<std::pair<const std::vector<uint32_t>*, uint32_t>> all;  // pattern, rounds
    for (const auto& [arcs, rounds] : p.chosen) all.push_back({&arcs, rounds});
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::pair<const std::vector<uint32_t>*, uint32_t>> pats;
    std::vector<bool> covered(fiber[f].size(), false), kept(all.size(), false);
    for (size_t i = 0; i < all.size(); ++i) {
      bool adds = false;
      for (uint32_t a : *all[i].first) adds |= !covered[a];
      if (!adds) continue;
      for (uint32_t a : *all[i].first) covered[a] = true;
      kept[i] = true;
      pats.push_back(all[i]);
    }
    if (pats.size() > w[f]) pats.resize(w[f]);
    for (size_t i = 0; i < all.size() && pats.size() < w[f]; ++i)
      if (!kept[i]) pats.push_back(all[i]);
    uint32_t rounds = 0;
    for (const auto& pr : pats) rounds += pr.second;
    std::vector<uint32_t> count(pats.size(), 1);
    uint32_t left = w[f] - static_cast<uint32_t>(pats.size());
    std::vector<double> want(pats.size());
    for (size_t i = 0; i < pats.size(); ++i)
      want[i] = static_cast<double>(pats[i].second) * w[f] / rounds - 1;  // beyond the one each pattern has
    for (size_t i = 0; i < pats.size() && left; ++i) {
      const uint32_t whole = static_cast<uint32_t>(std::clamp(std::floor(want[i]), 0.0, double(left)));
      count[i] += whole;
      left -= whole;
      want[i] -= whole;
    }
    std::vector<size_t> order(pats.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return want[a] > want[b]; });
    for (size_t k = 0; left; k = (k + 1) % order.size(), --left) ++count[order[k]];
    in.patterns += static_cast<uint32_t>(pats.size());
    for (size_t i = 0; i < pats.size(); ++i)
      for (uint32_t c = 0; c < count[i]; ++c, ++next_wavelength)
        for (uint32_t a : *pats[i].first)
          paths.push_back(Lightpath{fiber[f][a].src, fiber[f][a].dst, f == 0, next_wavelength});
  }
  // Repair: a demand without a lightpath gets the first wavelength (of either
  // range) free at its GPUs' transmitter and receiver and on every segment
  // of its path.
  const uint32_t W = ring.wavelengths;
  std::vector<bool> seg(2 * static_cast<size_t>(n) * W), tx(static_cast<size_t>(n) * W), rx(tx.size());
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> count;
  auto light = [&](const Lightpath& l, bool set) {
    const uint32_t hops = ring_hops(n, l.src, l.dst, l.clockwise);
    bool free = !tx[size_t(l.src) * W + l.wavelength] && !rx[size_t(l.dst) * W + l.wavelength];
    for (uint32_t h = 0, g = l.src; h < hops; ++h, g = l.clockwise ? (g + 1) % n : (g + n - 1) % n) {
      const size_t i = ((l.clockwise ? 0 : size_t(n)) + g) * W + l.wavelength;
      free = free && !seg[i];
      if (set) seg[i] = true;
    }
    if (set) tx[size_t(l.src) * W + l.wavelength] = rx[size_t(l.dst) * W + l.wavelength] = true;
    return free;
  };
  for (const Lightpath& l : paths) {
    light(l, true);
    ++count[{l.src, l.dst}];
  }
  for (uint32_t f = 0; f < 2; ++f)
    for (const Arc& a : fiber[f]) {
      if (count[{a.src, a.dst}]) continue;
      bool done = false;
      for (uint32_t k = 0; k < W && !done; ++k) {
        const Lightpath l{a.src, a.dst, f == 0, k};
        if (light(l, false)) {
          light(l, true);
          paths.push_back(l);
          ++in.repaired;
          done = true;
        }
      }
      if (!done)
        throw std::invalid_argument(fmt::format(
            "GPU {} -> GPU {}: no wavelength is free along its path once the other demands are lit ({} wavelengths)",
            a.src, a.dst, W));
    }
  // Fill: the demand with the fewest lightpaths per byte takes a wavelength
  // still free along its path (its fiber, or the other within the reach),
  // until the worst-off demand cannot gain one: the max-min objective only
  // grows, and no wavelength a demand could use is left dark.
  {
    struct Want {
      double bytes;
      uint32_t src, dst, lit;
    };
    std::vector<Want> wants;
    for (const auto& [pair, bytes] : m) wants.push_back({bytes, pair.first, pair.second, count[pair]});
    while (!wants.empty()) {
      Want* worst = &wants[0];
      for (Want& x : wants)
        if (x.lit / x.bytes < worst->lit / worst->bytes) worst = &x;
      bool added = false;
      const bool near_cw = ring_hops(n, worst->src, worst->dst, true) <= ring_hops(n, worst->src, worst->dst, false);
      for (bool cw : {near_cw, !near_cw}) {
        if (ring_hops(n, worst->src, worst->dst, cw) > ring.reach) continue;
        for (uint32_t k = 0; k < W && !added; ++k) {
          const Lightpath l{worst->src, worst->dst, cw, k};
          if (light(l, false)) {
            light(l, true);
            paths.push_back(l);
            ++worst->lit;
            ++in.filled;
            added = true;
          }
        }
        if (added) break;
      }
      if (!added) break;  // the worst-off demand is stuck: the minimum cannot grow
    }
  }
  // The objective of the ILP, for comparisons.
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> lit;
  for (const Lightpath& l : paths) ++lit[{l.src, l.dst}];
  double best = -1;
  for (const auto& [pair, bytes] : m) {
    const double r = lit[pair] / bytes;
    if (best < 0 || r < best) best = r;
  }
  in.min_wavelengths_per_byte = best < 0 ? 0 : best;
  if (info) *info = in;
  return paths;
}

}  // namespace fabricvp::optical
