#include "sw/collectives/ndim.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "models/core/config.h"
#include "sw/collectives/common.h"

namespace fabricvp::collectives::ndim {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  s.erase(std::remove(s.begin(), s.end(), '-'), s.end());
  return s;
}

uint32_t mod(int64_t a, uint32_t n) { return static_cast<uint32_t>(((a % n) + n) % n); }

bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

uint32_t log2u(uint32_t n) {
  uint32_t l = 0;
  while ((1u << (l + 1)) <= n) ++l;
  return l;
}

}  // namespace

const char* dim_type_name(DimType t) {
  switch (t) {
    case DimType::ring: return "Ring";
    case DimType::fully_connected: return "FullyConnected";
    case DimType::sw: return "Switch";
  }
  return "?";
}

bool parse_dim_type(const std::string& s, DimType& out) {
  const std::string l = lower(s);
  if (l == "ring")
    out = DimType::ring;
  else if (l == "fullyconnected")
    out = DimType::fully_connected;
  else if (l == "switch")
    out = DimType::sw;
  else
    return false;
  return true;
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::direct: return "direct";
    case Algorithm::halving_doubling: return "halvingDoubling";
    case Algorithm::double_binary_tree: return "doubleBinaryTree";
  }
  return "?";
}

bool parse_algorithm(const std::string& s, Algorithm& out) {
  const std::string l = lower(s);
  if (l == "ring")
    out = Algorithm::ring;
  else if (l == "direct")
    out = Algorithm::direct;
  else if (l == "halvingdoubling" || l == "hd")
    out = Algorithm::halving_doubling;
  else if (l == "doublebinarytree" || l == "dbt")
    out = Algorithm::double_binary_tree;
  else
    return false;
  return true;
}

// ---- the fabric ---------------------------------------------------------------

Shape::Shape(std::vector<DimSpec> dims) : m_dims(std::move(dims)) {
  if (m_dims.empty()) throw core::ConfigError("a fabric needs at least one dimension");
  if (m_dims.size() > 7) throw core::ConfigError(fmt::format("{} dimensions: at most 7", m_dims.size()));
  uint64_t n = 1;
  for (const DimSpec& d : m_dims) {
    if (d.size < 1) throw core::ConfigError("a dimension of size 0");
    if (d.links < 1) throw core::ConfigError("a dimension with no links");
    m_stride.push_back(static_cast<uint32_t>(n));
    n *= d.size;
    if (n >= (1u << 24)) throw core::ConfigError(fmt::format("{} NPUs: at most {}", n, (1u << 24) - 1));
  }
  m_npus = static_cast<uint32_t>(n);
  for (uint32_t d = 0; d < ndims(); ++d) {
    m_port_base.push_back(m_ports);
    m_ports += dim_ports(d);
    m_logical.push_back(LogicalDim{d, 1, m_dims[d].size});
    m_lstride.push_back(m_stride[d]);
  }
}

Shape Shape::split(uint32_t d, uint32_t first) const {
  if (d >= nlogical()) throw std::invalid_argument("split: no such dimension");
  const LogicalDim l = m_logical[d];
  if (nlogical() >= 7) throw core::ConfigError("a fabric split into more than 7 dimensions");
  if (first < 1 || l.size % first != 0)
    throw core::ConfigError(fmt::format("dimension {} of {} NPUs cannot be split into parts of {}", d, l.size, first));
  Shape s = *this;
  s.m_logical[d] = LogicalDim{l.phys, l.stride, first};
  s.m_logical.insert(s.m_logical.begin() + d + 1, LogicalDim{l.phys, l.stride * first, l.size / first});
  s.m_lstride[d] = m_lstride[d];
  s.m_lstride.insert(s.m_lstride.begin() + d + 1, m_lstride[d] * first);
  return s;
}

uint32_t Shape::dim_ports(uint32_t d) const {
  const DimSpec& s = m_dims[d];
  if (s.size < 2) return 0;
  switch (s.type) {
    case DimType::ring: return 2 * s.links;
    case DimType::fully_connected: return (s.size - 1) * s.links;
    case DimType::sw: return s.links;
  }
  return 0;
}

void Shape::port_dim(uint32_t port, uint32_t& d, uint32_t& local) const {
  for (d = ndims(); d-- > 0;)
    if (port >= m_port_base[d] && dim_ports(d) > 0) break;
  if (d >= ndims() || port >= m_port_base[d] + dim_ports(d))
    throw std::logic_error(fmt::format("AFI port {} does not exist ({} ports)", port, m_ports));
  local = port - m_port_base[d];
}

uint32_t Shape::lanes(uint32_t d) const {
  const DimSpec& s = spec(d);
  if (size(d) < 2) return 0;
  return s.type == DimType::sw ? s.links : 2 * s.links;
}

uint32_t Shape::lane_port(uint32_t npu, uint32_t d, uint32_t q) const {
  const LogicalDim& l = m_logical[d];
  const bool whole = l.stride == 1 && l.size == m_dims[l.phys].size;
  switch (spec(d).type) {
    case DimType::ring:
      // 2k: + side of link k, 2k + 1: - side; a part of a ring reaches its
      // neighbours the shorter way around the whole ring.
      return whole ? port(l.phys, q) : first_port(npu, lane_next(npu, d, q), q / 2);
    case DimType::fully_connected: return first_port(npu, lane_next(npu, d, q), q / 2);
    case DimType::sw: return port(l.phys, q);
  }
  return 0;
}

uint32_t Shape::lane_next(uint32_t npu, uint32_t d, uint32_t q) const {
  const uint32_t n = size(d), x = coord(npu, d);
  const bool plus = spec(d).type == DimType::sw || q % 2 == 0;
  return with(npu, d, plus ? (x + 1) % n : (x + n - 1) % n);
}

uint32_t Shape::first_port(uint32_t npu, uint32_t dst, uint32_t link) const {
  uint32_t dim = ndims();
  for (uint32_t d = 0; d < ndims(); ++d)
    if (pcoord(npu, d) != pcoord(dst, d)) {
      if (dim != ndims())
        throw std::logic_error(fmt::format("npu{} -> npu{}: messages travel inside one dimension", npu, dst));
      dim = d;
    }
  if (dim == ndims()) throw std::logic_error(fmt::format("npu{}: a message to itself", npu));
  const DimSpec& s = m_dims[dim];
  link %= s.links;
  const uint32_t delta = mod(int64_t(pcoord(dst, dim)) - pcoord(npu, dim), s.size);
  switch (s.type) {
    case DimType::ring: {
      // The shorter way; on a tie (and on a ring of 2) the + direction.
      const bool plus = delta <= s.size - delta;
      return port(dim, 2 * link + (plus ? 0 : 1));
    }
    case DimType::fully_connected: return port(dim, (delta - 1) * s.links + link);
    case DimType::sw: return port(dim, link);
  }
  return 0;
}

uint32_t Shape::lowest_difference(uint32_t npu, uint32_t dst) const {
  for (uint32_t d = 0; d < ndims(); ++d)
    if (pcoord(npu, d) != pcoord(dst, d)) return d;
  throw std::logic_error(fmt::format("npu{}: a message to itself", npu));
}

uint32_t Shape::next_port(uint32_t npu, uint32_t dst, uint32_t link) const {
  // Dimension order: first to dst's coordinate in the lowest dimension that differs.
  const uint32_t d = lowest_difference(npu, dst);
  return first_port(npu, npu + (pcoord(dst, d) - pcoord(npu, d)) * m_stride[d], link);
}

uint32_t Shape::route(uint32_t npu, uint32_t dst, uint32_t in_port) const {
  uint32_t d = 0, local = 0;
  port_dim(in_port, d, local);
  const uint32_t next = lowest_difference(npu, dst);
  // Along a Ring: on in the direction and on the link it came (the shorter way,
  // chosen where it entered the ring): it arrived on the - side port of link k
  // when travelling +, and goes on the + side of the same link.
  if (next == d && m_dims[d].type == DimType::ring) return port(d, local ^ 1u);
  if (next <= d && m_dims[d].type != DimType::ring)
    throw std::logic_error(
        fmt::format("npu{}: a message for npu{} arrived on a {} port of dimension {} it should have left", npu, dst,
                    dim_type_name(m_dims[d].type), d));
  // Into the next dimension (dimension order), on the link of the same number.
  const uint32_t link = m_dims[d].type == DimType::fully_connected ? local % m_dims[d].links
                        : m_dims[d].type == DimType::ring          ? local / 2
                                                                   : local;
  return next_port(npu, dst, link);
}

uint32_t Shape::switch_port(uint32_t d, uint32_t dst) const { return pcoord(dst, d); }

std::string Shape::describe() const {
  std::string s;
  for (uint32_t p = 0; p < ndims(); ++p) {
    const DimSpec& d = m_dims[p];
    std::string parts;
    for (const LogicalDim& l : m_logical)
      if (l.phys == p) parts += fmt::format("{}{}", parts.empty() ? "" : " x ", l.size);
    s += fmt::format("{}{}({}{}{})", s.empty() ? "" : "x", dim_type_name(d.type), d.size,
                     parts == std::to_string(d.size) ? "" : " = " + parts,
                     d.links > 1 ? fmt::format(", {} links", d.links) : "");
  }
  return s;
}

// ---- communicators ---------------------------------------------------------------

Communicator::Communicator(const Shape& shape, std::vector<uint32_t> dims, uint32_t any)
    : m_shape(std::make_shared<Shape>(shape)), m_dims(std::move(dims)) {
  uint32_t mask = 0;
  for (uint32_t d : m_dims) {
    if (d >= shape.nlogical() || (mask >> d & 1u))
      throw std::invalid_argument(fmt::format("communicator dimensions must be distinct, 0..{}", shape.nlogical() - 1));
    mask |= 1u << d;
    m_size *= shape.size(d);
  }
  if (any >= shape.npus()) throw std::invalid_argument(fmt::format("npu{} is not in the fabric", any));
  m_base = any;
  for (uint32_t d : m_dims) m_base = shape.with(m_base, d, 0);
  m_id = (mask << 24) | m_base;
}

bool Communicator::contains(uint32_t npu) const {
  uint32_t b = npu;
  for (uint32_t d : m_dims) b = m_shape->with(b, d, 0);
  return b == m_base;
}

uint32_t Communicator::rank_of(uint32_t npu) const {
  if (!contains(npu)) throw std::invalid_argument(fmt::format("npu{} is not in communicator {}", npu, describe()));
  uint32_t r = 0, stride = 1;
  for (uint32_t d : m_dims) {
    r += m_shape->coord(npu, d) * stride;
    stride *= m_shape->size(d);
  }
  return r;
}

uint32_t Communicator::npu_of(uint32_t rank) const {
  uint32_t n = m_base;
  for (uint32_t d : m_dims) {
    n = m_shape->with(n, d, rank % m_shape->size(d));
    rank /= m_shape->size(d);
  }
  return n;
}

std::string Communicator::describe() const {
  std::string dims;
  for (uint32_t d : m_dims) dims += fmt::format("{}dim{}", dims.empty() ? "" : "+", d);
  return fmt::format("{} through npu{} ({} NPUs)", dims.empty() ? "none" : dims, m_base, m_size);
}

std::vector<Communicator> Communicator::partition(const Shape& shape, const std::vector<uint32_t>& dims) {
  std::vector<Communicator> out;
  for (uint32_t n = 0; n < shape.npus(); ++n) {
    Communicator c(shape, dims, n);
    if (c.npu_of(0) == n) out.push_back(std::move(c));
  }
  return out;
}

// ---- phases ------------------------------------------------------------------------

namespace {

enum class Op : uint8_t { rs, ag, ar, a2a, bcast, tree_up, tree_down };

const char* op_name(Op o) {
  switch (o) {
    case Op::rs: return "reduce-scatter";
    case Op::ag: return "all-gather";
    case Op::ar: return "all-reduce";
    case Op::a2a: return "all-to-all";
    case Op::bcast: return "broadcast";
    case Op::tree_up: return "tree reduce";
    case Op::tree_down: return "tree broadcast";
  }
  return "?";
}

/// One phase of the engine: an operation of one algorithm on one dimension;
/// halving-doubling and the trees take several (`sub`: step or level).
struct EPhase {
  Op op;
  Algorithm alg;
  uint32_t dim, level;
  uint32_t sub = 0;
  uint32_t group = 0;  ///< the algorithm phase it belongs to (its working set)
  // Filled when the plan is made, for the per-message paths (shape()):
  uint32_t n = 1, x = 0;  ///< members along the dimension, this member's coordinate
  bool sw = false;        ///< a Switch dimension (its ring lanes all run +)
};

/// The position of member x in tree t of n (tree 1 is tree 0 over the reversed positions).
uint32_t tree_pos(uint32_t t, uint32_t n, uint32_t x) { return t == 0 ? x : n - 1 - x; }
uint32_t tree_member(uint32_t t, uint32_t n, uint32_t p) { return t == 0 ? p : n - 1 - p; }
uint32_t tree_level(uint32_t p) { return log2u(p + 1); }

class NdPlan;

/// The work of one chunk at one member.
class NdChunk final : public npu::ChunkPlan {
 public:
  NdChunk(const NdPlan& p, uint32_t c);
  NdChunk(const NdChunk&) = delete;  // m_lane / m_off may point into the object
  NdChunk& operator=(const NdChunk&) = delete;
  const Span& span() const override { return m_span; }
  const Span& input() const override { return m_input; }
  const Span& output() const override { return m_output; }
  Span first_send(uint32_t phase, uint32_t ring) const override;
  npu::Step step(uint32_t phase, uint32_t ring, uint32_t t) const override;
  // The same, counting elements instead of making spans (timing only; tests
  // check they agree with the spans).
  uint64_t first_send_elems(uint32_t phase, uint32_t ring) const override;
  npu::Step shape(uint32_t phase, uint32_t ring, uint32_t t) const override;

 private:
  uint64_t seg_elems(const EPhase& e, uint32_t q, uint32_t i) const;
  uint64_t segs_elems(const EPhase& e, uint32_t lo, uint32_t hi) const;
  uint64_t digit_blocks_elems(const EPhase& e) const;
  uint64_t tree_half_elems(const EPhase& e, uint32_t ring) const;
  /// Segment i (the part member coordinate i owns after a reduce-scatter) of lane q in phase e.
  Span seg(const EPhase& e, uint32_t q, uint32_t i) const;
  /// Segments lo .. hi - 1 (K = 1).
  Span segs(const EPhase& e, uint32_t lo, uint32_t hi) const;
  /// Blocks whose digit at the phase's level is g (all-to-all).
  Span digit_blocks(const EPhase& e, uint32_t g) const;
  /// Lane q's part of each of those blocks (ring all-to-all), and its size.
  Span lane_blocks(const EPhase& e, uint32_t q, uint32_t g) const;
  uint64_t lane_blocks_elems(const EPhase& e, uint32_t q) const;

  /// Per phase and lane, what seg_elems() needs without a division: the
  /// lane's elements (all-reduce: split over the members as split() does,
  /// `units` of align elements, `base` per member and one more for the first
  /// `extra`; block collectives: one segment's elements).
  struct LaneCount {
    uint64_t total = 0, base = 0, extra = 0;
  };
  // What shape() reads for every message of a ring phase (at thousands of
  // NPUs, from a chunk not in cache), first in the object: the engine
  // requests a plan's first two cache lines ahead (CollectiveEngine::prefetch),
  // and a ring step's shape no longer leads through the plan (m_p). Phase p's
  // lanes are m_lane[m_off[p] ..]; a few phases' worth live inside the object.
  static constexpr size_t kInlineLanes = 4, kInlinePhases = 4;
  const EPhase* m_phases;  ///< the plan's phase_list()
  const LaneCount* m_lane = nullptr;
  const uint32_t* m_off = nullptr;
  uint32_t m_align;
  bool m_allreduce;
  std::array<uint32_t, kInlinePhases> m_off_in{};
  std::array<LaneCount, kInlineLanes> m_lane_in{};

  const NdPlan& m_p;
  Span m_span, m_input, m_output;
  std::vector<Span> m_pieces;  // block collectives: this chunk's slice of every block
  std::vector<Span> m_group;   // all-reduce: the working set of each algorithm phase
  std::vector<uint64_t> m_group_elems;
  uint64_t m_piece_elems = 0;
  std::vector<LaneCount> m_lane_heap;
  std::vector<uint32_t> m_off_heap;
  void make_spans(uint32_t c);
  void count_lanes();
};

class NdPlan final : public npu::CollectivePlan {
 public:
  NdPlan(const Communicator& comm, CollectiveKind kind, core::Dtype dtype, uint64_t elems, uint32_t root,
         const PlanOptions& o, uint32_t npu)
      : m_comm(comm),
        m_kind(kind),
        m_dtype(dtype),
        m_elems(elems),
        m_root(root),
        m_align(o.align),
        m_npu(npu),
        m_rank(comm.rank_of(npu)),
        m_N(comm.size()) {
    const uint32_t es = core::dtype_bytes(dtype);
    if (es == 0) throw core::ConfigError("collective without an element type");
    if (m_align == 0) throw core::ConfigError("collective alignment must be at least 1 element");
    if (kind == CollectiveKind::broadcast && root >= m_N)
      throw core::ConfigError(fmt::format("broadcast root {}: the communicator has {} members", root, m_N));
    const Shape& sh = comm.shape();
    for (uint32_t d : comm.dims()) {
      m_mine.push_back(sh.coord(npu, d));
      m_radix.push_back(sh.size(d));
      m_stride.push_back(m_stride.empty() ? 1 : m_stride.back() * m_radix[m_radix.size() - 2]);
    }
    build_phases(o);
    for (EPhase& e : m_phases) {
      e.n = m_radix[e.level];
      e.x = m_mine[e.level];
      e.sw = sh.spec(e.dim).type == DimType::sw;
    }
    // Chunks.
    const bool blocks =
        kind == CollectiveKind::reducescatter || kind == CollectiveKind::allgather || kind == CollectiveKind::alltoall;
    if (blocks && elems % m_N != 0)
      throw core::ConfigError(
          fmt::format("a {} of {} elements over {} members: the element count must be a multiple of the members "
                      "(nccl-tests convention: the size is the whole buffer)",
                      npu::collective_name(kind), elems, m_N));
    const uint64_t unit = blocks ? elems / m_N : elems;  // what chunks cut: the buffer, or each block
    m_block = blocks ? unit : 0;
    uint64_t ce;
    if (o.chunks > 0) {
      ce = (unit + o.chunks - 1) / o.chunks;
    } else {
      ce = o.chunk_bytes / es / (blocks ? m_N : 1);
    }
    ce = std::max<uint64_t>(m_align, ce / m_align * m_align);
    m_ce = ce;
    m_chunks = m_N < 2 || m_phases.empty() || unit == 0 ? 0 : static_cast<uint32_t>((unit + ce - 1) / ce);
    m_capacity = blocks ? m_N * std::min(ce, unit) : std::min(ce, unit);
    // Roles.
    for (const EPhase& e : m_phases) m_roles.push_back(roles(e));
    for (const EPhase& e : m_phases) {
      m_desc += fmt::format("{}{} {} dim{}", m_desc.empty() ? "" : ", ", op_name(e.op), algorithm_name(e.alg), e.dim);
      if (e.alg == Algorithm::halving_doubling || e.op == Op::tree_up || e.op == Op::tree_down)
        m_desc += fmt::format(" step {}", e.sub);
    }
  }

  CollectiveKind kind() const override { return m_kind; }
  core::Dtype dtype() const override { return m_dtype; }
  uint64_t elems() const override { return m_elems; }
  uint32_t chunks() const override { return m_chunks; }
  uint64_t chunk_capacity() const override { return m_capacity; }
  uint32_t align() const override { return m_align; }
  uint32_t phases() const override { return static_cast<uint32_t>(m_phases.size()); }
  uint32_t rings(uint32_t p) const override { return static_cast<uint32_t>(m_roles[p].size()); }
  npu::RingRole ring(uint32_t p, uint32_t q) const override { return m_roles[p][q]; }
  std::unique_ptr<npu::ChunkPlan> chunk(uint32_t c) const override { return std::make_unique<NdChunk>(*this, c); }
  std::string describe() const override { return m_desc; }
  uint32_t phase_dim(uint32_t p) const override { return m_phases[p].dim; }
  int32_t ring_after(uint32_t p, uint32_t q) const override {
    const EPhase& e = m_phases[p];
    // Contributions to one segment are added in ring order: direct
    // reduce-scatter (one ring per peer), a tree node's two children.
    if (e.alg == Algorithm::direct && e.op == Op::rs && q > 0) return static_cast<int32_t>(q - 1);
    if (e.op == Op::tree_up && q % 2 == 1) return static_cast<int32_t>(q - 1);
    return -1;
  }

  // For the chunk plans.
  const Communicator& comm() const { return m_comm; }
  const std::vector<EPhase>& phase_list() const { return m_phases; }
  uint32_t npu() const { return m_npu; }
  uint32_t rank() const { return m_rank; }
  uint32_t root() const { return m_root; }
  uint32_t members() const { return m_N; }
  uint64_t block() const { return m_block; }
  uint64_t chunk_elems() const { return m_ce; }
  uint32_t digit(uint32_t b, uint32_t level) const { return b / m_stride[level] % m_radix[level]; }
  uint32_t my_digit(uint32_t level) const { return m_mine[level]; }
  uint32_t root_digit(uint32_t level) const { return digit(m_root, level); }
  uint32_t levels() const { return static_cast<uint32_t>(m_mine.size()); }
  uint32_t size_of(const EPhase& e) const { return m_radix[e.level]; }
  uint32_t radix(uint32_t level) const { return m_radix[level]; }
  /// Lanes (unidirectional rings) the phase splits its data over.
  uint32_t lanes(const EPhase& e) const {
    if (e.alg == Algorithm::ring) return m_comm.shape().lanes(e.dim);
    if (e.alg == Algorithm::double_binary_tree) return 2;
    return 1;
  }

 private:
  Algorithm alg_of(uint32_t d, const PlanOptions& o) const {
    const uint32_t p = m_comm.shape().logical(d).phys;
    return p < o.algorithms.size() ? o.algorithms[p] : Algorithm::ring;
  }

  void add(Op op, Algorithm alg, uint32_t level, uint32_t group) {
    const uint32_t d = m_comm.dims()[level];
    const uint32_t n = m_radix[level];
    if (n < 2) return;
    if (alg == Algorithm::halving_doubling && !pow2(n))
      throw core::ConfigError(
          fmt::format("halvingDoubling on dimension {} of {} NPUs: the size must be a power of two", d, n));
    if (op == Op::a2a && alg != Algorithm::ring && alg != Algorithm::direct)
      throw core::ConfigError(fmt::format(
          "{} on dimension {}: all-to-all runs ring (messages pass through the members in between) or direct",
          algorithm_name(alg), d));
    if (alg == Algorithm::double_binary_tree && op != Op::ar)
      throw core::ConfigError(
          fmt::format("doubleBinaryTree on dimension {}: it implements all-reduce only (the {} needs ring, direct or "
                      "halvingDoubling there)",
                      d, op_name(op)));
    const uint32_t lg = log2u(n);
    switch (alg) {
      case Algorithm::ring: m_phases.push_back({op, alg, d, level, 0, group}); break;
      case Algorithm::direct:
        if (op == Op::ar) {
          m_phases.push_back({Op::rs, alg, d, level, 0, group});
          m_phases.push_back({Op::ag, alg, d, level, 0, group});
        } else {
          m_phases.push_back({op, alg, d, level, 0, group});
        }
        break;
      case Algorithm::halving_doubling:
        if (op == Op::rs || op == Op::ar)
          for (uint32_t s = 0; s < lg; ++s) m_phases.push_back({Op::rs, alg, d, level, s, group});
        if (op == Op::ag || op == Op::ar)
          for (uint32_t s = 0; s < lg; ++s) m_phases.push_back({Op::ag, alg, d, level, s, group});
        break;
      case Algorithm::double_binary_tree: {
        const uint32_t depth = tree_level(n - 1);
        for (uint32_t l = 0; l < depth; ++l) m_phases.push_back({Op::tree_up, alg, d, level, depth - l, group});
        for (uint32_t l = 0; l < depth; ++l) m_phases.push_back({Op::tree_down, alg, d, level, l, group});
        break;
      }
    }
  }

  void build_phases(const PlanOptions& o) {
    const auto& dims = m_comm.dims();
    // Only dimensions with more than one member take part.
    std::vector<uint32_t> lv;
    for (uint32_t l = 0; l < dims.size(); ++l)
      if (m_radix[l] > 1) lv.push_back(l);
    const uint32_t D = static_cast<uint32_t>(lv.size());
    uint32_t g = 0;
    switch (m_kind) {
      case CollectiveKind::allreduce:
        if (!o.bandwidth_aware || D == 1) {
          for (uint32_t i = 0; i < D; ++i) add(Op::ar, alg_of(dims[lv[i]], o), lv[i], g++);
        } else if (D > 1) {
          for (uint32_t i = 0; i + 1 < D; ++i) add(Op::rs, alg_of(dims[lv[i]], o), lv[i], g++);
          add(Op::ar, alg_of(dims[lv[D - 1]], o), lv[D - 1], g++);
          for (uint32_t i = D - 1; i-- > 0;) add(Op::ag, alg_of(dims[lv[i]], o), lv[i], g++);
        }
        break;
      case CollectiveKind::reducescatter:
        for (uint32_t i = 0; i < D; ++i) add(Op::rs, alg_of(dims[lv[i]], o), lv[i], g++);
        break;
      case CollectiveKind::allgather:
        for (uint32_t i = 0; i < D; ++i) add(Op::ag, alg_of(dims[lv[i]], o), lv[i], g++);
        break;
      case CollectiveKind::alltoall:
        for (uint32_t i = 0; i < D; ++i) add(Op::a2a, alg_of(dims[lv[i]], o), lv[i], g++);
        break;
      case CollectiveKind::broadcast:
        for (uint32_t i = 0; i < D; ++i) add(Op::bcast, Algorithm::direct, lv[i], g++);
        break;
    }
    m_groups = g;
  }

  std::vector<npu::RingRole> roles(const EPhase& e) const {
    const Shape& sh = m_comm.shape();
    const uint32_t n = size_of(e), x = my_digit(e.level);
    const uint32_t links = sh.spec(e.dim).links;
    std::vector<npu::RingRole> out;
    auto to = [&](uint32_t coord, uint32_t link) {
      npu::RingRole r;
      r.next = sh.with(m_npu, e.dim, coord);
      r.port = r.next == m_npu ? 0 : sh.first_port(m_npu, r.next, link);
      return r;
    };
    if (e.alg == Algorithm::ring) {
      for (uint32_t q = 0; q < sh.lanes(e.dim); ++q) {
        npu::RingRole r;
        r.port = sh.lane_port(m_npu, e.dim, q);
        r.next = sh.lane_next(m_npu, e.dim, q);
        r.receives = e.op == Op::ar ? 2 * (n - 1) : n - 1;
        r.sends_first = true;
        out.push_back(r);
      }
      return out;
    }
    if (e.alg == Algorithm::direct) {
      for (uint32_t j = 1; j < n; ++j) {
        npu::RingRole r = to((x + j) % n, (j - 1) % links);
        if (e.op == Op::bcast) {
          bool holds_later = true;  // the digits after this level are the root's
          for (uint32_t l = e.level + 1; l < levels(); ++l) holds_later &= my_digit(l) == root_digit(l);
          const uint32_t rd = root_digit(e.level);
          if (holds_later && x == rd) r.sends_first = true;
          if (holds_later && x != rd && mod(int64_t(x) - j, n) == rd) r.receives = 1;
        } else {
          r.sends_first = true;
          r.receives = 1;
        }
        out.push_back(r);
      }
      return out;
    }
    if (e.alg == Algorithm::halving_doubling) {
      const uint32_t lg = log2u(n);
      const uint32_t dist = e.op == Op::rs ? n >> (e.sub + 1) : 1u << e.sub;
      (void)lg;
      npu::RingRole r = to(x ^ dist, e.sub % links);
      r.sends_first = true;
      r.receives = 1;
      out.push_back(r);
      return out;
    }
    // Double binary tree: rings 2t + side (tree t, left or right child).
    for (uint32_t t = 0; t < 2; ++t)
      for (uint32_t side = 0; side < 2; ++side) {
        const uint32_t p = tree_pos(t, n, x);
        npu::RingRole r;
        r.next = m_npu;
        const uint32_t child = 2 * p + 1 + side;
        if (e.op == Op::tree_up) {
          // Level e.sub sends to its parent; the parents (level e.sub - 1) receive.
          if (p > 0 && tree_level(p) == e.sub && (p - 1) % 2 == side) {
            r = to(tree_member(t, n, (p - 1) / 2), t + side);
            r.sends_first = true;
          }
          if (tree_level(p) + 1 == e.sub && child < n) r.receives = 1;
        } else {
          // Level e.sub sends to its children.
          if (tree_level(p) == e.sub && child < n) {
            r = to(tree_member(t, n, child), t + side);
            r.sends_first = true;
          }
          if (p > 0 && tree_level(p) == e.sub + 1 && (p - 1) % 2 == side) r.receives = 1;
        }
        out.push_back(r);
      }
    return out;
  }

  Communicator m_comm;
  CollectiveKind m_kind;
  core::Dtype m_dtype;
  uint64_t m_elems;
  uint32_t m_root, m_align, m_npu, m_rank, m_N;
  std::vector<uint32_t> m_mine, m_radix, m_stride;
  std::vector<EPhase> m_phases;
  std::vector<std::vector<npu::RingRole>> m_roles;
  uint32_t m_groups = 0, m_chunks = 0;
  uint64_t m_block = 0, m_ce = 0, m_capacity = 0;
  std::string m_desc;
};

// ---- chunks ---------------------------------------------------------------------

NdChunk::NdChunk(const NdPlan& p, uint32_t c)
    : m_phases(p.phase_list().data()), m_align(p.align()), m_allreduce(p.kind() == CollectiveKind::allreduce), m_p(p) {
  make_spans(c);
  count_lanes();
}

void NdChunk::make_spans(uint32_t c) {
  const NdPlan& p = m_p;
  const CollectiveKind k = p.kind();
  if (k == CollectiveKind::allreduce || k == CollectiveKind::broadcast) {
    const uint64_t first = uint64_t(c) * p.chunk_elems();
    m_span.ranges.emplace_back(first, std::min(p.elems(), first + p.chunk_elems()));
    if (k == CollectiveKind::broadcast) {
      (p.rank() == p.root() ? m_input : m_output) = m_span;
      return;
    }
    m_input = m_output = m_span;
    // The working set of each algorithm phase: a reduce-scatter keeps what the
    // member owns after it, an all-gather gives back what the matching
    // reduce-scatter started from.
    std::vector<Span> stack;
    Span cur = m_span;
    const auto& ph = p.phase_list();
    for (size_t i = 0; i < ph.size(); ++i) {
      const EPhase& e = ph[i];
      if (i > 0 && ph[i - 1].group == e.group) continue;
      if (e.op == Op::ag) {
        cur = stack.back();
        stack.pop_back();
      }
      m_group.push_back(cur);
      m_group_elems.push_back(cur.elems());
      // The last phase of this group decides what it leaves.
      size_t last = i;
      while (last + 1 < ph.size() && ph[last + 1].group == e.group) ++last;
      if (ph[last].op == Op::rs) {
        stack.push_back(cur);
        const uint32_t K = p.lanes(e), n = p.size_of(e), x = p.my_digit(e.level);
        Span owned;
        for (uint32_t q = 0; q < K; ++q) owned.append(split(split(cur, K, q, p.align()), n, x, p.align()));
        cur = owned;
      }
    }
    return;
  }
  const uint64_t lo = uint64_t(c) * p.chunk_elems(), hi = std::min(p.block(), lo + p.chunk_elems());
  m_piece_elems = hi - lo;
  for (uint32_t b = 0; b < p.members(); ++b) {
    const uint64_t base = uint64_t(b) * p.block();
    m_pieces.push_back(Span{{{base + lo, base + hi}}});
    m_span.append(m_pieces.back());
  }
  const Span& own = m_pieces[p.rank()];
  m_input = k == CollectiveKind::allgather ? own : m_span;
  m_output = k == CollectiveKind::reducescatter ? own : m_span;
}

Span NdChunk::seg(const EPhase& e, uint32_t q, uint32_t i) const {
  const uint32_t K = m_p.lanes(e), n = m_p.size_of(e);
  if (m_allreduce) return split(split(m_group[e.group], K, q, m_align), n, i, m_align);
  // Block collectives: the blocks with digit i at this level among those the
  // phase works on (reduce-scatter: the earlier digits are this member's;
  // all-gather: the later ones), each cut into the lanes.
  Span s;
  for (uint32_t b = 0; b < m_p.members(); ++b) {
    if (m_p.digit(b, e.level) != i) continue;
    bool ok = true;
    for (uint32_t l = 0; l < m_p.levels() && ok; ++l) {
      const bool fixed = e.op == Op::rs ? l < e.level : l > e.level;
      if (fixed && m_p.digit(b, l) != m_p.my_digit(l)) ok = false;
    }
    if (ok) s.append(split(m_pieces[b], K, q, m_align));
  }
  return s;
}

Span NdChunk::segs(const EPhase& e, uint32_t lo, uint32_t hi) const {
  Span s;
  for (uint32_t i = lo; i < hi; ++i) s.append(seg(e, 0, i));
  return s;
}

Span NdChunk::digit_blocks(const EPhase& e, uint32_t g) const {
  Span s;
  for (uint32_t b = 0; b < m_p.members(); ++b)
    if (m_p.digit(b, e.level) == g) s.append(m_pieces[b]);
  return s;
}

Span NdChunk::lane_blocks(const EPhase& e, uint32_t q, uint32_t g) const {
  const uint32_t K = m_p.lanes(e);
  Span s;
  for (uint32_t b = 0; b < m_p.members(); ++b)
    if (m_p.digit(b, e.level) == g) s.append(split(m_pieces[b], K, q, m_align));
  return s;
}

uint64_t NdChunk::lane_blocks_elems(const EPhase& e, uint32_t q) const {
  return uint64_t(m_p.members() / m_p.size_of(e)) * split_elems(m_piece_elems, m_p.lanes(e), q, m_align);
}

Span NdChunk::first_send(uint32_t phase, uint32_t ring) const {
  const EPhase& e = m_phases[phase];
  const uint32_t n = m_p.size_of(e), x = m_p.my_digit(e.level);
  switch (e.alg) {
    case Algorithm::ring: {
      const int64_t s = m_p.comm().shape().spec(e.dim).type == DimType::sw || ring % 2 == 0 ? 1 : -1;
      if (e.op == Op::a2a) {
        // Lane `ring`'s part of the blocks for the members 1 .. n-1 positions ahead, nearest first.
        Span out;
        for (uint32_t j = 1; j < n; ++j) out.append(lane_blocks(e, ring, mod(int64_t(x) + s * j, n)));
        return out;
      }
      return seg(e, ring, e.op == Op::ag ? x : mod(int64_t(x) - s, n));
    }
    case Algorithm::direct: {
      const uint32_t j = ring + 1;
      switch (e.op) {
        case Op::rs: return seg(e, 0, (x + j) % n);
        case Op::ag: return seg(e, 0, x);
        case Op::a2a: return digit_blocks(e, (x + j) % n);
        default: return m_span;  // broadcast
      }
    }
    case Algorithm::halving_doubling: {
      if (e.op == Op::rs) {
        const uint32_t dist = n >> (e.sub + 1), lo = x & ~(2 * dist - 1);
        return (x & dist) ? segs(e, lo, lo + dist) : segs(e, lo + dist, lo + 2 * dist);
      }
      const uint32_t dist = 1u << e.sub, lo = x & ~(dist - 1);
      return segs(e, lo, lo + dist);
    }
    case Algorithm::double_binary_tree: return split(m_group[e.group], 2, ring / 2, m_align);
  }
  return Span{};
}

npu::Step NdChunk::step(uint32_t phase, uint32_t ring, uint32_t t) const {
  const EPhase& e = m_phases[phase];
  const uint32_t n = m_p.size_of(e), x = m_p.my_digit(e.level);
  npu::Step s;
  switch (e.alg) {
    case Algorithm::ring: {
      const int64_t sg = m_p.comm().shape().spec(e.dim).type == DimType::sw || ring % 2 == 0 ? 1 : -1;
      if (e.op == Op::a2a) {
        // From the member t + 1 positions behind: the blocks for this member
        // (stored in the slots of the origin's coordinate, as direct does),
        // then those for the n - 2 - t members after it, passed on.
        s.local = lane_blocks(e, ring, mod(int64_t(x) - sg * (1 + t), n));
        s.forward = t + 2 < n;
        s.forward_local = false;
        s.passthrough = uint64_t(n - 2 - t) * s.local.elems();
        return s;
      }
      const bool rs = e.op == Op::rs || (e.op == Op::ar && t < n - 1);
      if (rs) {
        s.reduce = true;
        s.local = seg(e, ring, mod(int64_t(x) - sg * (2 + t), n));
        s.forward = t < n - 2 || e.op == Op::ar;
      } else {
        const uint32_t a = e.op == Op::ar ? t - (n - 1) : t;
        s.local = seg(e, ring, mod(int64_t(x) - sg * (1 + a), n));
        s.forward = a < n - 2;
      }
      return s;
    }
    case Algorithm::direct: {
      const uint32_t j = ring + 1;
      switch (e.op) {
        case Op::rs:
          s.local = seg(e, 0, x);
          s.reduce = true;
          break;
        case Op::ag: s.local = seg(e, 0, mod(int64_t(x) - j, n)); break;
        case Op::a2a: s.local = digit_blocks(e, mod(int64_t(x) - j, n)); break;
        default: s.local = m_span; break;
      }
      return s;
    }
    case Algorithm::halving_doubling: {
      if (e.op == Op::rs) {
        const uint32_t dist = n >> (e.sub + 1), lo = x & ~(2 * dist - 1);
        s.local = (x & dist) ? segs(e, lo + dist, lo + 2 * dist) : segs(e, lo, lo + dist);
        s.reduce = true;
        return s;
      }
      const uint32_t dist = 1u << e.sub, lo = (x ^ dist) & ~(dist - 1);
      s.local = segs(e, lo, lo + dist);
      return s;
    }
    case Algorithm::double_binary_tree:
      s.local = split(m_group[e.group], 2, ring / 2, m_align);
      s.reduce = e.op == Op::tree_up;
      return s;
  }
  (void)t;
  return s;
}

void NdChunk::count_lanes() {
  const CollectiveKind k = m_p.kind();
  if (k == CollectiveKind::broadcast) return;
  std::vector<LaneCount> all;
  for (const EPhase& e : m_p.phase_list()) {
    const uint32_t K = m_p.lanes(e), n = m_p.size_of(e);
    m_off_heap.push_back(static_cast<uint32_t>(all.size()));
    all.resize(all.size() + K);
    LaneCount* lanes = all.data() + m_off_heap.back();
    for (uint32_t q = 0; q < K; ++q) {
      LaneCount& lc = lanes[q];
      if (k == CollectiveKind::allreduce) {
        lc.total = split_elems(m_group_elems[e.group], K, q, m_align);
        const uint64_t units = (lc.total + m_align - 1) / m_align;
        lc.base = units / n;
        lc.extra = units % n;
      } else {
        // The blocks seg() takes: digit i at this level, this member's digits
        // at the fixed levels, any digit at the others; each gives its lane part.
        uint64_t blocks = 1;
        for (uint32_t l = 0; l < m_p.levels(); ++l) {
          const bool fixed = e.op == Op::rs ? l < e.level : l > e.level;
          if (l != e.level && !fixed) blocks *= m_p.radix(l);
        }
        lc.total = blocks * split_elems(m_piece_elems, K, q, m_align);
      }
    }
  }
  if (all.size() <= kInlineLanes && m_off_heap.size() <= kInlinePhases) {
    std::copy(all.begin(), all.end(), m_lane_in.begin());
    std::copy(m_off_heap.begin(), m_off_heap.end(), m_off_in.begin());
    m_off_heap.clear();
    m_lane = m_lane_in.data();
    m_off = m_off_in.data();
  } else {
    m_lane_heap = std::move(all);
    m_lane = m_lane_heap.data();
    m_off = m_off_heap.data();
  }
}

uint64_t NdChunk::seg_elems(const EPhase& e, uint32_t q, uint32_t i) const {
  const LaneCount& lc = m_lane[m_off[static_cast<size_t>(&e - m_phases)] + q];
  if (!m_allreduce) return lc.total;
  // split_elems(lc.total, n, i, align), with the division done once.
  const uint64_t align = m_align;
  const uint64_t u0 = i * lc.base + std::min<uint64_t>(i, lc.extra);
  const uint64_t u1 = u0 + lc.base + (i < lc.extra ? 1 : 0);
  return std::min(lc.total, u1 * align) - std::min(lc.total, u0 * align);
}

uint64_t NdChunk::segs_elems(const EPhase& e, uint32_t lo, uint32_t hi) const {
  uint64_t s = 0;
  for (uint32_t i = lo; i < hi; ++i) s += seg_elems(e, 0, i);
  return s;
}

uint64_t NdChunk::digit_blocks_elems(const EPhase& e) const {
  return uint64_t(m_p.members() / m_p.size_of(e)) * m_piece_elems;
}

uint64_t NdChunk::tree_half_elems(const EPhase& e, uint32_t ring) const {
  return split_elems(m_group_elems[e.group], 2, ring / 2, m_align);
}

uint64_t NdChunk::first_send_elems(uint32_t phase, uint32_t ring) const {
  const EPhase& e = m_phases[phase];
  const uint32_t n = e.n, x = e.x;
  switch (e.alg) {
    case Algorithm::ring: {
      const int64_t s = e.sw || ring % 2 == 0 ? 1 : -1;
      if (e.op == Op::a2a) return uint64_t(n - 1) * lane_blocks_elems(e, ring);
      return seg_elems(e, ring, e.op == Op::ag ? x : mod(int64_t(x) - s, n));
    }
    case Algorithm::direct:
      switch (e.op) {
        case Op::rs: return seg_elems(e, 0, (x + ring + 1) % n);
        case Op::ag: return seg_elems(e, 0, x);
        case Op::a2a: return digit_blocks_elems(e);
        default: return m_span.elems();  // broadcast
      }
    case Algorithm::halving_doubling: {
      if (e.op == Op::rs) {
        const uint32_t dist = n >> (e.sub + 1), lo = x & ~(2 * dist - 1);
        return (x & dist) ? segs_elems(e, lo, lo + dist) : segs_elems(e, lo + dist, lo + 2 * dist);
      }
      const uint32_t dist = 1u << e.sub, lo = x & ~(dist - 1);
      return segs_elems(e, lo, lo + dist);
    }
    case Algorithm::double_binary_tree: return tree_half_elems(e, ring);
  }
  return 0;
}

npu::Step NdChunk::shape(uint32_t phase, uint32_t ring, uint32_t t) const {
  const EPhase& e = m_phases[phase];
  const uint32_t n = e.n, x = e.x;
  npu::Step s;
  switch (e.alg) {
    case Algorithm::ring: {
      const int64_t sg = e.sw || ring % 2 == 0 ? 1 : -1;
      if (e.op == Op::a2a) {
        s.elems = lane_blocks_elems(e, ring);
        s.forward = t + 2 < n;
        s.forward_local = false;
        s.passthrough = uint64_t(n - 2 - t) * s.elems;
        return s;
      }
      const bool rs = e.op == Op::rs || (e.op == Op::ar && t < n - 1);
      if (rs) {
        s.reduce = true;
        s.elems = seg_elems(e, ring, mod(int64_t(x) - sg * (2 + t), n));
        s.forward = t < n - 2 || e.op == Op::ar;
      } else {
        const uint32_t a = e.op == Op::ar ? t - (n - 1) : t;
        s.elems = seg_elems(e, ring, mod(int64_t(x) - sg * (1 + a), n));
        s.forward = a < n - 2;
      }
      return s;
    }
    case Algorithm::direct:
      switch (e.op) {
        case Op::rs:
          s.elems = seg_elems(e, 0, x);
          s.reduce = true;
          break;
        case Op::ag: s.elems = seg_elems(e, 0, mod(int64_t(x) - (ring + 1), n)); break;
        case Op::a2a: s.elems = digit_blocks_elems(e); break;
        default: s.elems = m_span.elems(); break;
      }
      return s;
    case Algorithm::halving_doubling: {
      if (e.op == Op::rs) {
        const uint32_t dist = n >> (e.sub + 1), lo = x & ~(2 * dist - 1);
        s.elems = (x & dist) ? segs_elems(e, lo + dist, lo + 2 * dist) : segs_elems(e, lo, lo + dist);
        s.reduce = true;
        return s;
      }
      const uint32_t dist = 1u << e.sub, lo = (x ^ dist) & ~(dist - 1);
      s.elems = segs_elems(e, lo, lo + dist);
      return s;
    }
    case Algorithm::double_binary_tree:
      s.elems = tree_half_elems(e, ring);
      s.reduce = e.op == Op::tree_up;
      return s;
  }
  return s;
}

}  // namespace

std::shared_ptr<const npu::CollectivePlan> make_plan(const Communicator& comm, CollectiveKind kind, core::Dtype dtype,
                                                     uint64_t elems, uint32_t root, const PlanOptions& options,
                                                     uint32_t npu) {
  return std::make_shared<NdPlan>(comm, kind, dtype, elems, root, options, npu);
}

namespace {

class P2PChunk final : public npu::ChunkPlan {
 public:
  P2PChunk(bool sender, uint64_t lo, uint64_t hi) {
    m_span.ranges.emplace_back(lo, hi);
    (sender ? m_input : m_output) = m_span;
  }
  const Span& span() const override { return m_span; }
  const Span& input() const override { return m_input; }
  const Span& output() const override { return m_output; }
  Span first_send(uint32_t, uint32_t) const override { return m_span; }
  npu::Step step(uint32_t, uint32_t, uint32_t) const override {
    npu::Step s;
    s.local = m_span;
    return s;
  }

 private:
  Span m_span, m_input, m_output;
};

class P2PPlan final : public npu::CollectivePlan {
 public:
  P2PPlan(const Shape& sh, uint32_t src, uint32_t dst, core::Dtype dtype, uint64_t elems, const PlanOptions& o,
          uint32_t npu)
      : m_dtype(dtype), m_elems(elems), m_sender(npu == src) {
    if (src == dst) throw core::ConfigError(fmt::format("a transfer from npu{} to itself", src));
    if (npu != src && npu != dst) throw std::invalid_argument("p2p plan for an NPU that takes no part");
    const uint32_t es = core::dtype_bytes(dtype);
    uint64_t ce = o.chunks ? (elems + o.chunks - 1) / o.chunks : std::max<uint64_t>(1, o.chunk_bytes / es);
    ce = std::max<uint64_t>(1, ce);
    m_ce = ce;
    m_chunks = elems == 0 ? 0 : static_cast<uint32_t>((elems + ce - 1) / ce);
    if (m_sender) {
      m_role.next = dst;
      m_role.port = sh.next_port(src, dst, 0);
      m_role.sends_first = true;
    } else {
      m_role.next = src;
      m_role.receives = 1;
    }
    m_desc = fmt::format("send npu{} -> npu{}", src, dst);
  }
  CollectiveKind kind() const override { return CollectiveKind::broadcast; }
  core::Dtype dtype() const override { return m_dtype; }
  uint64_t elems() const override { return m_elems; }
  uint32_t chunks() const override { return m_chunks; }
  uint64_t chunk_capacity() const override { return std::min(m_ce, m_elems); }
  uint32_t align() const override { return 1; }
  uint32_t phases() const override { return 1; }
  uint32_t rings(uint32_t) const override { return 1; }
  npu::RingRole ring(uint32_t, uint32_t) const override { return m_role; }
  std::unique_ptr<npu::ChunkPlan> chunk(uint32_t c) const override {
    const uint64_t lo = uint64_t(c) * m_ce;
    return std::make_unique<P2PChunk>(m_sender, lo, std::min(m_elems, lo + m_ce));
  }
  std::string describe() const override { return m_desc; }

 private:
  core::Dtype m_dtype;
  uint64_t m_elems, m_ce = 1;
  bool m_sender;
  uint32_t m_chunks = 0;
  npu::RingRole m_role;
  std::string m_desc;
};

}  // namespace

std::shared_ptr<const npu::CollectivePlan> make_p2p_plan(const Shape& shape, uint32_t src, uint32_t dst,
                                                         core::Dtype dtype, uint64_t elems, const PlanOptions& options,
                                                         uint32_t npu) {
  return std::make_shared<P2PPlan>(shape, src, dst, dtype, elems, options, npu);
}

uint32_t p2p_id(const Shape& shape, uint32_t src, uint32_t dst) {
  if (uint64_t(shape.npus()) * shape.npus() >= (uint64_t(1) << 31))
    throw core::ConfigError(fmt::format("point-to-point transfers on {} NPUs: at most 46340", shape.npus()));
  return 0x80000000u | static_cast<uint32_t>((uint64_t(src) * shape.npus() + dst) & 0x7fffffffu);
}

void run_reference(const Communicator& comm, const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                   std::vector<std::vector<uint8_t>>& inputs) {
  run_plans(
      plans, [&comm](uint32_t npu) { return comm.rank_of(npu); }, inputs);
}

}  // namespace fabricvp::collectives::ndim
