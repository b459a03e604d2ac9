#include "sw/optical/ring.h"

#include <fmt/format.h>

#include <map>
#include <utility>

namespace fabricvp::optical {

uint32_t ring_hops(const RingSpec& ring, uint32_t src, uint32_t dst, bool clockwise) {
  const uint32_t n = ring.gpus;
  return clockwise ? (dst + n - src) % n : (src + n - dst) % n;
}

std::vector<std::string> check_ring(const RingSpec& ring, const std::vector<Lightpath>& paths) {
  std::vector<std::string> bad;
  const uint32_t n = ring.gpus;
  // (fiber, wavelength, segment) -> the path using it; a segment is named by the GPU it leaves
  std::map<std::tuple<bool, uint32_t, uint32_t>, size_t> segment;
  std::map<std::pair<uint32_t, uint32_t>, size_t> sends, receives;  // (GPU, wavelength) -> path
  auto name = [&](size_t p) {
    const Lightpath& l = paths[p];
    return fmt::format("lightpath {} (GPU {} -> {} {}, wavelength {})", p, l.src, l.dst,
                       l.clockwise ? "clockwise" : "counter-clockwise", l.wavelength);
  };
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
    const uint32_t hops = ring_hops(ring, l.src, l.dst, l.clockwise);
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
  }
  return bad;
}

}  // namespace fabricvp::optical
