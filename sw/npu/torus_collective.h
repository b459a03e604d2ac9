// Hierarchical all-reduce on a local x vertical x horizontal torus (seed 001
// §II-C/D, Fig 3a): the topology's rings, the phases of the enhanced
// (4-phase) and baseline (3-phase) algorithms, the element spans each ring
// step moves, and a host reference that adds in exactly the same order.
//
// Rings. Dimension d of size n has `rings[d]` unidirectional rings; ring q
// runs in the + direction when q is even and in the - direction when q is
// odd, on physical link `q / 2` between each neighbour pair, so a
// bidirectional ring is two unidirectional rings on one full-duplex link.
//
// Steps. A phase on dimension d splits its span into one part per ring and
// each part into n segments (split on `align`-element boundaries). Member at
// ring position p, reduce-scatter step t (0..n-2): sends segment (p - t) mod n,
// receives segment (p - t - 1) mod n and adds it to its own; it ends owning
// segment (p + 1) mod n. All-gather step s: sends (p + 1 - s) mod n, receives
// and stores (p - s) mod n. An all-reduce is the reduce-scatter followed by the
// all-gather; message step t of a ring is received at step t.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fabricvp::npu {

/// Dimensions of the hierarchical torus, in the order the paper names them.
enum Dim : uint32_t { kLocal = 0, kVertical = 1, kHorizontal = 2 };
const char* dim_name(uint32_t d);

struct TorusShape {
  std::array<uint32_t, 3> size{4, 4, 4};   ///< NPUs per ring: local, vertical, horizontal
  std::array<uint32_t, 3> rings{2, 4, 4};  ///< unidirectional rings per dimension
  uint32_t npus() const { return size[0] * size[1] * size[2]; }
  uint32_t id(std::array<uint32_t, 3> c) const { return c[0] + size[0] * (c[1] + size[1] * c[2]); }
  std::array<uint32_t, 3> coord(uint32_t id) const {
    return {id % size[0], (id / size[0]) % size[1], id / (size[0] * size[1])};
  }
  /// Physical links between each neighbour pair of dimension d.
  uint32_t links_per_pair(uint32_t d) const { return size[d] < 2 ? 0 : (rings[d] + 1) / 2; }
  /// The NPU `delta` positions away from `npu` along dimension d.
  uint32_t step(uint32_t npu, uint32_t d, int delta) const;
};

/// A list of element ranges [first, second), taken in order.
struct Span {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t elems() const;
  /// Elements [from, to) of the concatenation.
  Span sub(uint64_t from, uint64_t to) const;
};

/// Part i of k of `s`, split on multiples of `align` elements of the
/// concatenation (balanced: the first parts get one align unit more).
Span split(const Span& s, uint32_t k, uint32_t i, uint32_t align);

enum class PhaseKind : uint8_t { reduce_scatter, all_gather, all_reduce };
const char* phase_kind_name(PhaseKind k);

struct Phase {
  PhaseKind kind;
  uint32_t dim;
};

/// Algorithm "enhanced": RS local, AR vertical, AR horizontal, AG local.
/// "baseline": AR local, AR vertical, AR horizontal.
std::vector<Phase> allreduce_phases(const std::string& algorithm);

/// One unidirectional ring through `npu` in dimension d: its position and the
/// NPUs before and after it.
struct RingPos {
  uint32_t n = 1, pos = 0, next = 0, prev = 0;
};
RingPos ring_pos(const TorusShape& t, uint32_t npu, uint32_t d, uint32_t q);

/// Message steps of a phase on a ring of n members.
uint32_t phase_steps(PhaseKind k, uint32_t n);

/// What step t of a phase does at ring position p (n members).
struct StepPlan {
  bool reduce = false;        ///< receive adds (reduce-scatter) or stores (all-gather)
  uint32_t recv_segment = 0;  ///< segment received at this step
  bool forward = false;       ///< the received (reduced) segment is sent on as step t + 1
};
StepPlan step_plan(PhaseKind k, uint32_t n, uint32_t p, uint32_t t);
/// Segment a member sends from its own data at step 0.
uint32_t first_send_segment(PhaseKind k, uint32_t n, uint32_t p);

/// Span of each phase of one chunk at one NPU: spans[i] is the data phase i
/// works on (an all-gather's full span; a reduce-scatter's input).
std::vector<Span> phase_spans(const TorusShape& t, const std::vector<Phase>& phases, uint32_t npu, const Span& chunk,
                              uint32_t align);

/// Segment `seg` of ring q's part of `span` (ring of n members, K rings).
Span segment(const Span& span, uint32_t K, uint32_t q, uint32_t n, uint32_t seg, uint32_t align);

/// Reference: the all-reduce of one chunk computed on the host by running the
/// same ring steps on plain arrays, with `add(acc, x, bytes)` meaning
/// acc = acc + x element-wise (the running sum is the incoming operand).
/// `inputs[npu]` holds the chunk's elements [chunk_first, chunk_first + elems)
/// of that NPU; afterwards every inputs[npu] holds that NPU's result.
void reference_chunk(const TorusShape& t, const std::vector<Phase>& phases, uint32_t align, uint64_t chunk_first,
                     uint64_t elems, uint32_t esize, std::vector<std::vector<uint8_t>>& inputs,
                     const std::function<void(uint8_t*, const uint8_t*, uint64_t)>& add);

}  // namespace fabricvp::npu
