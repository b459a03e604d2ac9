#include "sw/sched/routing.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "models/core/config.h"

namespace fabricvp::sched {

Router::Router(const Machine& m, size_t cache_trees) : m_m(m), m_cache(std::max<size_t>(2, cache_trees)) {}

const Router::Tree& Router::tree(uint32_t src) {
  auto it = m_trees.find(src);
  if (it != m_trees.end()) {
    m_lru.splice(m_lru.begin(), m_lru, it->second.second);
    return it->second.first;
  }
  if (m_trees.size() >= m_cache) {
    m_trees.erase(m_lru.back());
    m_lru.pop_back();
  }
  const size_t n = m_m.chips.size();
  Tree t;
  t.parent.assign(n, kNoChip);
  t.port.assign(n, 0);
  t.dist.assign(n, 0xffff);
  // Dragonfly minimal routing: fewest global (inter-node) cables first, then
  // fewest cables: shortest paths for cost = 257 per global cable + 1 per
  // local one. Two weights only, so a bucket queue (Dial) finds them in linear
  // time; ports are visited in index order and buckets are FIFO, so routes are
  // deterministic.
  constexpr uint32_t kGlobal = 257;
  std::vector<uint32_t> cost(n, UINT32_MAX);
  std::vector<std::vector<uint32_t>> bucket(1);
  cost[src] = 0;
  t.dist[src] = 0;
  bucket[0].push_back(src);
  for (size_t k = 0; k < bucket.size(); ++k) {
    for (size_t i = 0; i < bucket[k].size(); ++i) {
      const uint32_t c = bucket[k][i];
      if (cost[c] != k) continue;  // reached more cheaply later
      const ChipSpec& cs = m_m.chips[c];
      for (uint32_t p = 0; p < cs.ports.size(); ++p) {
        const PortSpec& ps = cs.ports[p];
        if (ps.peer == kNoChip || ps.failed || m_m.chips[ps.peer].failed) continue;
        const uint32_t next = static_cast<uint32_t>(k) + (m_m.chips[ps.peer].node != cs.node ? kGlobal : 1);
        if (next >= cost[ps.peer]) continue;
        cost[ps.peer] = next;
        t.dist[ps.peer] = static_cast<uint16_t>(t.dist[c] + 1);
        t.parent[ps.peer] = c;
        t.port[ps.peer] = static_cast<uint8_t>(p);
        if (bucket.size() <= next) bucket.resize(next + 1);
        bucket[next].push_back(ps.peer);
      }
    }
    std::vector<uint32_t>().swap(bucket[k]);
  }
  m_lru.push_front(src);
  auto& slot = m_trees[src];
  slot.first = std::move(t);
  slot.second = m_lru.begin();
  return slot.first;
}

Route Router::walk(const Tree& t, uint32_t src, uint32_t dst) const {
  if (t.dist[dst] == 0xffff)
    throw core::ConfigError(fmt::format("no route from {} to {}: dead nodes and links cut the machine",
                                        m_m.chips[src].name, m_m.chips[dst].name));
  Route r;
  r.dst = dst;
  for (uint32_t c = dst; c != src; c = t.parent[c]) r.hops.push_back(Hop{t.parent[c], t.port[c]});
  std::reverse(r.hops.begin(), r.hops.end());
  return r;
}

Route Router::minimal(uint32_t src, uint32_t dst) { return walk(tree(src), src, dst); }

Route Router::reversed(const Route& back, uint32_t dst) const {
  Route r;
  r.dst = dst;
  for (auto it = back.hops.rbegin(); it != back.hops.rend(); ++it) {
    const PortSpec& p = m_m.chips[it->chip].ports[it->port];
    r.hops.push_back(Hop{p.peer, p.peer_port});
  }
  return r;
}

Route Router::minimal_into(uint32_t src, uint32_t dst) { return reversed(walk(tree(dst), dst, src), dst); }

uint32_t Router::distance(uint32_t src, uint32_t dst) {
  const Tree& t = tree(src);
  if (t.dist[dst] == 0xffff)
    throw core::ConfigError(fmt::format("no route from {} to {}: dead nodes and links cut the machine",
                                        m_m.chips[src].name, m_m.chips[dst].name));
  return t.dist[dst];
}

std::vector<Route> Router::candidates(uint32_t src, uint32_t dst, uint32_t count) {
  std::vector<Route> out;
  out.push_back(minimal(src, dst));
  if (count <= 1) return out;
  // Copy both trees: tree() may evict.
  Tree from_src = tree(src);
  Tree from_dst = tree(dst);
  struct Cand {
    uint32_t len, mid;
  };
  std::vector<Cand> cands;
  for (uint32_t m = 0; m < m_m.chips.size(); ++m) {
    if (m == src || m == dst || m_m.chips[m].failed) continue;
    if (from_src.dist[m] == 0xffff || from_dst.dist[m] == 0xffff) continue;
    cands.push_back(Cand{static_cast<uint32_t>(from_src.dist[m] + from_dst.dist[m]), m});
  }
  std::sort(cands.begin(), cands.end(),
            [](const Cand& a, const Cand& b) { return a.len != b.len ? a.len < b.len : a.mid < b.mid; });
  std::set<std::pair<uint32_t, uint32_t>> used;  // directed cables (chip, port)
  for (const Hop& h : out[0].hops) used.insert({h.chip, h.port});
  for (const Cand& c : cands) {
    if (out.size() >= count) break;
    if (c.len <= out[0].hops.size()) continue;  // another minimal route: not a detour
    Route r = through(from_src, from_dst, src, dst, c.mid);
    if (loops(r, src) || std::any_of(r.hops.begin(), r.hops.end(), [&](const Hop& h) {
          return used.count({h.chip, h.port}) > 0;
        }))
      continue;
    for (const Hop& h : r.hops) used.insert({h.chip, h.port});
    out.push_back(std::move(r));
  }
  by_latency(out);
  return out;
}

Route Router::through(const Tree& from_src, const Tree& from_dst, uint32_t src, uint32_t dst, uint32_t mid) const {
  Route r = walk(from_src, src, mid);
  const Route b = reversed(walk(from_dst, dst, mid), dst);  // mid -> dst
  r.dst = dst;
  r.hops.insert(r.hops.end(), b.hops.begin(), b.hops.end());
  return r;
}

bool Router::loops(const Route& r, uint32_t src) const {
  std::set<uint32_t> seen{src};
  for (const Hop& h : r.hops)
    if (!seen.insert(m_m.chips[h.chip].ports[h.port].peer).second) return true;
  return false;
}

void Router::by_latency(std::vector<Route>& routes) const {
  std::stable_sort(routes.begin(), routes.end(),
                   [this](const Route& a, const Route& b) { return latency(a) < latency(b); });
}

std::vector<Route> Router::via_nodes(uint32_t src, uint32_t dst) {
  std::vector<Route> out{minimal(src, dst)};
  // Copy both trees: tree() may evict.
  Tree from_src = tree(src);
  Tree from_dst = tree(dst);
  const uint32_t skip0 = m_m.chips[src].node, skip1 = m_m.chips[dst].node;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> best;  // node -> (length, chip)
  for (uint32_t c = 0; c < m_m.chips.size(); ++c) {
    const ChipSpec& cs = m_m.chips[c];
    if (cs.failed || cs.node == skip0 || cs.node == skip1) continue;
    if (from_src.dist[c] == 0xffff || from_dst.dist[c] == 0xffff) continue;
    const uint32_t len = uint32_t(from_src.dist[c]) + from_dst.dist[c];
    auto it = best.find(cs.node);
    if (it == best.end() || len < it->second.first) best[cs.node] = {len, c};
  }
  for (const auto& [node, lc] : best) {
    Route r = through(from_src, from_dst, src, dst, lc.second);
    if (!loops(r, src)) out.push_back(std::move(r));
  }
  by_latency(out);
  return out;
}

uint64_t Router::latency(const Route& r) const {
  uint64_t cycle = 0;  // issue cycle of the SEND on the current chip
  uint64_t readable_ps = 0;
  for (const Hop& h : r.hops) {
    const ChipSpec& s = m_m.chips[h.chip];
    const PortSpec& p = s.ports[h.port];
    const ChipSpec& d = m_m.chips[p.peer];
    uint64_t arrival = s.clock.ps(cycle + s.send_latency) + p.out.rate.ps(1) + p.out.latency_ps;
    uint64_t take = d.clock.cycle_at_or_after(arrival);
    cycle = take + d.recv_latency;  // forwarded from here (same-cycle issue on the next chip)
    readable_ps = d.clock.ps(cycle);
  }
  return readable_ps;
}

const core::SerialRate& Router::bottleneck(const Route& r) const {
  const core::SerialRate* worst = &m_m.chips[r.hops[0].chip].ports[r.hops[0].port].out.rate;
  for (const Hop& h : r.hops) {
    const core::SerialRate& s = m_m.chips[h.chip].ports[h.port].out.rate;
    if (s.ps(1) > worst->ps(1)) worst = &s;
  }
  return *worst;
}

uint64_t Router::finish(const Route& r, uint32_t k) const { return k ? latency(r) + bottleneck(r).ps(k - 1) : 0; }

std::vector<uint32_t> Router::split(const std::vector<Route>& routes, uint32_t n) const {
  // Give each vector to the route where it would land first (water filling).
  std::vector<uint32_t> share(routes.size(), 0);
  std::vector<uint64_t> lat(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) lat[i] = latency(routes[i]);
  using Item = std::pair<uint64_t, size_t>;  // next landing time, route
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  for (size_t i = 0; i < routes.size(); ++i) heap.push({lat[i], i});
  for (uint32_t v = 0; v < n; ++v) {
    auto [t, i] = heap.top();
    heap.pop();
    ++share[i];
    heap.push({lat[i] + bottleneck(routes[i]).ps(share[i]), i});
  }
  return share;
}

}  // namespace fabricvp::sched
