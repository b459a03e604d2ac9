// What a SiP-ML optical fabric is configured with (seed 003 §3.1, Appendix A):
// the circuits of SiP-OCS's switches and the lightpaths of SiP-Ring. The
// control plane (sw/optical) computes them from a traffic matrix, checks them
// independently and hands them to the fabric models (models/optical/fabric.h),
// which refuse an illegal one themselves. SystemC-free.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fabricvp::optical {

/// Bytes GPU src sends GPU dst (a traffic matrix is a list of them; a pair may repeat, its bytes add up).
struct Demand {
  uint32_t src = 0, dst = 0;
  double bytes = 0;
};

/// SiP-OCS: Q optical circuit switches of N ports, GPU i on port i of every
/// switch. Switch k's configuration is a partial permutation (GPU i's
/// transmitter to GPU j's receiver), so a GPU has at most Q circuits out and Q
/// in (degree D = Q), each carrying B / Q.
struct OcsConfig {
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t gpus = 0;
  /// out[k][i]: the GPU whose receiver switch k connects GPU i's transmitter to (kNone: no circuit)
  std::vector<std::vector<uint32_t>> out;

  uint32_t switches() const { return static_cast<uint32_t>(out.size()); }
  /// circuits from GPU i to GPU j over all switches
  uint32_t circuits(uint32_t i, uint32_t j) const {
    uint32_t n = 0;
    for (const auto& sw : out) n += i < sw.size() && sw[i] == j;
    return n;
  }
};

/// SiP-Ring: N GPUs on a ring of two fibers (clockwise: GPU i to i + 1,
/// counter-clockwise: i to i - 1), W wavelengths per GPU, each a lightpath of
/// one wavelength's rate (25 Gbit/s) from a GPU's transmitter along a fiber to
/// a GPU at most `reach` hops away (the power budget of §4.4), occupying every
/// segment between them; micro-rings let a wavelength be reused on segments
/// that do not overlap. A GPU talks to at most `degree` peers each way.
struct RingSpec {
  uint32_t gpus = 0;
  uint32_t wavelengths = 0;  ///< W per GPU and per fiber
  uint32_t reach = 16;       ///< furthest peer, in hops
  uint32_t degree = 16;      ///< most peers a GPU sends to (and receives from)
};

struct Lightpath {
  uint32_t src = 0, dst = 0;
  bool clockwise = true;  ///< fiber: src -> src + 1 -> ... -> dst, else src -> src - 1 -> ... -> dst
  uint32_t wavelength = 0;
};

/// "lightpath 3 (GPU 1 -> 5 clockwise, wavelength 0)" (error messages).
inline std::string describe(const Lightpath& l, size_t index) {
  return fmt::format("lightpath {} (GPU {} -> {} {}, wavelength {})", index, l.src, l.dst,
                     l.clockwise ? "clockwise" : "counter-clockwise", l.wavelength);
}

/// Hops from src to dst along the fiber (1..gpus - 1 for src != dst).
inline uint32_t ring_hops(uint32_t gpus, uint32_t src, uint32_t dst, bool clockwise) {
  return clockwise ? (dst + gpus - src) % gpus : (src + gpus - dst) % gpus;
}

}  // namespace fabricvp::optical
