#include "sw/optical/ring.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>

namespace fabricvp::optical {

std::vector<std::string> check_ring(const RingSpec& ring, const std::vector<Lightpath>& paths) {
  std::vector<std::string> bad;
  const uint32_t n = ring.gpus;
  // (fiber, wavelength, segment) -> the path using it; a segment is named by the GPU it leaves
  std::map<std::tuple<bool, uint32_t, uint32_t>, size_t> segment;
  std::map<std::pair<uint32_t, uint32_t>, size_t> sends, receives;  // (GPU, wavelength) -> path
  std::map<uint32_t, std::set<uint32_t>> peers_out, peers_in;       // GPU -> the GPUs it sends to / hears from
  auto name = [&](size_t p) { return describe(paths[p], p); };
  for (size_t p = 0; p < paths.size(); ++p) {
    const Lightpath& l = paths[p];
    if (l.src >= n || l.dst >= n) {
      bad.push_back(fmt::format("{}: outside the {} GPUs", name(p), n));
      continue;
    }
    if (l.wavelength >= ring.wavelengths) {
      bad.push_back(fmt::format("{}: the ring has {} wavelengths", name(p), ring.wavelengths));
      continue;
    }
    if (l.src == l.dst) {
      bad.push_back(fmt::format("{}: to itself", name(p)));
      continue;
    }
    const uint32_t hops = ring_hops(n, l.src, l.dst, l.clockwise);
    if (hops > ring.reach) bad.push_back(fmt::format("{}: {} hops, beyond the reach of {}", name(p), hops, ring.reach));
    for (uint32_t h = 0, g = l.src; h < hops; ++h, g = l.clockwise ? (g + 1) % n : (g + n - 1) % n) {
      auto [it, fresh] = segment.emplace(std::make_tuple(l.clockwise, l.wavelength, g), p);
      if (!fresh)
        bad.push_back(fmt::format("{}: the segment leaving GPU {} already carries this wavelength ({})", name(p), g,
                                  name(it->second)));
    }
    if (auto [it, fresh] = sends.emplace(std::make_pair(l.src, l.wavelength), p); !fresh)
      bad.push_back(fmt::format("{}: GPU {} already sends on this wavelength ({})", name(p), l.src, name(it->second)));
    if (auto [it, fresh] = receives.emplace(std::make_pair(l.dst, l.wavelength), p); !fresh)
      bad.push_back(
          fmt::format("{}: GPU {} already receives on this wavelength ({})", name(p), l.dst, name(it->second)));
    peers_out[l.src].insert(l.dst);
    peers_in[l.dst].insert(l.src);
  }
  for (const auto& [g, peers] : peers_out)
    if (peers.size() > ring.degree)
      bad.push_back(fmt::format("GPU {} sends to {} peers, more than the degree {}", g, peers.size(), ring.degree));
  for (const auto& [g, peers] : peers_in)
    if (peers.size() > ring.degree)
      bad.push_back(
          fmt::format("GPU {} receives from {} peers, more than the degree {}", g, peers.size(), ring.degree));
  return bad;
}

}  // namespace fabricvp::optical
