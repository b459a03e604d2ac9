// SiP-Ring wavelengths (seed 003 §3.1, §4.1, Appendix A.1): N GPUs on a ring
// of two fibers (clockwise: GPU i to i + 1, counter-clockwise: i to i - 1),
// W wavelengths of 25 Gbit/s per GPU. A lightpath carries one wavelength from
// a GPU's transmitter along the fiber to a GPU at most `reach` hops away (the
// power budget of §4.4), occupying every segment between them; micro-rings
// let a wavelength be reused on segments that do not overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabricvp::optical {

struct RingSpec {
  uint32_t gpus = 0;
  uint32_t wavelengths = 0;  ///< W per GPU and per fiber
  uint32_t reach = 16;       ///< furthest peer, in hops
};

struct Lightpath {
  uint32_t src = 0, dst = 0;
  bool clockwise = true;  ///< fiber: src -> src + 1 -> ... -> dst, else src -> src - 1 -> ... -> dst
  uint32_t wavelength = 0;
};

/// Hops from src to dst along the fiber (1..gpus - 1).
uint32_t ring_hops(const RingSpec& ring, uint32_t src, uint32_t dst, bool clockwise);

/// Every violation of the ring's rules (empty: legal): GPUs and wavelength in
/// range, no lightpath to itself or beyond the reach, no fiber segment
/// carrying a wavelength twice, no GPU sending or receiving on one wavelength
/// to or from more than one peer.
std::vector<std::string> check_ring(const RingSpec& ring, const std::vector<Lightpath>& paths);

}  // namespace fabricvp::optical
