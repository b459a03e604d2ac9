// Collective algorithms on a hierarchical local x vertical x horizontal torus
// of NPUs (seed 001 §II-C/D, Fig 3a; seed 002's platform), for the endpoint's
// collective service (models/npu/collective.h). SystemC-free.
//
// Rings. Dimension d of size n has `rings[d]` unidirectional rings; ring q
// runs in the + direction when q is even and in the - direction when q is
// odd, on physical link q / 2 between each neighbour pair, so a
// bidirectional ring is two unidirectional rings on one full-duplex link.
// An NPU's AFI ports are numbered dimension by dimension: port(d, q).
//
// Communicators. A communicator is a sub-torus: every NPU along the
// dimensions it spans, the other coordinates fixed (one torus dimension, a
// data-parallel plane, the whole torus). Its members are ranked with the
// first spanned dimension fastest. Members exchange messages with ring
// neighbours only, so no message crosses a member that is not in it.
//
// Algorithms, phase by phase over the spanned dimensions d0, d1, d2 (in the
// communicator's order), each phase on every ring of its dimension, a chunk's
// part per ring, split on multiples of `align` elements:
//   allreduce      enhanced: reduce-scatter d0, all-reduce d1 .., all-gather d0
//                  (one spanned dimension: all-reduce); baseline: all-reduce
//                  on every dimension (seed 001 §II-D)
//   reducescatter  reduce-scatter d0, d1, d2: the buffer's N blocks are split
//                  by the digits of their block number, so member r ends with
//                  block r summed over all members
//   allgather      all-gather d0, d1, d2 on the same digits
//   alltoall       per dimension a ring all-to-all with forwarding: the block
//                  for the member at coordinate s goes there, hop by hop, and
//                  lands in the slot of its origin's coordinate
//   broadcast      per dimension a pipelined chain from the member that holds
//                  the data (first the root) around every ring
// Reduce-scatter step t (0..n-2) at ring position p sends segment (p - t) mod
// n and adds segment (p - t - 1) mod n; all-gather step s sends (p + 1 - s)
// mod n and stores (p - s) mod n; an all-reduce is the one then the other.
//
// Host side: run_reference() executes the same plans on plain arrays (the
// reduction order of the model: what allreduce and reducescatter results are
// checked against), expected() computes allgather, alltoall and broadcast
// results in closed form (independent of the plans).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/core/dtype.h"
#include "models/npu/collective.h"
#include "sw/collectives/common.h"

namespace fabricvp::collectives {

using npu::CollectiveKind;
using npu::Span;

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
  /// AFI port of ring q of dimension d (ports are numbered dimension by dimension).
  uint32_t port(uint32_t d, uint32_t q) const;
  /// AFI ports of every NPU.
  uint32_t ports() const { return rings[0] + rings[1] + rings[2]; }
};

/// One unidirectional ring through `npu` in dimension d: its position and the
/// NPUs before and after it.
struct RingPos {
  uint32_t n = 1, pos = 0, next = 0, prev = 0;
};
RingPos ring_pos(const TorusShape& t, uint32_t npu, uint32_t d, uint32_t q);

/// The NPUs of a sub-torus (see the top of this file).
class Communicator {
 public:
  /// Every NPU along `dims` (distinct, each < 3, in the order the algorithms
  /// take them) through NPU `any`.
  Communicator(const TorusShape& shape, std::vector<uint32_t> dims, uint32_t any);
  const TorusShape& shape() const { return m_shape; }
  const std::vector<uint32_t>& dims() const { return m_dims; }
  uint32_t size() const { return m_size; }
  bool contains(uint32_t npu) const;
  /// Rank of a member (first spanned dimension fastest) and its inverse.
  uint32_t rank_of(uint32_t npu) const;
  uint32_t npu_of(uint32_t rank) const;
  /// Its id: the same at every member and different for every sub-torus.
  uint32_t id() const { return m_id; }
  /// "local+vertical through npu5" style.
  std::string describe() const;

  /// The communicators of `dims` that together hold every NPU once, by lowest member.
  static std::vector<Communicator> partition(const TorusShape& shape, const std::vector<uint32_t>& dims);
  /// Parse "all", or dimension names joined by '+' or ',' ("local", "vertical+horizontal", "l+v").
  static std::vector<uint32_t> parse_dims(const std::string& text);

 private:
  TorusShape m_shape;
  std::vector<uint32_t> m_dims;
  std::array<uint32_t, 3> m_base{};  // the member with spanned coordinates 0
  uint32_t m_size = 1, m_id = 0;
};

/// How the algorithms cut the work.
struct PlanOptions {
  std::string algorithm = "enhanced";  ///< allreduce: enhanced | baseline
  uint64_t chunk_bytes = 16384;        ///< a chunk's working set (rounded down to `align` elements)
  uint32_t align = 64;                 ///< segment boundaries, elements
};

/// The plan of one collective at one member of `comm`. Throws
/// core::ConfigError for sizes the collective cannot have (e.g. a
/// reducescatter whose element count is not a multiple of the members).
std::shared_ptr<const npu::CollectivePlan> make_plan(const Communicator& comm, CollectiveKind kind, core::Dtype dtype,
                                                     uint64_t elems, uint32_t root, const PlanOptions& options,
                                                     uint32_t npu);

/// Execute the plans of every member on host buffers (inputs[rank]: the
/// member's whole buffer), phase by phase and step by step as the model does,
/// with core::add for every reduction. Afterwards inputs[rank] holds what the
/// member must end with.
void run_reference(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                   std::vector<std::vector<uint8_t>>& inputs);

}  // namespace fabricvp::collectives
