// SiP-Ring's wavelength ILP (seed 003 Appendix A.1), solved by GLPK.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "sw/optical/mip.h"
#include "sw/optical/ring.h"

namespace fabricvp::optical {

std::vector<Lightpath> ring_ilp(const RingSpec& ring, const std::vector<Demand>& tm, double time_limit_s) {
  const uint32_t n = ring.gpus, w = ring.wavelengths;
  if (n < 2 || w == 0) throw std::invalid_argument("a ring needs at least 2 GPUs and one wavelength");
  if (!(time_limit_s > 0))
    throw std::invalid_argument(fmt::format("ILP time limit {} s: must be positive", time_limit_s));
  const auto m = merge_demands(n, tm);
  std::vector<std::set<uint32_t>> out_peers(n), in_peers(n);
  double top = 0;
  for (const auto& [pair, bytes] : m) {
    out_peers[pair.first].insert(pair.second);
    in_peers[pair.second].insert(pair.first);
    top = std::max(top, bytes);
  }
  for (uint32_t g = 0; g < n; ++g)
    if (out_peers[g].size() > ring.degree || in_peers[g].size() > ring.degree)
      throw std::invalid_argument(fmt::format("GPU {} sends to {} and receives from {} GPUs: more than the degree {}",
                                              g, out_peers[g].size(), in_peers[g].size(), ring.degree));
  if (m.empty()) return {};
  // Candidate lightpaths: every demand, every fiber within the reach, every wavelength.
  struct Candidate {
    Lightpath path;
    size_t demand;
  };
  std::vector<Candidate> cand;
  size_t d = 0;
  for (const auto& [pair, bytes] : m) {
    bool any = false;
    for (bool cw : {true, false}) {
      if (ring_hops(n, pair.first, pair.second, cw) > ring.reach) continue;
      any = true;
      for (uint32_t k = 0; k < w; ++k) cand.push_back({Lightpath{pair.first, pair.second, cw, k}, d});
    }
    if (!any)
      throw std::invalid_argument(
          fmt::format("GPU {} -> GPU {}: beyond the reach of {} on both fibers", pair.first, pair.second, ring.reach));
    ++d;
  }
  Mip mip;
  const int z = mip.continuous(1.0);  // lightpaths per byte x the largest demand
  const int first = mip.binaries(static_cast<int>(cand.size()));
  std::vector<std::vector<std::pair<int, double>>> per_demand(m.size());
  d = 0;
  for (const auto& [pair, bytes] : m) per_demand[d++].emplace_back(z, -bytes / top);
  // (fiber, segment, wavelength), (GPU, wavelength) sending and receiving
  std::vector<std::vector<std::pair<int, double>>> segment(2 * static_cast<size_t>(n) * w),
      sends(static_cast<size_t>(n) * w), receives(static_cast<size_t>(n) * w);
  for (size_t c = 0; c < cand.size(); ++c) {
    const int col = first + static_cast<int>(c);
    const Lightpath& l = cand[c].path;
    per_demand[cand[c].demand].emplace_back(col, 1.0);
    const uint32_t hops = ring_hops(n, l.src, l.dst, l.clockwise);
    for (uint32_t h = 0, g = l.src; h < hops; ++h, g = l.clockwise ? (g + 1) % n : (g + n - 1) % n)
      segment[((l.clockwise ? 0 : size_t(n)) + g) * w + l.wavelength].emplace_back(col, 1.0);
    sends[size_t(l.src) * w + l.wavelength].emplace_back(col, 1.0);
    receives[size_t(l.dst) * w + l.wavelength].emplace_back(col, 1.0);
  }
  for (const auto& terms : per_demand) mip.row(GLP_LO, 0.0, 0.0, terms);
  // Wavelengths are interchangeable: order them by the segments they light
  // (symmetry breaking; any allocation can be renumbered to satisfy it).
  std::vector<std::vector<std::pair<int, double>>> lit_on(w);
  for (size_t c = 0; c < cand.size(); ++c) {
    const Lightpath& l = cand[c].path;
    lit_on[l.wavelength].emplace_back(first + static_cast<int>(c),
                                      static_cast<double>(ring_hops(n, l.src, l.dst, l.clockwise)));
  }
  for (uint32_t k = 0; k + 1 < w; ++k) {
    std::vector<std::pair<int, double>> terms = lit_on[k];
    for (const auto& [c, v] : lit_on[k + 1]) terms.emplace_back(c, -v);
    mip.row(GLP_LO, 0.0, 0.0, terms);
  }
  for (const auto* rows : {&segment, &sends, &receives})
    for (const auto& terms : *rows)
      if (terms.size() > 1) mip.row(GLP_UP, 0.0, 1.0, terms);
  std::string why;
  if (!mip.solve(time_limit_s, why))
    throw std::runtime_error(
        fmt::format("GLPK: no optimal wavelength allocation for {} GPUs and {} wavelengths within {} s ({})", n, w,
                    time_limit_s, why));
  std::vector<Lightpath> paths;
  for (size_t c = 0; c < cand.size(); ++c)
    if (mip.value(first + static_cast<int>(c)) > 0.5) paths.push_back(cand[c].path);
  return paths;
}

}  // namespace fabricvp::optical
