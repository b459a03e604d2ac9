// Routes through the machine's cables (seed 000 §4.2-4.3).
//
// A route is the list of cables a tensor crosses; every TSP on the way is also
// a router (virtual cut-through through its SRAM). Minimal routes cross the
// fewest global (inter-node) cables, then the fewest cables overall, as a
// Dragonfly's minimal routing does (local, global, local); they come from a
// shortest-path search over live cables that visits ports in index order, so
// they are deterministic. For spreading one tensor over several
// paths, the candidates are the minimal route and detours through one
// intermediate chip (inside a node: the 2-hop paths through the other TSPs;
// between nodes: paths through other nodes' global links), preferring the
// shortest and keeping them link-disjoint. How many are used is decided at
// compile time from the tensor size and the paths' latencies.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "sw/sched/machine.h"

namespace fabricvp::sched {

struct Hop {
  uint32_t chip;  ///< sender
  uint32_t port;  ///< its output port
};

struct Route {
  std::vector<Hop> hops;  ///< hops[0].chip is the source; the last hop reaches the destination
  uint32_t dst = kNoChip;
};

class Router {
 public:
  explicit Router(const Machine& m, size_t cache_trees = 256);

  /// Minimal route between physical chips; throws core::ConfigError if
  /// none exists (dead hardware cut the machine).
  Route minimal(uint32_t src, uint32_t dst);
  /// The same kind of route, taken from the search rooted at the destination:
  /// one search serves every source sending to `dst` (reduce-scatter).
  Route minimal_into(uint32_t src, uint32_t dst);
  /// Cables on the minimal route (0 for src == dst).
  uint32_t distance(uint32_t src, uint32_t dst);
  /// Up to `count` link-disjoint routes, the minimal one first, then the
  /// shortest detours through one intermediate chip.
  std::vector<Route> candidates(uint32_t src, uint32_t dst, uint32_t count);
  /// Between two nodes: the minimal route, then for every other live node
  /// the shortest route through one of its chips (on a Dragonfly, one global
  /// cable into that node and one out of it), sorted by latency. Routes may
  /// share cables; a compiler picks among them by what is already booked.
  std::vector<Route> via_nodes(uint32_t src, uint32_t dst);
  /// Time from a SEND issued at cycle 0 on the source to the first vector
  /// readable at the destination, on idle hardware (ps).
  uint64_t latency(const Route& r) const;
  /// Payload time of one packet on the route's slowest cable (ps).
  const core::SerialRate& bottleneck(const Route& r) const;

  /// Split n vectors over routes (sorted by latency) so that the last vector
  /// lands as early as possible; returns vectors per route (trailing routes may get 0).
  std::vector<uint32_t> split(const std::vector<Route>& routes, uint32_t n) const;
  /// Estimated completion of route i carrying k vectors (ps), idle hardware.
  uint64_t finish(const Route& r, uint32_t k) const;

 private:
  struct Tree {
    std::vector<uint32_t> parent;  ///< previous chip, kNoChip if unreached
    std::vector<uint8_t> port;     ///< parent's output port toward this chip
    std::vector<uint16_t> dist;
  };
  const Tree& tree(uint32_t src);
  Route walk(const Tree& t, uint32_t src, uint32_t dst) const;
  /// `back` runs from dst to some chip; the same cables the other way, ending at dst.
  Route reversed(const Route& back, uint32_t dst) const;
  /// src -> mid -> dst along the two searches' minimal routes.
  Route through(const Tree& from_src, const Tree& from_dst, uint32_t src, uint32_t dst, uint32_t mid) const;
  /// Whether the route visits a chip twice (or comes back to src): not a route.
  bool loops(const Route& r, uint32_t src) const;
  void by_latency(std::vector<Route>& routes) const;

  const Machine& m_m;
  size_t m_cache;
  std::list<uint32_t> m_lru;
  std::unordered_map<uint32_t, std::pair<Tree, std::list<uint32_t>::iterator>> m_trees;
};

}  // namespace fabricvp::sched
