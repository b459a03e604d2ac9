// Collective algorithms on N-dimensional NPU fabrics (seed 001 §II-D and
// ASTRA-sim's system layer), for the endpoint's collective service
// (models/npu/collective.h). SystemC-free.
//
// Fabric. NPU i has coordinate (c0, c1, ..) with c0 fastest; dimension d is a
// Ring, FullyConnected or Switch of size n_d with `links` parallel links per
// NPU (systems/fabric builds it from the same Shape):
//   Ring            link k joins every NPU to its + neighbour (full duplex);
//                   AFI ports 2k (+ direction) and 2k + 1 (- direction)
//   FullyConnected  link k joins every pair; port (j - 1) * links + k leads
//                   to the NPU j positions ahead (j = 1 .. n - 1)
//   Switch          link k joins every NPU to switch plane k of its group;
//                   port k
// Ports are numbered dimension by dimension (Shape::port). Messages travel
// inside one dimension: a Ring message to a non-neighbour is forwarded hop by
// hop in the direction and on the link it left on (Shape::route); a Switch
// message crosses the switch (two links).
//
// Communicators span a subset of the dimensions (the other coordinates fixed);
// members are ranked with the first spanned dimension fastest. The buffer of
// a block collective holds one block per member; block b's digits in the
// spanned dimensions are the member coordinates of rank b.
//
// Algorithms, one per dimension (ASTRA-sim's *-implementation lists):
//   ring      the chunk's part is split over `lanes` unidirectional rings
//             (Ring and FullyConnected: 2 per link, one each way; Switch: one
//             per link); n - 1 steps per reduce-scatter or all-gather, an
//             all-reduce is both in one phase (2 (n - 1) steps)
//   direct    every member sends every other member its segment at once
//             (n - 1 messages in parallel); all-reduce = reduce-scatter + all-gather
//   halvingDoubling  recursive halving (reduce-scatter: log2 n steps, partner
//             at distance n/2, n/4, ..), recursive doubling back (all-gather);
//             n must be a power of two
//   doubleBinaryTree all-reduce only: the chunk's two halves are reduced up
//             two binary trees (heap order over the positions, and over the
//             positions reversed) and broadcast back down, a phase per level
// All-to-all, per dimension, is direct (the block for coordinate x is sent to
// x, where it lands in the slot of its origin's coordinate) or ring (each
// lane's message carries the blocks for the members 1 .. n-1 positions ahead;
// a member keeps the first and passes the rest on: Step::passthrough);
// broadcast is direct from the member holding the data, dimension by dimension.
//
// Order over the dimensions d0, d1, .. of an all-reduce (collective-optimization):
//   baseline      all-reduce on every dimension in turn
//   localBWAware  reduce-scatter d0 .. d(D-2), all-reduce on the last, all-gather back (seed 001's enhanced)
// Reduce-scatter and all-gather take the dimensions in order (all-gather in reverse).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/core/dtype.h"
#include "models/npu/collective.h"

namespace fabricvp::collectives::ndim {

using npu::CollectiveKind;
using npu::Span;

enum class DimType : uint8_t { ring, fully_connected, sw };
/// "Ring", "FullyConnected", "Switch" (ASTRA-sim's spelling).
const char* dim_type_name(DimType t);
/// Accepts ASTRA-sim's spellings and lower case (ring, fullyconnected, fully_connected, switch).
bool parse_dim_type(const std::string& s, DimType& out);

enum class Algorithm : uint8_t { ring, direct, halving_doubling, double_binary_tree };
/// "ring", "direct", "halvingDoubling", "doubleBinaryTree".
const char* algorithm_name(Algorithm a);
/// ASTRA-sim's names and lower-case/underscore variants.
bool parse_algorithm(const std::string& s, Algorithm& out);

struct DimSpec {
  DimType type = DimType::ring;
  uint32_t size = 1;
  uint32_t links = 1;
};

/// A dimension as communicators and algorithms see it: physical dimension
/// `phys`, or a part of it after Shape::split (coordinate = (physical
/// coordinate / stride) mod size).
struct LogicalDim {
  uint32_t phys = 0, stride = 1, size = 1;
};

class Shape {
 public:
  Shape() = default;
  explicit Shape(std::vector<DimSpec> dims);

  // The physical fabric: its dimensions, ports and routes.
  const std::vector<DimSpec>& dims() const { return m_dims; }
  uint32_t ndims() const { return static_cast<uint32_t>(m_dims.size()); }
  uint32_t npus() const { return m_npus; }
  /// AFI ports of one NPU in physical dimension d, and over all dimensions.
  uint32_t dim_ports(uint32_t d) const;
  uint32_t ports() const { return m_ports; }
  /// Port number of physical dimension d's local port `p`.
  uint32_t port(uint32_t d, uint32_t p) const { return m_port_base[d] + p; }
  /// Dimension and local port of a port number.
  void port_dim(uint32_t port, uint32_t& d, uint32_t& local) const;
  /// The port a message from `npu` to `dst` (same coordinates but in one
  /// physical dimension) leaves on, using link `link`; Ring: the shorter way (ties +).
  uint32_t first_port(uint32_t npu, uint32_t dst, uint32_t link) const;
  /// The port a message from `npu` to any `dst` leaves on: dimension-order
  /// routing, first toward dst's coordinate in the lowest dimension that differs.
  uint32_t next_port(uint32_t npu, uint32_t dst, uint32_t link) const;
  /// A message for `dst` arrived at `npu` on its port `in_port`: the port it
  /// goes on from there (Ring: the same direction and link; then the next
  /// dimension that differs, in dimension order).
  uint32_t route(uint32_t npu, uint32_t dst, uint32_t in_port) const;
  /// The port of a Switch of physical dimension d that leads toward `dst`
  /// (its member with dst's coordinate in d).
  uint32_t switch_port(uint32_t d, uint32_t dst) const;

  // The dimensions communicators span: the physical ones, unless split.
  uint32_t nlogical() const { return static_cast<uint32_t>(m_logical.size()); }
  const LogicalDim& logical(uint32_t d) const { return m_logical[d]; }
  /// The physical dimension under logical dimension d.
  const DimSpec& spec(uint32_t d) const { return m_dims[m_logical[d].phys]; }
  uint32_t size(uint32_t d) const { return m_logical[d].size; }
  uint32_t coord(uint32_t npu, uint32_t d) const { return npu / m_lstride[d] % m_logical[d].size; }
  /// The NPU whose coordinate in logical dimension d is x, the others those of `npu`.
  uint32_t with(uint32_t npu, uint32_t d, uint32_t x) const { return npu + (x - coord(npu, d)) * m_lstride[d]; }
  /// Unidirectional rings the ring algorithm uses in logical dimension d.
  uint32_t lanes(uint32_t d) const;
  /// The port ring lane q of logical dimension d leaves on, and the NPU it
  /// reaches at `npu` (+ direction for even q on Ring and FullyConnected, - for odd).
  uint32_t lane_port(uint32_t npu, uint32_t d, uint32_t q) const;
  uint32_t lane_next(uint32_t npu, uint32_t d, uint32_t q) const;
  /// The same fabric with logical dimension d cut in two: its first `first`
  /// coordinates become a dimension of `first`, the blocks of them a
  /// dimension of size(d) / first (ASTRA-sim's split of a dimension for a
  /// model-parallel group that ends inside it). Throws core::ConfigError if
  /// `first` does not divide size(d).
  Shape split(uint32_t d, uint32_t first) const;
  /// "Ring(4)xSwitch(8)" (split: "Ring(4 = 2 x 2)").
  std::string describe() const;

 private:
  uint32_t pcoord(uint32_t npu, uint32_t d) const { return npu / m_stride[d] % m_dims[d].size; }
  uint32_t lowest_difference(uint32_t npu, uint32_t dst) const;
  std::vector<DimSpec> m_dims;
  std::vector<uint32_t> m_stride, m_port_base;
  std::vector<LogicalDim> m_logical;
  std::vector<uint32_t> m_lstride;  // NPU-id stride of each logical dimension
  uint32_t m_npus = 1, m_ports = 0;
};

/// The NPUs along some dimensions through one NPU (see the top of this file).
class Communicator {
 public:
  Communicator(const Shape& shape, std::vector<uint32_t> dims, uint32_t any);
  const Shape& shape() const { return *m_shape; }
  const std::vector<uint32_t>& dims() const { return m_dims; }
  uint32_t size() const { return m_size; }
  bool contains(uint32_t npu) const;
  uint32_t rank_of(uint32_t npu) const;
  uint32_t npu_of(uint32_t rank) const;
  uint32_t id() const { return m_id; }
  std::string describe() const;
  /// The communicators of `dims` that together hold every NPU once, by lowest member.
  static std::vector<Communicator> partition(const Shape& shape, const std::vector<uint32_t>& dims);

 private:
  std::shared_ptr<const Shape> m_shape;
  std::vector<uint32_t> m_dims;
  uint32_t m_base = 0;  // the member with spanned coordinates 0
  uint32_t m_size = 1, m_id = 0;
};

struct PlanOptions {
  /// Per physical dimension of the fabric (a split dimension's parts use its
  /// algorithm), for all-reduce, reduce-scatter and all-gather; empty = ring everywhere.
  std::vector<Algorithm> algorithms;
  bool bandwidth_aware = true;     ///< all-reduce order: localBWAware (true) or baseline
  uint64_t chunk_bytes = 1 << 20;  ///< a chunk's size (rounded down to `align` elements)
  uint32_t chunks = 0;             ///< if > 0: split the buffer into this many chunks instead
  uint32_t align = 1;              ///< segment boundaries, elements
};

/// The plan of one collective at one member of `comm`. Throws
/// core::ConfigError for what cannot be done (sizes, halvingDoubling on a
/// dimension that is not a power of two, doubleBinaryTree for a reduce-scatter).
std::shared_ptr<const npu::CollectivePlan> make_plan(const Communicator& comm, CollectiveKind kind, core::Dtype dtype,
                                                     uint64_t elems, uint32_t root, const PlanOptions& options,
                                                     uint32_t npu);

/// A point-to-point transfer of `elems` elements from `src` to `dst` (rank 0
/// and 1 of a two-member group, communicator id p2p_id(src, dst)): one ring
/// whose only message goes from src to dst along the route (next_port), in
/// chunks of options.chunk_bytes (or options.chunks).
std::shared_ptr<const npu::CollectivePlan> make_p2p_plan(const Shape& shape, uint32_t src, uint32_t dst,
                                                         core::Dtype dtype, uint64_t elems, const PlanOptions& options,
                                                         uint32_t npu);
/// The communicator id of transfers from src to dst (bit 31 set; dimension
/// communicators never set it).
uint32_t p2p_id(const Shape& shape, uint32_t src, uint32_t dst);

/// Execute the plans of every member (plans[rank]) on host buffers, phase by
/// phase and step by step in the model's order of additions (see
/// sw/collectives/torus.h run_reference).
void run_reference(const Communicator& comm, const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                   std::vector<std::vector<uint8_t>>& inputs);

}  // namespace fabricvp::collectives::ndim
