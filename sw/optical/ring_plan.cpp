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
Patterns plan_fiber(uint32_t n, std::vector<Arc>& arcs, uint32_t wavelengths, PatternSolver solver) {
  Patterns out;
  double largest = 0;
  for (const Arc& a : arcs) largest = std::max(largest, a.bytes);
  const double step = largest / wavelengths;
  // The rounds stop when every demand is served; each round serves at least a
  // step of the demand it favours most, so this bound is never reached with
  // a correct solver (it guards against an endless loop).
  const uint64_t max_rounds = 4 * static_cast<uint64_t>(wavelengths) * (arcs.size() + 1) + 16;
  std::vector<PatternArc> open;
  std::vector<uint32_t> of;  // open arc -> demand arc
  std::vector<uint32_t> lit;
  while (true) {
    double smallest = 0;
    for (const Arc& a : arcs)
      if (a.left > 0 && (smallest == 0 || a.left < smallest)) smallest = a.left;
    if (smallest == 0) break;
    if (out.rounds >= max_rounds) throw std::logic_error("ring_plan: the min-cost-flow rounds did not converge");
    // Arc costs: -round(2^40 x smallest / left) for a demand still open
    // (favour the small ones, Eq. (2)); unlit segments cost 0.
    open.clear();
    of.clear();
    for (uint32_t i = 0; i < arcs.size(); ++i)
      if (arcs[i].left > 0) {
        open.push_back({arcs[i].from, arcs[i].hops, -std::llround(std::ldexp(smallest / arcs[i].left, 40))});
        of.push_back(i);
      }
    best_pattern(n, open, solver, lit, out.solves);
    if (lit.empty()) throw std::logic_error("ring_plan: no wavelength pattern serves an open demand");
    std::vector<uint32_t> best;
    for (uint32_t i : lit) best.push_back(of[i]);
    std::sort(best.begin(), best.end());
    for (uint32_t i : best) arcs[i].left = std::max(0.0, arcs[i].left - step);
    ++out.chosen[best];
    ++out.rounds;
  }
  return out;
}

/// The cheapest pattern over the starts tried so far (the first of equal cost).
struct Cheapest {
  bool found = false;
  int64_t cost = 0;
  /// Offer a start's pattern; false if it is empty or no cheaper.
  bool offer(int64_t c, std::vector<uint32_t>&& on, std::vector<uint32_t>& lit) {
    if (on.empty() || (found && c >= cost)) return false;
    found = true;
    cost = c;
    lit = std::move(on);
    return true;
  }
  int64_t done(std::vector<uint32_t>& lit) const {
    std::sort(lit.begin(), lit.end());
    return cost;
  }
};

/// best_pattern by LEMON's network simplex: positions 0 .. n (n: position 0
/// again, after a full turn) and a sink; one solve per start.
int64_t pattern_by_network_simplex(uint32_t n, const std::vector<PatternArc>& arcs, std::vector<uint32_t>& lit,
                                   uint32_t& solves) {
  using G = lemon::SmartDigraph;
  G g;
  std::vector<G::Node> pos(n + 1);
  for (auto& v : pos) v = g.addNode();
  const G::Node sink = g.addNode();
  G::ArcMap<int64_t> cost(g), upper(g);
  std::map<int, int64_t> index;  // graph arc id -> pattern arc index, -1 a segment, -2 the sink
  auto add = [&](G::Node a, G::Node b, int64_t c, int64_t tag) {
    const G::Arc e = g.addArc(a, b);
    cost[e] = c;
    upper[e] = 1;
    index[G::id(e)] = tag;
    return e;
  };
  for (uint32_t x = 0; x < n; ++x) add(pos[x], pos[x + 1], 0, -1);
  std::map<uint32_t, std::vector<G::Arc>> landing;  // crossing arcs by where they land
  for (uint32_t i = 0; i < arcs.size(); ++i) {
    const PatternArc& a = arcs[i];
    if (a.from + a.hops <= n)
      add(pos[a.from], pos[a.from + a.hops], a.cost, i);
    else  // across the cut: the flow ends at its start, and begins where it lands
      landing[a.from + a.hops - n].push_back(add(pos[a.from], sink, a.cost, i));
  }
  const G::Arc end_arc = add(pos[n], sink, 0, -2);
  std::vector<uint32_t> starts{0};
  for (const auto& [v, list] : landing) starts.push_back(v);
  Cheapest best;
  lit.clear();
  for (uint32_t v : starts) {
    // Only this start's way into the sink is open.
    for (const auto& [w, list] : landing)
      for (const G::Arc& e : list) upper[e] = w == v ? 1 : 0;
    upper[end_arc] = v == 0 ? 1 : 0;
    lemon::NetworkSimplex<G, int64_t, int64_t> ns(g);
    ns.upperMap(upper).costMap(cost).stSupply(pos[v], sink, 1);
    ++solves;
    if (ns.run() != lemon::NetworkSimplex<G, int64_t, int64_t>::OPTIMAL) continue;
    const int64_t c = ns.totalCost();
    if (best.found && c >= best.cost) continue;
    std::vector<uint32_t> on;
    for (G::ArcIt e(g); e != lemon::INVALID; ++e)
      if (ns.flow(e) > 0 && index[G::id(e)] >= 0) on.push_back(static_cast<uint32_t>(index[G::id(e)]));
    best.offer(c, std::move(on), lit);
  }
  return best.done(lit);
}

/// best_pattern by dynamic programming over the positions: cut, the flow
/// graph is acyclic and a unit flow is a path, so the cheapest path from each
/// start is the min-cost flow.
int64_t pattern_by_dag(uint32_t n, const std::vector<PatternArc>& arcs, std::vector<uint32_t>& lit, uint32_t& solves) {
  constexpr int64_t kInf = INT64_MAX;
  std::vector<std::vector<uint32_t>> from(n + 1);  // non-crossing arcs by start position
  std::map<uint32_t, std::vector<uint32_t>> landing;
  for (uint32_t i = 0; i < arcs.size(); ++i) {
    if (arcs[i].from + arcs[i].hops <= n)
      from[arcs[i].from].push_back(i);
    else
      landing[arcs[i].from + arcs[i].hops - n].push_back(i);
  }
  std::vector<uint32_t> starts{0};
  for (const auto& [v, list] : landing) starts.push_back(v);
  std::vector<int64_t> dist(n + 1);
  std::vector<int64_t> pred(n + 1);  // arc into the position, -1 the segment before it
  Cheapest best;
  lit.clear();
  for (uint32_t v : starts) {
    ++solves;
    std::fill(dist.begin(), dist.end(), kInf);
    dist[v] = 0;
    for (uint32_t x = v; x < n; ++x) {
      if (dist[x] == kInf) continue;
      if (dist[x] < dist[x + 1]) dist[x + 1] = dist[x], pred[x + 1] = -1;
      for (uint32_t i : from[x]) {
        const uint32_t y = x + arcs[i].hops;
        if (dist[x] + arcs[i].cost < dist[y]) dist[y] = dist[x] + arcs[i].cost, pred[y] = i;
      }
    }
    // where the path ends: position n (start 0), or a crossing arc landing at v
    int64_t c = kInf;
    int64_t last = -1;  // the crossing arc, or -1
    uint32_t end = n;
    if (v == 0) {
      c = dist[n];
    } else {
      for (uint32_t i : landing[v])
        if (dist[arcs[i].from] != kInf && dist[arcs[i].from] + arcs[i].cost < c)
          c = dist[arcs[i].from] + arcs[i].cost, last = i, end = arcs[i].from;
    }
    if (c == kInf || (best.found && c >= best.cost)) continue;
    std::vector<uint32_t> on;
    if (last >= 0) on.push_back(static_cast<uint32_t>(last));
    for (uint32_t y = end; y > v;) {
      if (pred[y] < 0) {
        --y;
      } else {
        on.push_back(static_cast<uint32_t>(pred[y]));
        y = arcs[pred[y]].from;
      }
    }
    best.offer(c, std::move(on), lit);
  }
  return best.done(lit);
}

}  // namespace

int64_t best_pattern(uint32_t n, const std::vector<PatternArc>& arcs, PatternSolver solver, std::vector<uint32_t>& lit,
                     uint32_t& solves) {
  return solver == PatternSolver::network_simplex ? pattern_by_network_simplex(n, arcs, lit, solves)
                                                  : pattern_by_dag(n, arcs, lit, solves);
}

std::vector<Lightpath> ring_plan(const RingSpec& ring, const std::vector<Demand>& tm, RingPlanInfo* info,
                                 PatternSolver solver) {
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
    Patterns p = plan_fiber(n, fiber[f], w[f], solver);
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
