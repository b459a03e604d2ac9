#include "sw/optical/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>

namespace fabricvp::optical {

std::vector<std::vector<double>> Placement::traffic() const {
  std::vector<std::vector<double>> t(k, std::vector<double>(k, 0.0));
  for (const Transfer& x : transfers) {
    uint32_t a = subs[x.from].device;
    for (uint32_t r : x.via) {
      t[a][r] += x.bytes;
      a = r;
    }
    const uint32_t b = subs[x.to].device;
    if (a != b) t[a][b] += x.bytes;
  }
  return t;
}

uint32_t Placement::max_peers() const {
  uint32_t most = 0;
  for (const auto& row : traffic()) {
    uint32_t n = 0;
    for (double b : row) n += b > 0;
    most = std::max(most, n);
  }
  return most;
}

namespace {

/// An op with weights is split by output channels (each part holds a share of
/// the weights); one without, by rows of its data.
bool by_channels(const Op& op) { return op.weight_bytes > 0; }

}  // namespace

Placement place(const std::vector<Op>& ops, uint32_t k, uint32_t delta, double tau_us) {
  if (k == 0) throw std::invalid_argument("an MP group needs at least one GPU");
  if (k > 1 && (delta >= k || delta == 0))
    throw std::invalid_argument(fmt::format("delta {} must be between 1 and the MP degree {} - 1", delta, k));
  if (!(tau_us > 0)) throw std::invalid_argument(fmt::format("the computation quantum {} us must be positive", tau_us));
  Placement pl;
  pl.k = k;
  pl.delta = delta;
  pl.tau_us = tau_us;
  // (i) the balanced graph: sub-ops near tau, at most k per op
  for (uint32_t o = 0; o < ops.size(); ++o) {
    const Op& op = ops[o];
    if (!(op.compute_us >= 0) || !(op.out_bytes >= 0) || !(op.weight_bytes >= 0))
      throw std::invalid_argument(
          fmt::format("op {} '{}': sizes and times must be finite and not negative", o, op.name));
    for (uint32_t a : op.inputs)
      if (a >= o) throw std::invalid_argument(fmt::format("op {} '{}': input {} is not an earlier op", o, op.name, a));
    // near tau, at most k, and fine enough that a sub-op gathers from at most
    // delta + 1 parts of any input (more could not sit within delta of it)
    double want = std::round(op.compute_us / tau_us);
    for (uint32_t a : op.inputs) want = std::max(want, std::ceil(double(pl.subs[pl.first_sub[a]].parts) / (delta + 1)));
    // A channel-split op's consumers gather every one of its parts, and a
    // consumer on GPU d reaches producers on d - delta .. d: with its parts on
    // m consecutive GPUs, delta - m + 2 GPUs can hold a consumer. A chain of
    // channel-split ops runs m-wide on distinct GPUs only if m <= that, so
    // below full reach (delta + 1 < k) at most (delta + 2) / 2 parts.
    double most = static_cast<double>(k);
    if (by_channels(op) && delta + 1 < k) most = std::max(1u, (delta + 2) / 2);
    const uint32_t parts = static_cast<uint32_t>(std::clamp(want, 1.0, most));
    pl.first_sub.push_back(static_cast<uint32_t>(pl.subs.size()));
    for (uint32_t j = 0; j < parts; ++j)
      pl.subs.push_back(SubOp{o, j, parts, op.compute_us / parts, op.weight_bytes / parts, 0, 0, 0});
  }
  // producer -> consumer transfers (placement.h: an op with weights is split
  // by output channels and needs its whole input; one without, by rows)
  std::vector<std::vector<uint32_t>> preds(pl.subs.size()), succs(pl.subs.size());
  auto link = [&](uint32_t from, uint32_t to, double bytes) {
    preds[to].push_back(static_cast<uint32_t>(pl.transfers.size()));
    succs[from].push_back(static_cast<uint32_t>(pl.transfers.size()));
    pl.transfers.push_back(Transfer{from, to, bytes, {}});
  };
  for (uint32_t o = 0; o < ops.size(); ++o) {
    const uint32_t po = pl.subs[pl.first_sub[o]].parts;
    for (uint32_t a : ops[o].inputs) {
      const uint32_t pa = pl.subs[pl.first_sub[a]].parts;
      const double out = ops[a].out_bytes;
      for (uint32_t j = 0; j < po; ++j) {
        const uint32_t to = pl.first_sub[o] + j;
        if (by_channels(ops[o])) {  // the whole input: every part of the producer
          for (uint32_t i = 0; i < pa; ++i) link(pl.first_sub[a] + i, to, out / pa);
        } else if (by_channels(ops[a])) {  // rows j of every channel part
          for (uint32_t i = 0; i < pa; ++i) link(pl.first_sub[a] + i, to, out / pa / po);
        } else {  // rows: the parts whose rows overlap
          const double lo = double(j) / po, hi = double(j + 1) / po;
          for (uint32_t i = j * pa / po; i < pa && double(i) / pa < hi; ++i) {
            const double overlap = std::min(hi, double(i + 1) / pa) - std::max(lo, double(i) / pa);
            if (overlap > 1e-12) link(pl.first_sub[a] + i, to, out * overlap);
          }
        }
      }
    }
  }
  // (ii) placement, in topological order (Algorithm 1)
  auto allowed = [k, delta](uint32_t to, uint32_t from) { return (to + k - from) % k <= delta; };
  std::vector<double> avail(k, 0.0);
  std::vector<bool> placed(pl.subs.size(), false);
  auto ready = [&](uint32_t s) {
    double t = 0;
    for (uint32_t x : preds[s]) t = std::max(t, pl.subs[pl.transfers[x].from].end_us);
    return t;
  };
  auto schedule = [&](uint32_t s, uint32_t d) {
    SubOp& so = pl.subs[s];
    so.device = d;
    so.start_us = std::max(ready(s), avail[d]);
    so.end_us = so.start_us + so.compute_us;
    avail[d] = std::max(avail[d], so.end_us);
    placed[s] = true;
  };
  for (uint32_t s = 0; s < pl.subs.size(); ++s) {
    auto candidates = [&] {
      std::vector<uint32_t> c;
      for (uint32_t d = 0; d < k; ++d) {
        bool ok = true;
        for (uint32_t x : preds[s]) ok = ok && allowed(d, pl.subs[pl.transfers[x].from].device);
        if (ok) c.push_back(d);
      }
      return c;
    };
    std::vector<uint32_t> cand = candidates();
    if (cand.empty()) {
      // Relocate: for each GPU x could go to, move every producer out of
      // reach to a GPU within delta before it that the producer's own
      // producers and its other placed consumers allow (the earliest
      // available); the target needing the fewest moves wins, then the
      // earliest available.
      struct Plan {
        uint32_t target = 0;
        std::vector<std::pair<uint32_t, uint32_t>> moves;  // (sub-op, GPU)
      };
      std::optional<Plan> chosen;
      for (uint32_t target = 0; target < k; ++target) {
        Plan plan{target, {}};
        std::vector<uint32_t> dev(preds[s].size());
        bool ok = true;
        for (size_t i = 0; i < preds[s].size() && ok; ++i) {
          const uint32_t p = pl.transfers[preds[s][i]].from;
          if (allowed(target, pl.subs[p].device)) continue;
          int64_t best = -1;
          for (uint32_t q = 0; q < k; ++q) {
            if (!allowed(target, q)) continue;
            bool fits = true;
            for (uint32_t y : preds[p]) fits = fits && allowed(q, pl.subs[pl.transfers[y].from].device);
            for (uint32_t y : succs[p]) {
              const uint32_t c = pl.transfers[y].to;
              if (c != s && placed[c]) fits = fits && allowed(pl.subs[c].device, q);
            }
            if (fits && (best < 0 || avail[q] < avail[best])) best = q;
          }
          if (best < 0)
            ok = false;
          else
            plan.moves.emplace_back(p, static_cast<uint32_t>(best));
        }
        if (!ok) continue;
        // moved producers that feed one another must still be within reach
        auto device_of = [&](uint32_t sub) {
          for (const auto& [m, q] : plan.moves)
            if (m == sub) return q;
          return pl.subs[sub].device;
        };
        for (const auto& [m, q] : plan.moves) {
          for (uint32_t y : preds[m]) ok = ok && allowed(q, device_of(pl.transfers[y].from));
          for (uint32_t y : succs[m]) {
            const uint32_t c = pl.transfers[y].to;
            if (c != s && placed[c]) ok = ok && allowed(device_of(c), q);
          }
        }
        if (!ok) continue;
        if (!chosen || plan.moves.size() < chosen->moves.size() ||
            (plan.moves.size() == chosen->moves.size() && avail[target] < avail[chosen->target]))
          chosen = std::move(plan);
      }
      if (chosen) {
        for (const auto& [m, q] : chosen->moves) {
          schedule(m, q);
          ++pl.relocations;
          // its edges are within reach now (checked above): no relay
          for (uint32_t y : preds[m]) pl.transfers[y].via.clear();
          for (uint32_t y : succs[m]) pl.transfers[y].via.clear();
        }
        cand = candidates();
        if (cand.empty()) throw std::logic_error("placement: relocation left no candidate");
      } else {
        // No relocation fits: x goes within reach of its largest producer,
        // and the others' data is relayed (below).
        uint32_t big = pl.transfers[preds[s][0]].from;
        double most = -1;
        for (uint32_t x : preds[s])
          if (pl.transfers[x].bytes > most) most = pl.transfers[x].bytes, big = pl.transfers[x].from;
        for (uint32_t h = 0; h <= delta; ++h) cand.push_back((pl.subs[big].device + h) % k);
      }
    }
    // the candidate where it can start first (its producers' end, the GPU's
    // availability); ties: nearest after its largest producer (0: the same
    // GPU, so chains do not drift away from their skip connections), then
    // the lowest index
    uint32_t anchor = 0;
    double most = -1;
    for (uint32_t x : preds[s])
      if (pl.transfers[x].bytes > most) most = pl.transfers[x].bytes, anchor = pl.subs[pl.transfers[x].from].device;
    const double r = ready(s);
    uint32_t best = cand[0];
    for (uint32_t d : cand) {
      const double sd = std::max(r, avail[d]), sb = std::max(r, avail[best]);
      if (sd < sb || (sd == sb && (d + k - anchor) % k < (best + k - anchor) % k)) best = d;
    }
    schedule(s, best);
    // Producers out of reach send through relay GPUs, delta ahead each hop.
    for (uint32_t x : preds[s]) {
      Transfer& t = pl.transfers[x];
      uint32_t at = pl.subs[t.from].device;
      while (!allowed(best, at)) {
        at = (at + delta) % k;
        t.via.push_back(at);
        ++pl.relayed_hops;
      }
    }
  }
  for (const SubOp& so : pl.subs) pl.makespan_us = std::max(pl.makespan_us, so.end_us);
  return pl;
}

std::vector<Placement::DeviceMemory> Placement::memory(const std::vector<Op>& ops) const {
  std::vector<DeviceMemory> out(k);
  for (const SubOp& s : subs) {
    out.at(s.device).state += 8.0 * s.weight_bytes;
    out.at(s.device).activations += ops.at(s.op).out_bytes / s.parts;
  }
  return out;
}

}  // namespace fabricvp::optical
