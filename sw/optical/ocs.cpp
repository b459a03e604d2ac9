#include "sw/optical/ocs.h"
#include "sw/optical/mip.h"
#include "sw/optical/relabel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace fabricvp::optical {

namespace {

constexpr uint32_t kNone = OcsConfig::kNone;

/// Throws unless every GPU sends to and receives from at most q GPUs.
void check_degree(uint32_t gpus, uint32_t q, const std::map<std::pair<uint32_t, uint32_t>, double>& m) {
  std::vector<uint32_t> peers_out(gpus, 0), peers_in(gpus, 0);
  for (const auto& [pair, b] : m) {
    ++peers_out[pair.first];
    ++peers_in[pair.second];
  }
  for (uint32_t g = 0; g < gpus; ++g)
    if (peers_out[g] > q || peers_in[g] > q)
      throw std::invalid_argument(
          fmt::format("GPU {} sends to {} and receives from {} GPUs: more than the {} circuits a GPU has on {} "
                      "switches (degree)",
                      g, peers_out[g], peers_in[g], q, q));
}

/// Splits a bipartite multigraph of maximum degree <= q (count[p] circuits for
/// pair p) into q matchings: returns out[k][i] per switch. With `keep` (a
/// configuration of q switches for the same GPUs), a pair's circuits first
/// take the switches they had there, as many as it keeps (later swaps along
/// alternating paths may still move some).
std::vector<std::vector<uint32_t>> colour(uint32_t gpus, uint32_t q,
                                          const std::vector<std::pair<std::pair<uint32_t, uint32_t>, uint32_t>>& count,
                                          const OcsConfig* keep) {
  // at_tx[i][k]: receiver of GPU i's circuit on switch k; at_rx[j][k]: its transmitter
  std::vector<std::vector<uint32_t>> at_tx(gpus, std::vector<uint32_t>(q, kNone));
  std::vector<std::vector<uint32_t>> at_rx(gpus, std::vector<uint32_t>(q, kNone));
  std::vector<uint32_t> placed(count.size(), 0);
  if (keep)
    for (size_t p = 0; p < count.size(); ++p) {
      const auto [i, j] = count[p].first;
      for (uint32_t k = 0; k < q && placed[p] < count[p].second; ++k)
        if (keep->out[k][i] == j) {  // a partial permutation: free at both ends
          at_tx[i][k] = j;
          at_rx[j][k] = i;
          ++placed[p];
        }
    }
  auto free_at = [q](const std::vector<uint32_t>& slots) {
    for (uint32_t k = 0; k < q; ++k)
      if (slots[k] == kNone) return k;
    return kNone;
  };
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> path;  // (tx, rx, switch)
  for (size_t p = 0; p < count.size(); ++p) {
    const auto [i, j] = count[p].first;
    for (uint32_t c = placed[p]; c < count[p].second; ++c) {
      const uint32_t a = free_at(at_tx[i]), b = free_at(at_rx[j]);
      if (a == kNone || b == kNone) throw std::logic_error("OCS colouring: a GPU has more than Q circuits");
      if (at_rx[j][a] != kNone) {
        // a is taken at receiver j: swap a and b along the path from j that
        // alternates a (receiver to transmitter) and b (transmitter to receiver);
        // it cannot reach transmitter i (bipartite, a free at i), so afterwards a is free at both.
        path.clear();
        uint32_t rx = j;
        for (;;) {
          const uint32_t tx = at_rx[rx][a];
          if (tx == kNone) break;
          path.emplace_back(tx, rx, a);
          const uint32_t next = at_tx[tx][b];
          if (next == kNone) break;
          path.emplace_back(tx, next, b);
          rx = next;
        }
        for (const auto& [t, r, k] : path) at_tx[t][k] = at_rx[r][k] = kNone;
        for (const auto& [t, r, k] : path) {
          const uint32_t swapped = k == a ? b : a;
          at_tx[t][swapped] = r;
          at_rx[r][swapped] = t;
        }
      }
      at_tx[i][a] = j;
      at_rx[j][a] = i;
    }
  }
  std::vector<std::vector<uint32_t>> out(q, std::vector<uint32_t>(gpus, kNone));
  for (uint32_t i = 0; i < gpus; ++i)
    for (uint32_t k = 0; k < q; ++k) out[k][i] = at_tx[i][k];
  return out;
}

/// The switches of `out` relabelled (relabel.h) to put as many circuits as possible where `keep` has them.
std::vector<std::vector<uint32_t>> relabel(std::vector<std::vector<uint32_t>> out, const OcsConfig& keep) {
  const uint32_t q = static_cast<uint32_t>(out.size());
  std::vector<std::vector<int64_t>> common(q, std::vector<int64_t>(q, 0));
  for (uint32_t k = 0; k < q; ++k)
    for (uint32_t m = 0; m < q; ++m)
      for (size_t i = 0; i < out[m].size(); ++i) common[k][m] += out[m][i] != kNone && out[m][i] == keep.out[k][i];
  const std::vector<uint32_t> to = keep_most(common);
  std::vector<std::vector<uint32_t>> moved(q);
  for (uint32_t m = 0; m < q; ++m) moved[to[m]] = std::move(out[m]);
  return moved;
}

}  // namespace

std::map<std::pair<uint32_t, uint32_t>, double> merge_demands(uint32_t gpus, const std::vector<Demand>& tm) {
  std::map<std::pair<uint32_t, uint32_t>, double> m;
  for (size_t n = 0; n < tm.size(); ++n) {
    const Demand& d = tm[n];
    if (d.src >= gpus || d.dst >= gpus)
      throw std::invalid_argument(fmt::format("demand {}: GPU {} -> {} is outside the {} GPUs", n, d.src, d.dst, gpus));
    if (d.src == d.dst) throw std::invalid_argument(fmt::format("demand {}: GPU {} sends to itself", n, d.src));
    if (!(d.bytes > 0) || !(d.bytes <= 1e18))
      throw std::invalid_argument(fmt::format(
          "demand {}: GPU {} -> {}: {} bytes (must be positive and finite, at most 1e18)", n, d.src, d.dst, d.bytes));
    m[{d.src, d.dst}] += d.bytes;
  }
  return m;
}

std::vector<std::string> check_ocs(const OcsConfig& config, const std::vector<Demand>& tm) {
  std::vector<std::string> bad;
  for (uint32_t k = 0; k < config.switches(); ++k) {
    const auto& sw = config.out[k];
    if (sw.size() != config.gpus) {
      bad.push_back(fmt::format("switch {}: {} ports configured, the switch has {}", k, sw.size(), config.gpus));
      continue;
    }
    std::vector<uint32_t> tx_of(config.gpus, kNone);
    for (uint32_t i = 0; i < config.gpus; ++i) {
      const uint32_t j = sw[i];
      if (j == kNone) continue;
      if (j >= config.gpus) {
        bad.push_back(fmt::format("switch {}: GPU {} connected to GPU {}, outside the {} GPUs", k, i, j, config.gpus));
      } else if (j == i) {
        bad.push_back(fmt::format("switch {}: GPU {} connected to itself", k, i));
      } else if (tx_of[j] != kNone) {
        bad.push_back(fmt::format("switch {}: the receiver of GPU {} has two circuits (from GPU {} and GPU {})", k, j,
                                  tx_of[j], i));
      } else {
        tx_of[j] = i;
      }
    }
  }
  for (const Demand& d : tm)
    if (d.src < config.gpus && d.dst < config.gpus && d.bytes > 0 && config.circuits(d.src, d.dst) == 0)
      bad.push_back(fmt::format("GPU {} -> {} ({} bytes) has no circuit", d.src, d.dst, d.bytes));
  return bad;
}

double min_circuits_per_byte(const OcsConfig& config, const std::vector<Demand>& tm) {
  const auto m = merge_demands(config.gpus, tm);
  double best = m.empty() ? 0.0 : INFINITY;
  for (const auto& [pair, bytes] : m) best = std::min(best, config.circuits(pair.first, pair.second) / bytes);
  return best;
}

OcsConfig ocs_one_shot(uint32_t gpus, uint32_t q, const std::vector<Demand>& tm, const OcsConfig* keep) {
  if (keep && (keep->gpus != gpus || keep->switches() != q))
    throw std::invalid_argument(
        fmt::format("a configuration of {} switches for {} GPUs to keep circuits of, for {} "
                    "switches and {} GPUs",
                    keep->switches(), keep->gpus, q, gpus));
  if (q == 0) throw std::invalid_argument("an OCS fabric needs at least one switch");
  const auto m = merge_demands(gpus, tm);
  check_degree(gpus, q, m);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::vector<double> bytes;
  for (const auto& [pair, b] : m) {
    pairs.push_back(pair);
    bytes.push_back(b);
  }

  // Circuits pair p needs for a target of m0 circuits per bytes0 bytes: the
  // least n with n / bytes[p] >= m0 / bytes0 (at least 1).
  auto need = [&](size_t p, uint32_t m0, double bytes0) {
    // decided with the candidates' own cross-multiplication, so the rounding agrees with their order
    double n = std::min(std::ceil(m0 * bytes[p] / bytes0), static_cast<double>(q) + 1);
    while (n <= q && n * bytes0 < m0 * bytes[p]) n += 1;
    while (n > 1 && (n - 1) * bytes0 >= m0 * bytes[p]) n -= 1;
    return static_cast<uint32_t>(std::max(1.0, n));
  };
  auto feasible = [&](uint32_t m0, double bytes0, std::vector<uint32_t>* counts) {
    std::vector<uint32_t> out(gpus, 0), in(gpus, 0), c(pairs.size());
    for (size_t p = 0; p < pairs.size(); ++p) {
      c[p] = need(p, m0, bytes0);
      if ((out[pairs[p].first] += c[p]) > q || (in[pairs[p].second] += c[p]) > q) return false;
    }
    if (counts) *counts = std::move(c);
    return true;
  };
  // candidate targets m / bytes[p], ascending; the feasible ones are a prefix
  std::vector<std::pair<uint32_t, size_t>> cand;  // (m, pair)
  for (size_t p = 0; p < pairs.size(); ++p)
    for (uint32_t k = 1; k <= q; ++k) cand.emplace_back(k, p);
  std::sort(cand.begin(), cand.end(), [&](const auto& a, const auto& b) {
    return a.first * bytes[b.second] < b.first * bytes[a.second];  // a.m / a.bytes < b.m / b.bytes
  });
  std::vector<uint32_t> counts(pairs.size(), 1);  // the smallest candidate is always feasible (degree checked)
  size_t lo = 0, hi = cand.size();                // cand[lo - 1] feasible (lo = 0: none tried), cand[hi] not
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (feasible(cand[mid].first, bytes[cand[mid].second], nullptr))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo > 0) feasible(cand[lo - 1].first, bytes[cand[lo - 1].second], &counts);

  // Ports left over: one more circuit at a time to the pair with the fewest
  // circuits per byte among those whose two ends have a port free.
  std::vector<uint32_t> out(gpus, 0), in(gpus, 0);
  for (size_t p = 0; p < pairs.size(); ++p) {
    out[pairs[p].first] += counts[p];
    in[pairs[p].second] += counts[p];
  }
  auto rate_greater = [&](size_t a, size_t b) {
    // min-heap on counts / bytes, ties to the lower pair index
    const double ra = counts[a] * bytes[b], rb = counts[b] * bytes[a];
    return ra != rb ? ra > rb : a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(rate_greater)> heap(rate_greater);
  for (size_t p = 0; p < pairs.size(); ++p) heap.push(p);
  while (!heap.empty()) {
    const size_t p = heap.top();
    heap.pop();
    if (out[pairs[p].first] < q && in[pairs[p].second] < q) {
      ++counts[p];
      ++out[pairs[p].first];
      ++in[pairs[p].second];
      heap.push(p);
    }
  }

  std::vector<std::pair<std::pair<uint32_t, uint32_t>, uint32_t>> count;
  for (size_t p = 0; p < pairs.size(); ++p) count.emplace_back(pairs[p], counts[p]);
  OcsConfig config;
  config.gpus = gpus;
  config.out = colour(gpus, q, count, keep);
  if (keep) config.out = relabel(std::move(config.out), *keep);
  return config;
}

OcsConfig ocs_ilp(uint32_t gpus, uint32_t q, const std::vector<Demand>& tm, double time_limit_s) {
  if (q == 0) throw std::invalid_argument("an OCS fabric needs at least one switch");
  if (!(time_limit_s > 0))
    throw std::invalid_argument(fmt::format("ILP time limit {} s: must be positive", time_limit_s));
  const auto m = merge_demands(gpus, tm);
  check_degree(gpus, q, m);
  OcsConfig config;
  config.gpus = gpus;
  config.out.assign(q, std::vector<uint32_t>(gpus, kNone));
  if (m.empty()) return config;
  double top = 0;
  for (const auto& [pair, b] : m) top = std::max(top, b);

  Mip mip;
  // z (circuits per byte x the largest demand), then P[p][k]
  const int pairs = static_cast<int>(m.size());
  const int z = mip.continuous(1.0);
  const int first = mip.binaries(pairs * static_cast<int>(q));
  auto col = [q, first](int p, uint32_t k) { return first + p * static_cast<int>(q) + static_cast<int>(k); };
  // sum_k P[p][k] - z * bytes_p / top >= 0
  std::vector<std::pair<uint32_t, uint32_t>> pair_of;
  int p = 0;
  std::vector<std::vector<std::pair<int, double>>> tx_rows(static_cast<size_t>(gpus) * q),
      rx_rows(static_cast<size_t>(gpus) * q);
  for (const auto& [pair, b] : m) {
    std::vector<std::pair<int, double>> terms{{z, -b / top}};
    for (uint32_t k = 0; k < q; ++k) {
      terms.emplace_back(col(p, k), 1.0);
      tx_rows[static_cast<size_t>(pair.first) * q + k].emplace_back(col(p, k), 1.0);
      rx_rows[static_cast<size_t>(pair.second) * q + k].emplace_back(col(p, k), 1.0);
    }
    mip.row(GLP_LO, 0.0, 0.0, terms);
    pair_of.push_back(pair);
    ++p;
  }
  // each switch a partial permutation
  for (const auto& rows : {&tx_rows, &rx_rows})
    for (const auto& terms : *rows)
      if (terms.size() > 1) mip.row(GLP_UP, 0.0, 1.0, terms);
  std::string why;
  if (!mip.solve(time_limit_s, why))
    throw std::runtime_error(fmt::format(
        "GLPK: no optimal OCS configuration for {} GPUs on {} switches within {} s ({})", gpus, q, time_limit_s, why));
  for (int n = 0; n < pairs; ++n)
    for (uint32_t k = 0; k < q; ++k)
      if (mip.value(col(n, k)) > 0.5) config.out[k][pair_of[n].first] = pair_of[n].second;
  return config;
}

}  // namespace fabricvp::optical
