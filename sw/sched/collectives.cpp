#include "sw/sched/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "models/core/config.h"
#include "sw/sched/engine.h"
#include "sw/sched/routing.h"

namespace fabricvp::sched {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::allreduce: return "allreduce";
    case Kind::allgather: return "allgather";
    case Kind::reducescatter: return "reducescatter";
    case Kind::broadcast: return "broadcast";
    case Kind::alltoall: return "alltoall";
    case Kind::p2p: return "p2p";
  }
  return "?";
}

bool parse_kind(const std::string& s, Kind& out) {
  for (Kind k : {Kind::allreduce, Kind::allgather, Kind::reducescatter, Kind::broadcast, Kind::alltoall, Kind::p2p})
    if (s == kind_name(k)) return out = k, true;
  return false;
}

bool parse_routing(const std::string& s, Routing& out) {
  if (s == "minimal") return out = Routing::minimal, true;
  if (s == "spread") return out = Routing::spread, true;
  if (s == "auto") return out = Routing::automatic, true;
  return false;
}

namespace {

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// A staging ring slot would be overwritten before the reduction has read it.
struct RingTooSmall {
  size_t level;
};

struct Piece {
  uint32_t off = 0, len = 0;  // vectors
};

/// The job's hierarchy and the recursive split of a buffer over it.
class Hierarchy {
 public:
  explicit Hierarchy(const Machine& m) : m_m(m) {
    const uint32_t sizes[3] = {m.tsps_per_node, m.nodes_per_rack, m.racks};
    for (uint32_t k = 0; k < 3; ++k)
      if (sizes[k] > 1) {
        m_coord.push_back(k);
        m_size.push_back(sizes[k]);
      }
    for (uint32_t r = 0; r < m.size(); ++r)
      if (rank_of(m.coord[r]) != r) throw std::logic_error("rank order does not follow (rack, node, tsp)");
  }
  size_t levels() const { return m_size.size(); }
  const std::vector<uint32_t>& sizes() const { return m_size; }
  uint32_t member(uint32_t rank, size_t l) const { return value(m_m.coord[rank], m_coord[l]); }
  /// The ranks of `rank`'s group at level l, in member order.
  std::vector<uint32_t> group(uint32_t rank, size_t l) const {
    std::vector<uint32_t> g;
    Coord c = m_m.coord[rank];
    for (uint32_t v = 0; v < m_size[l]; ++v) {
      value(c, m_coord[l]) = v;
      g.push_back(rank_of(c));
    }
    return g;
  }
  /// reg[l][rank], l = 0..levels: the piece a rank is responsible for after l
  /// levels of splitting `whole`, members weighted by the summed `weight` of
  /// the ranks that will share their piece. With min_piece > 0 a group whose
  /// piece is too small to give every member min_piece vectors splits it into
  /// fewer, larger pieces for a few members, rotated from group to group so the
  /// work spreads (tiny pieces cost a multi-hop transfer each and add nothing).
  std::vector<std::vector<Piece>> split(Piece whole, const std::vector<uint64_t>& weight,
                                        uint32_t min_piece = 0) const {
    const uint32_t P = m_m.size();
    std::vector<std::vector<Piece>> reg(levels() + 1, std::vector<Piece>(P));
    for (uint32_t r = 0; r < P; ++r) reg[0][r] = whole;
    for (size_t l = 0; l < levels(); ++l) {
      // Subtree weight: ranks agreeing with `r` on the coordinates of levels 0..l.
      std::map<uint64_t, uint64_t> sub;
      for (uint32_t r = 0; r < P; ++r) sub[key(r, l)] += weight[r];
      for (uint32_t r = 0; r < P; ++r) {
        if (member(r, l) != 0) continue;  // split once per group, from its member 0
        // Rotate by the coordinates of the levels below only: groups that differ
        // in a higher coordinate must split alike, because the next level's
        // groups add up those very pieces.
        const uint64_t group_id = l == 0 ? 0 : key(r, l - 1);
        std::vector<uint32_t> g = group(r, l);
        const uint32_t gs = static_cast<uint32_t>(g.size());
        Piece in = reg[l][r];
        std::vector<uint64_t> w(gs);
        for (uint32_t j = 0; j < gs; ++j) w[j] = sub[key(g[j], l)];
        uint32_t rot = 0;
        if (min_piece && in.len < static_cast<uint64_t>(gs) * min_piece) {
          uint32_t pieces = std::max<uint32_t>(1, in.len / min_piece);
          rot = static_cast<uint32_t>((group_id % 1000003) * pieces % gs);
          for (uint32_t j = 0; j < gs; ++j) w[j] = ((j + gs - rot) % gs) < pieces ? 1 : 0;
        }
        uint64_t total = 0;
        for (uint64_t x : w) total += x;
        uint64_t acc = 0;
        for (uint32_t i = 0; i < gs; ++i) {  // pieces in buffer order start with member `rot`
          uint32_t j = (rot + i) % gs;
          uint64_t lo = total ? in.len * acc / total : 0;
          acc += w[j];
          uint64_t hi = total ? in.len * acc / total : 0;
          reg[l + 1][g[j]] = Piece{in.off + static_cast<uint32_t>(lo), static_cast<uint32_t>(hi - lo)};
        }
      }
    }
    return reg;
  }

 private:
  static uint32_t value(const Coord& c, uint32_t k) { return k == 0 ? c.tsp : k == 1 ? c.node : c.rack; }
  static uint32_t& value(Coord& c, uint32_t k) { return k == 0 ? c.tsp : k == 1 ? c.node : c.rack; }
  uint32_t rank_of(const Coord& c) const { return (c.rack * m_m.nodes_per_rack + c.node) * m_m.tsps_per_node + c.tsp; }
  uint64_t key(uint32_t r, size_t l) const {
    uint64_t k = 0;
    for (size_t i = 0; i <= l; ++i) k = k * 65536 + value(m_m.coord[r], m_coord[i]);
    return k;
  }
  const Machine& m_m;
  std::vector<uint32_t> m_coord, m_size;
};

/// Everything one plan needs while it is being built.
struct Ctx {
  const Machine& m;
  const Request& r;
  Router router;
  Engine eng;
  Hierarchy h;
  uint32_t max_hops = 0;
  Ctx(const Machine& mm, const Request& rr) : m(mm), r(rr), router(mm), eng(mm), h(mm) {}

  uint32_t chip(uint32_t rank) const { return m.ranks[rank]; }
  /// Minimal route; `into` takes it from the destination's search (many
  /// sources, one destination), otherwise from the source's.
  Route route(uint32_t from_rank, uint32_t to_rank, bool into = false) {
    Route rt =
        into ? router.minimal_into(chip(from_rank), chip(to_rank)) : router.minimal(chip(from_rank), chip(to_rank));
    max_hops = std::max<uint32_t>(max_hops, static_cast<uint32_t>(rt.hops.size()));
    return rt;
  }
};

Ready slice(const Ready& all, uint32_t from, uint32_t len) {
  if (all.empty()) return {};
  return Ready(all.begin() + from, all.begin() + from + len);
}

uint64_t last_of(const Ready& r, uint32_t from, uint32_t len) {
  uint64_t t = 0;
  if (!r.empty())
    for (uint32_t i = from; i < from + len; ++i) t = std::max(t, r[i]);
  return t;
}

/// Reduce-scatter at level l: every rank sums its piece (reg[l+1]) over its
/// group, contributions in member order, own contribution in place. Staging:
/// per source a ring of `ring` chunks at `base`, then the accumulator ring.
/// `prev[rank]` is the readiness of reg[l]; returns the readiness of reg[l+1].
std::vector<Ready> reduce_scatter(Ctx& x, size_t l, const std::vector<std::vector<Piece>>& reg,
                                  const std::vector<Ready>& prev, uint32_t base, uint32_t chunk, uint32_t ring) {
  const uint32_t P = x.m.size();
  const uint32_t g = x.h.sizes()[l];
  std::vector<Ready> out(P);
  for (uint32_t j = 0; j < P; ++j) {
    const Piece piece = reg[l + 1][j];
    if (!piece.len) continue;
    const ChipSpec& C = x.m.chips[x.chip(j)];
    const std::vector<uint32_t> grp = x.h.group(j, l);
    const uint32_t me = x.h.member(j, l);
    const uint32_t chunks = static_cast<uint32_t>(div_up(piece.len, chunk));
    auto slot_of = [&](uint32_t member) { return member < me ? member : member - 1; };
    auto ring_addr = [&](uint32_t member, uint32_t c) { return base + (slot_of(member) * ring + c % ring) * chunk; };
    const uint32_t acc = base + (g - 1) * ring * chunk;
    auto chunk_len = [&](uint32_t c) { return std::min(chunk, piece.len - c * chunk); };

    std::vector<Ready> got(g);
    for (uint32_t k = 1; k < g; ++k) {  // start with the next member: spreads the first bursts
      uint32_t mem = (me + k) % g, src = grp[mem];
      std::vector<Engine::Chunk> into;
      for (uint32_t c = 0; c < chunks; ++c) into.push_back(Engine::Chunk{ring_addr(mem, c), chunk_len(c)});
      got[mem] = x.eng.send(x.route(src, j, true), piece.off, into, piece.len,
                            slice(prev[src], piece.off - reg[l][src].off, piece.len));
    }
    const Ready& own = prev[j];
    const uint32_t own_off = piece.off - reg[l][j].off;
    out[j].assign(piece.len, 0);
    std::vector<std::vector<uint64_t>> last_read(g, std::vector<uint64_t>(chunks, 0));
    for (uint32_t c = 0; c < chunks; ++c) {
      const uint32_t first = c * chunk, len = chunk_len(c);
      uint64_t ready = C.clock.cycle_at_or_after(last_of(own, own_off + first, len));
      for (uint32_t mem = 0; mem < g; ++mem)
        if (mem != me) ready = std::max(ready, C.clock.cycle_at_or_after(last_of(got[mem], first, len)));
      auto term = [&](uint32_t mem) { return mem == me ? piece.off + first : ring_addr(mem, c); };
      const uint32_t acc_c = acc + (c % ring) * chunk;
      uint64_t cyc = ready, last = 0;
      for (uint32_t k = 1; k < g; ++k) {
        uint32_t d = k == g - 1 ? piece.off + first : acc_c;
        uint32_t a = k == 1 ? term(0) : acc_c;
        last = x.eng.add(x.chip(j), cyc, x.r.dtype, d, a, term(k), len);
        if (k == 1 && me != 0) last_read[0][c] = last + len - 1;
        if (me != k) last_read[k][c] = last + len - 1;
        cyc = last + std::max<uint64_t>(len, C.add_latency);
      }
      for (uint32_t v = 0; v < len; ++v) out[j][first + v] = C.clock.ps(last + v + C.add_latency);
    }
    // A ring slot is reused by chunk c + ring: its first write must follow the
    // reduction's last read of chunk c.
    for (uint32_t mem = 0; mem < g; ++mem) {
      if (mem == me) continue;
      for (uint32_t c = ring; c < chunks; ++c)
        if (C.clock.ps(last_read[mem][c - ring]) >= got[mem][c * chunk]) throw RingTooSmall{l};
    }
  }
  return out;
}

/// All-gather at level l: every rank sends its piece reg[l+1] (readiness `cur`)
/// to the members of its group that need it. Returns the readiness of reg[l]
/// on every rank (not kept for the last level, where nobody needs it).
std::vector<Ready> all_gather(Ctx& x, size_t l, const std::vector<std::vector<Piece>>& reg,
                              const std::vector<Ready>& cur, const std::vector<bool>& needs, bool keep) {
  const uint32_t P = x.m.size();
  const uint32_t g = x.h.sizes()[l];
  std::vector<Ready> out(P);
  if (keep)
    for (uint32_t m = 0; m < P; ++m)
      if (needs[m]) out[m].assign(reg[l][m].len, 0);
  for (uint32_t j = 0; j < P; ++j) {  // source by source: one route search each
    const Piece piece = reg[l + 1][j];
    if (!piece.len) continue;
    const std::vector<uint32_t> grp = x.h.group(j, l);
    for (uint32_t k = 1; k < g; ++k) {  // member i sends to member i + 1, i + 2, ...
      uint32_t dst = grp[(x.h.member(j, l) + k) % g];
      if (!needs[dst]) continue;
      Ready arr = x.eng.send(x.route(j, dst), piece.off, {Engine::Chunk{piece.off, piece.len}}, piece.len, cur[j]);
      if (keep) std::copy(arr.begin(), arr.end(), out[dst].begin() + (piece.off - reg[l][dst].off));
    }
  }
  if (keep)
    for (uint32_t j = 0; j < P; ++j) {
      const Piece piece = reg[l + 1][j];
      if (needs[j] && piece.len && !cur[j].empty())
        std::copy(cur[j].begin(), cur[j].end(), out[j].begin() + (piece.off - reg[l][j].off));
    }
  return out;
}

uint32_t choose_chunk(const Machine& m, const Request& r, uint32_t len, uint32_t group) {
  // Keep a reduction queue (n-1 ADDs and a WAIT per chunk and source) inside instruction memory.
  uint32_t imem = UINT32_MAX;
  for (const auto& c : m.chips) imem = std::min(imem, c.imem);
  uint64_t max_chunks = std::max<uint64_t>(1, (imem - 16) / (2 * std::max<uint32_t>(group, 2)));
  uint64_t chunk = std::max<uint64_t>(std::max<uint32_t>(1, r.chunk_vectors), div_up(len, max_chunks));
  return static_cast<uint32_t>(std::min<uint64_t>(chunk, len));  // staging slots never wider than the piece
}

void check_fits(uint64_t vectors, const Request& r) {
  if (vectors > tsp::kVectors)
    throw core::ConfigError(
        fmt::format("{} of {} bytes needs {} vectors of SRAM per chip (buffers and staging); a TSP has {} (220 MiB)",
                    kind_name(r.kind), r.bytes, vectors, tsp::kVectors));
}

/// Hierarchical reduce-scatter up every level; returns the top-level readiness.
/// Staging for every level is laid out from `staging` first, so that the
/// forwarding scratch above it never overlaps a buffer.
std::vector<Ready> rs_levels(Ctx& x, const std::vector<std::vector<Piece>>& reg, uint32_t staging, Plan& P) {
  struct Level {
    uint32_t chunk = 0, ring = 0, base = 0;
  };
  std::vector<Level> lv(x.h.levels());
  uint64_t top = staging;
  for (size_t l = 0; l < x.h.levels(); ++l) {
    uint32_t len = 0;
    for (const Piece& p : reg[l + 1]) len = std::max(len, p.len);
    if (!len) continue;
    lv[l].chunk = choose_chunk(x.m, x.r, len, x.h.sizes()[l]);
    const uint32_t want =
        l < x.r.level_staging.size() && x.r.level_staging[l] ? x.r.level_staging[l] : x.r.staging_chunks;
    lv[l].ring = std::max<uint32_t>(1, std::min<uint32_t>(want, div_up(len, lv[l].chunk)));
    lv[l].base = static_cast<uint32_t>(std::min<uint64_t>(top, tsp::kVectors));
    top += static_cast<uint64_t>(x.h.sizes()[l]) * lv[l].ring * lv[l].chunk;
    check_fits(top, x.r);
  }
  P.chunk_vectors = lv.empty() ? 0 : lv[0].chunk;
  P.staging_chunks = lv.empty() ? 0 : lv[0].ring;
  for (const Level& v : lv) P.level_staging.push_back(v.ring);
  x.eng.set_scratch_base(static_cast<uint32_t>(top));
  std::vector<Ready> ready(x.m.size());  // level 0: inputs ready at time 0
  for (size_t l = 0; l < x.h.levels(); ++l)
    if (lv[l].chunk) ready = reduce_scatter(x, l, reg, ready, lv[l].base, lv[l].chunk, lv[l].ring);
  return ready;
}

}  // namespace

Plan plan_once(const Machine& m, const Request& r);

Plan plan(const Machine& m, const Request& r) {
  // A staging ring the reduction cannot drain in time is doubled until it can
  // (in the limit every chunk has its own slot and nothing is reused).
  Request q = r;
  for (;;) {
    try {
      return plan_once(m, q);
    } catch (const RingTooSmall& e) {
      if (q.level_staging.size() <= e.level) q.level_staging.resize(e.level + 1, 0);
      uint32_t& ring = q.level_staging[e.level];
      if (!ring) ring = std::max<uint32_t>(1, q.staging_chunks);
      if (ring >= tsp::kVectors) throw std::logic_error("staging ring cannot grow further");
      ring *= 2;
    }
  }
}

Plan plan_once(const Machine& m, const Request& r) {
  const uint32_t P = m.size();
  const uint32_t esize = core::dtype_bytes(r.dtype);
  if (P < 2) throw core::ConfigError("collectives need at least 2 chips in the job");
  if (esize == 0) throw core::ConfigError("unknown data type");
  if (r.bytes == 0) throw core::ConfigError("--bytes must be at least one element");
  if (r.bytes % esize)
    throw core::ConfigError(fmt::format("--bytes {} is not a whole number of {} elements ({} bytes each)", r.bytes,
                                        core::dtype_name(r.dtype), esize));
  const bool per_rank = r.kind == Kind::allgather || r.kind == Kind::reducescatter || r.kind == Kind::alltoall;
  if (per_rank && r.bytes % (static_cast<uint64_t>(P) * esize))
    throw core::ConfigError(fmt::format("{}: --bytes {} must split into {} equal pieces of whole {} elements",
                                        kind_name(r.kind), r.bytes, P, core::dtype_name(r.dtype)));
  if ((r.kind == Kind::broadcast || r.kind == Kind::p2p) && r.root >= P)
    throw core::ConfigError(fmt::format("rank {} does not exist ({} ranks)", r.root, P));
  if (r.kind == Kind::p2p && (r.peer >= P || r.peer == r.root))
    throw core::ConfigError(
        fmt::format("p2p destination rank {} must exist and differ from the source {}", r.peer, r.root));

  Ctx x(m, r);
  Plan out;
  out.inputs.assign(P, {});
  out.outputs.assign(P, {});
  out.collective_rank.resize(P);
  for (uint32_t k = 0; k < P; ++k) out.collective_rank[k] = k;
  out.levels = x.h.sizes();
  const uint64_t VB = tsp::kVectorBytes;
  const std::vector<uint64_t> ones(P, 1);

  switch (r.kind) {
    case Kind::allreduce: {
      const uint32_t V = static_cast<uint32_t>(std::min<uint64_t>(div_up(r.bytes, VB), tsp::kVectors + 1ULL));
      check_fits(V, r);
      auto reg = x.h.split(Piece{0, V}, ones, r.min_piece_vectors);
      std::vector<Ready> ready = rs_levels(x, reg, V, out);
      std::vector<bool> all(P, true);
      for (size_t l = x.h.levels(); l-- > 0;) ready = all_gather(x, l, reg, ready, all, l > 0);
      for (uint32_t k = 0; k < P; ++k) out.inputs[k] = out.outputs[k] = {Region{0, r.bytes}};
      out.input_bytes = r.bytes;
      out.bus_factor = 2.0 * (P - 1) / P;
      break;
    }
    case Kind::reducescatter:
    case Kind::allgather: {
      // One slot of vp vectors per rank; the split hands every rank one slot.
      const uint64_t piece = r.bytes / P;
      const uint32_t vp = static_cast<uint32_t>(div_up(piece, VB));
      check_fits(static_cast<uint64_t>(vp) * P, r);
      auto slots = x.h.split(Piece{0, P}, ones);
      std::vector<std::vector<Piece>> reg(slots.size(), std::vector<Piece>(P));
      for (size_t l = 0; l < slots.size(); ++l)
        for (uint32_t k = 0; k < P; ++k) reg[l][k] = Piece{slots[l][k].off * vp, slots[l][k].len * vp};
      for (uint32_t k = 0; k < P; ++k) out.collective_rank[k] = slots.back()[k].off;
      if (r.kind == Kind::reducescatter) {
        rs_levels(x, reg, vp * P, out);
        for (uint32_t k = 0; k < P; ++k) {
          for (uint32_t s = 0; s < P; ++s) out.inputs[k].push_back(Region{s * vp, piece});
          out.outputs[k] = {Region{out.collective_rank[k] * vp, piece}};
        }
        out.input_bytes = r.bytes;
      } else {
        x.eng.set_scratch_base(vp * P);
        std::vector<Ready> ready(P);
        std::vector<bool> all(P, true);
        for (size_t l = x.h.levels(); l-- > 0;) ready = all_gather(x, l, reg, ready, all, l > 0);
        for (uint32_t k = 0; k < P; ++k) {
          out.inputs[k] = {Region{out.collective_rank[k] * vp, piece}};
          for (uint32_t s = 0; s < P; ++s) out.outputs[k].push_back(Region{s * vp, piece});
        }
        out.input_bytes = piece;
      }
      out.bus_factor = static_cast<double>(P - 1) / P;
      break;
    }
    case Kind::broadcast: {
      const uint32_t V = static_cast<uint32_t>(std::min<uint64_t>(div_up(r.bytes, VB), tsp::kVectors + 1ULL));
      check_fits(V, r);
      x.eng.set_scratch_base(V);
      std::vector<uint64_t> weight(P, 1);
      weight[r.root] = 0;
      auto reg = x.h.split(Piece{0, V}, weight);
      // Scatter: the root sends every rank its finest piece.
      std::vector<Ready> ready(P);
      for (uint32_t k = 1; k < P; ++k) {
        uint32_t dst = (r.root + k) % P;
        Piece p = reg.back()[dst];
        if (p.len) ready[dst] = x.eng.send(x.route(r.root, dst), p.off, {Engine::Chunk{p.off, p.len}}, p.len, {});
      }
      std::vector<bool> needs(P, true);
      needs[r.root] = false;
      for (size_t l = x.h.levels(); l-- > 0;) ready = all_gather(x, l, reg, ready, needs, l > 0);
      out.inputs[r.root] = {Region{0, r.bytes}};
      for (uint32_t k = 0; k < P; ++k) out.outputs[k] = {Region{0, r.bytes}};
      out.input_bytes = r.bytes;
      out.bus_factor = 1.0;
      break;
    }
    case Kind::alltoall: {
      const uint64_t piece = r.bytes / P;
      const uint32_t vp = static_cast<uint32_t>(div_up(piece, VB));
      const uint32_t outbase = vp * P;
      check_fits(2ULL * vp * P, r);
      x.eng.set_scratch_base(2 * vp * P);
      for (uint32_t k = 0; k < P; ++k) x.eng.copy(x.chip(k), 0, outbase + k * vp, k * vp, vp);  // own block
      for (uint32_t k = 1; k < P; ++k)
        for (uint32_t s = 0; s < P; ++s) {
          uint32_t d = (s + k) % P;  // block d of rank s goes to rank d, lands in its slot s
          x.eng.send(x.route(s, d), d * vp, {Engine::Chunk{outbase + s * vp, vp}}, vp, {});
        }
      for (uint32_t k = 0; k < P; ++k) {
        for (uint32_t s = 0; s < P; ++s) out.inputs[k].push_back(Region{s * vp, piece});
        for (uint32_t s = 0; s < P; ++s) out.outputs[k].push_back(Region{outbase + s * vp, piece});
      }
      out.input_bytes = r.bytes;
      out.bus_factor = static_cast<double>(P - 1) / P;
      break;
    }
    case Kind::p2p: {
      const uint32_t V = static_cast<uint32_t>(std::min<uint64_t>(div_up(r.bytes, VB), tsp::kVectors + 1ULL));
      check_fits(V, r);
      x.eng.set_scratch_base(V);
      const uint32_t src = x.chip(r.root), dst = x.chip(r.peer);
      std::vector<Route> routes = r.routing == Routing::minimal
                                      ? std::vector<Route>{x.router.minimal(src, dst)}
                                      : x.router.candidates(src, dst, std::max<uint32_t>(1, r.max_paths));
      std::vector<uint32_t> share;
      if (r.routing == Routing::spread) {  // equal shares over every candidate
        for (size_t i = 0; i < routes.size(); ++i)
          share.push_back(static_cast<uint32_t>(V * (i + 1) / routes.size() - V * i / routes.size()));
      } else {
        share = x.router.split(routes, V);
      }
      uint32_t off = 0;
      for (size_t i = 0; i < routes.size(); ++i) {
        if (!share[i]) continue;
        x.max_hops = std::max<uint32_t>(x.max_hops, static_cast<uint32_t>(routes[i].hops.size()));
        x.eng.send(routes[i], off, {Engine::Chunk{off, share[i]}}, share[i], {});
        off += share[i];
        ++out.paths;
      }
      out.inputs[r.root] = {Region{0, r.bytes}};
      out.outputs[r.peer] = {Region{0, r.bytes}};
      out.input_bytes = r.bytes;
      out.bus_factor = 1.0;
      break;
    }
  }
  out.programs = x.eng.programs();
  out.predicted_ps = x.eng.completion_ps();
  out.max_hops = x.max_hops;
  out.bursts = x.eng.bursts();
  out.forwarded_vectors = x.eng.forwarded_vectors();
  out.scratch_vectors = x.eng.scratch_peak();
  return out;
}

}  // namespace fabricvp::sched
