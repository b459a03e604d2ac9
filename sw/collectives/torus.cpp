#include "sw/collectives/torus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

#include "models/core/config.h"

namespace fabricvp::collectives {

const char* dim_name(uint32_t d) {
  switch (d) {
    case kLocal: return "local";
    case kVertical: return "vertical";
    case kHorizontal: return "horizontal";
  }
  return "?";
}

uint32_t TorusShape::step(uint32_t npu, uint32_t d, int delta) const {
  std::array<uint32_t, 3> c = coord(npu);
  const int64_t n = size[d];
  c[d] = static_cast<uint32_t>(((static_cast<int64_t>(c[d]) + delta) % n + n) % n);
  return id(c);
}

uint32_t TorusShape::port(uint32_t d, uint32_t q) const {
  uint32_t base = 0;
  for (uint32_t k = 0; k < d; ++k) base += rings[k];
  return base + q;
}

RingPos ring_pos(const TorusShape& t, uint32_t npu, uint32_t d, uint32_t q) {
  RingPos r;
  r.n = t.size[d];
  const uint32_t c = t.coord(npu)[d];
  const bool plus = q % 2 == 0;
  r.pos = plus ? c : (r.n - c) % r.n;
  r.next = t.step(npu, d, plus ? 1 : -1);
  r.prev = t.step(npu, d, plus ? -1 : 1);
  return r;
}

// ---- communicators ----------------------------------------------------------

Communicator::Communicator(const TorusShape& shape, std::vector<uint32_t> dims, uint32_t any)
    : m_shape(shape), m_dims(std::move(dims)) {
  uint32_t mask = 0;
  for (uint32_t d : m_dims) {
    if (d > 2 || (mask >> d & 1u)) throw std::invalid_argument("communicator dimensions must be distinct, 0..2");
    mask |= 1u << d;
    m_size *= m_shape.size[d];
  }
  m_base = m_shape.coord(any);
  for (uint32_t d : m_dims) m_base[d] = 0;
  m_id = (mask << 24) | m_shape.id(m_base);
}

bool Communicator::contains(uint32_t npu) const {
  const auto c = m_shape.coord(npu);
  for (uint32_t d = 0; d < 3; ++d)
    if (std::find(m_dims.begin(), m_dims.end(), d) == m_dims.end() && c[d] != m_base[d]) return false;
  return true;
}

uint32_t Communicator::rank_of(uint32_t npu) const {
  if (!contains(npu)) throw std::invalid_argument(fmt::format("npu{} is not in communicator {}", npu, describe()));
  const auto c = m_shape.coord(npu);
  uint32_t r = 0, stride = 1;
  for (uint32_t d : m_dims) {
    r += c[d] * stride;
    stride *= m_shape.size[d];
  }
  return r;
}

uint32_t Communicator::npu_of(uint32_t rank) const {
  auto c = m_base;
  for (uint32_t d : m_dims) {
    c[d] = rank % m_shape.size[d];
    rank /= m_shape.size[d];
  }
  return m_shape.id(c);
}

std::string Communicator::describe() const {
  std::string dims;
  for (uint32_t d : m_dims) dims += (dims.empty() ? "" : "+") + std::string(dim_name(d));
  return fmt::format("{} through npu{} ({} NPUs)", dims.empty() ? "none" : dims, m_shape.id(m_base), m_size);
}

std::vector<Communicator> Communicator::partition(const TorusShape& shape, const std::vector<uint32_t>& dims) {
  std::vector<Communicator> out;
  for (uint32_t n = 0; n < shape.npus(); ++n) {
    Communicator c(shape, dims, n);
    if (c.npu_of(0) == n) out.push_back(std::move(c));
  }
  return out;
}

std::vector<uint32_t> Communicator::parse_dims(const std::string& text) {
  if (text == "all") return {kLocal, kVertical, kHorizontal};
  std::vector<uint32_t> dims;
  std::string item;
  std::stringstream ss(text);
  while (std::getline(ss, item, text.find('+') != std::string::npos ? '+' : ',')) {
    uint32_t d;
    if (item == "local" || item == "l")
      d = kLocal;
    else if (item == "vertical" || item == "v")
      d = kVertical;
    else if (item == "horizontal" || item == "h")
      d = kHorizontal;
    else
      throw core::ConfigError(fmt::format(
          "group '{}': unknown dimension '{}' (all, or local, vertical, horizontal joined by '+')", text, item));
    if (std::find(dims.begin(), dims.end(), d) != dims.end())
      throw core::ConfigError(fmt::format("group '{}': dimension '{}' given twice", text, item));
    dims.push_back(d);
  }
  if (dims.empty()) throw core::ConfigError(fmt::format("group '{}': no dimension", text));
  return dims;
}

// ---- ring phases ------------------------------------------------------------

namespace {

enum class PhaseKind : uint8_t { reduce_scatter, all_gather, all_reduce, chain, alltoall };

const char* phase_kind_name(PhaseKind k) {
  switch (k) {
    case PhaseKind::reduce_scatter: return "reduce-scatter";
    case PhaseKind::all_gather: return "all-gather";
    case PhaseKind::all_reduce: return "all-reduce";
    case PhaseKind::chain: return "chain";
    case PhaseKind::alltoall: return "all-to-all";
  }
  return "?";
}

struct Phase {
  PhaseKind kind;
  uint32_t dim;
  uint32_t level;  ///< index of `dim` among the communicator's dimensions
};

uint32_t mod(int64_t a, uint32_t n) { return static_cast<uint32_t>(((a % n) + n) % n); }

/// Messages a member receives in a reduce-scatter / all-gather / all-reduce on a ring of n.
uint32_t phase_steps(PhaseKind k, uint32_t n) {
  if (n < 2) return 0;
  return k == PhaseKind::all_reduce ? 2 * (n - 1) : n - 1;
}

/// What step t of a reduce-scatter / all-gather / all-reduce does at ring position p.
struct StepPlan {
  bool reduce = false;
  uint32_t recv_segment = 0;
  bool forward = false;
};

StepPlan step_plan(PhaseKind k, uint32_t n, uint32_t p, uint32_t t) {
  StepPlan s;
  const bool rs = k == PhaseKind::reduce_scatter || (k == PhaseKind::all_reduce && t < n - 1);
  if (rs) {
    s.reduce = true;
    s.recv_segment = mod(int64_t(p) - t - 1, n);
    s.forward = t < n - 2 || k == PhaseKind::all_reduce;
  } else {
    const uint32_t a = k == PhaseKind::all_reduce ? t - (n - 1) : t;  // all-gather step
    s.reduce = false;
    s.recv_segment = mod(int64_t(p) - a, n);
    s.forward = a < n - 2;
  }
  return s;
}

/// Segment a member sends from its own data at step 0.
uint32_t first_send_segment(PhaseKind k, uint32_t n, uint32_t p) {
  return k == PhaseKind::all_gather ? (p + 1) % n : p;
}

/// Segment `seg` of ring q's part of `span` (ring of n members, K rings).
Span segment(const Span& span, uint32_t K, uint32_t q, uint32_t n, uint32_t seg, uint32_t align) {
  return split(split(span, K, q, align), n, seg, align);
}

/// Allreduce: the span each phase of one chunk works on at one NPU (an
/// all-gather's full span; a reduce-scatter's input).
std::vector<Span> phase_spans(const TorusShape& t, const std::vector<Phase>& phases, uint32_t npu, const Span& chunk,
                              uint32_t align) {
  std::vector<Span> out;
  std::vector<Span> stack;
  Span cur = chunk;
  for (const Phase& ph : phases) {
    switch (ph.kind) {
      case PhaseKind::reduce_scatter: {
        out.push_back(cur);
        stack.push_back(cur);
        Span owned;
        const uint32_t K = t.rings[ph.dim];
        for (uint32_t q = 0; q < K; ++q) {
          RingPos r = ring_pos(t, npu, ph.dim, q);
          Span s = segment(cur, K, q, r.n, (r.pos + 1) % r.n, align);
          owned.ranges.insert(owned.ranges.end(), s.ranges.begin(), s.ranges.end());
        }
        cur = owned;
        break;
      }
      case PhaseKind::all_reduce: out.push_back(cur); break;
      case PhaseKind::all_gather:
        if (stack.empty()) throw std::invalid_argument("all-gather phase without a reduce-scatter before it");
        cur = stack.back();
        stack.pop_back();
        out.push_back(cur);
        break;
      default: throw std::invalid_argument("not an all-reduce phase");
    }
  }
  return out;
}

std::vector<Phase> phases_of(CollectiveKind kind, const std::string& algorithm, const std::vector<uint32_t>& dims) {
  std::vector<Phase> ph;
  const uint32_t D = static_cast<uint32_t>(dims.size());
  switch (kind) {
    case CollectiveKind::allreduce:
      if (algorithm == "baseline" || D == 1) {
        for (uint32_t i = 0; i < D; ++i) ph.push_back({PhaseKind::all_reduce, dims[i], i});
      } else if (algorithm == "enhanced") {
        ph.push_back({PhaseKind::reduce_scatter, dims[0], 0});
        for (uint32_t i = 1; i < D; ++i) ph.push_back({PhaseKind::all_reduce, dims[i], i});
        ph.push_back({PhaseKind::all_gather, dims[0], 0});
      } else {
        throw core::ConfigError(fmt::format("unknown all-reduce algorithm '{}' (enhanced, baseline)", algorithm));
      }
      break;
    case CollectiveKind::reducescatter:
      for (uint32_t i = 0; i < D; ++i) ph.push_back({PhaseKind::reduce_scatter, dims[i], i});
      break;
    case CollectiveKind::allgather:
      for (uint32_t i = 0; i < D; ++i) ph.push_back({PhaseKind::all_gather, dims[i], i});
      break;
    case CollectiveKind::alltoall:
      for (uint32_t i = 0; i < D; ++i) ph.push_back({PhaseKind::alltoall, dims[i], i});
      break;
    case CollectiveKind::broadcast:
      for (uint32_t i = 0; i < D; ++i) ph.push_back({PhaseKind::chain, dims[i], i});
      break;
  }
  return ph;
}

bool block_kind(CollectiveKind k) {
  return k == CollectiveKind::reducescatter || k == CollectiveKind::allgather || k == CollectiveKind::alltoall;
}

// ---- the plan -------------------------------------------------------------------

class TorusPlan final : public npu::CollectivePlan {
 public:
  TorusPlan(const Communicator& comm, CollectiveKind kind, core::Dtype dtype, uint64_t elems, uint32_t root,
            const PlanOptions& o, uint32_t npu)
      : m_comm(comm),
        m_kind(kind),
        m_dtype(dtype),
        m_elems(elems),
        m_root(root),
        m_align(o.align),
        m_npu(npu),
        m_rank(comm.rank_of(npu)),
        m_N(comm.size()),
        m_phases(phases_of(kind, o.algorithm, comm.dims())) {
    const uint32_t es = core::dtype_bytes(dtype);
    if (es == 0) throw core::ConfigError("collective without an element type");
    if (m_align == 0) throw core::ConfigError("collective.align_elems must be at least 1");
    if (kind == CollectiveKind::broadcast && root >= m_N)
      throw core::ConfigError(fmt::format("--root {}: the communicator has {} members", root, m_N));
    uint64_t ce = o.chunk_bytes / es;
    ce -= ce % m_align;
    if (ce == 0)
      throw core::ConfigError(fmt::format("collective.chunk_kib: {} bytes hold fewer than align_elems ({}) {} elements",
                                          o.chunk_bytes, m_align, core::dtype_name(dtype)));
    if (block_kind(kind)) {
      if (elems % m_N != 0)
        throw core::ConfigError(
            fmt::format("a {} of {} elements over {} members: the element count must be a multiple "
                        "of the members (nccl-tests convention: --bytes is the whole buffer)",
                        npu::collective_name(kind), elems, m_N));
      m_block = elems / m_N;
      // A chunk takes the same slice of every block; its working set is about
      // chunk_bytes, but each block's slice gives every ring at least `align`
      // elements, or the rings beyond the first would carry nothing.
      uint32_t kmax = 1;
      for (uint32_t d : comm.dims()) kmax = std::max(kmax, comm.shape().rings[d]);
      m_ce = std::max<uint64_t>(uint64_t(m_align) * kmax, (ce / m_N) / m_align * m_align);
      m_chunks = static_cast<uint32_t>((m_block + m_ce - 1) / m_ce);
      m_capacity = m_N * std::min(m_ce, m_block);
    } else {
      m_ce = ce;
      m_chunks = static_cast<uint32_t>((elems + ce - 1) / ce);
      m_capacity = ce;
    }
    // Mixed-radix digits of block numbers (= member ranks) over the spanned dimensions.
    uint32_t stride = 1;
    const auto me = comm.shape().coord(npu);
    const auto root_c = comm.shape().coord(comm.npu_of(kind == CollectiveKind::broadcast ? root : 0));
    for (uint32_t d : comm.dims()) {
      m_stride.push_back(stride);
      m_radix.push_back(comm.shape().size[d]);
      m_mine.push_back(me[d]);
      m_root_digit.push_back(root_c[d]);
      stride *= comm.shape().size[d];
    }
    for (const Phase& ph : m_phases) {
      m_desc += fmt::format("{}{} {}", m_desc.empty() ? "" : ", ", phase_kind_name(ph.kind), dim_name(ph.dim));
      const uint32_t K = comm.shape().rings[ph.dim];
      std::vector<npu::RingRole> roles(K);
      for (uint32_t q = 0; q < K; ++q) roles[q] = role(ph, q);
      m_roles.push_back(std::move(roles));
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
  std::unique_ptr<npu::ChunkPlan> chunk(uint32_t c) const override;
  std::string describe() const override { return m_desc; }

  const Communicator& comm() const { return m_comm; }
  uint32_t rank() const { return m_rank; }
  uint32_t root() const { return m_root; }

  // For the chunk plans.
  const std::vector<Phase>& phase_list() const { return m_phases; }
  const TorusShape& shape() const { return m_comm.shape(); }
  uint32_t npu() const { return m_npu; }
  uint32_t members() const { return m_N; }
  uint64_t block() const { return m_block; }
  uint64_t chunk_elems() const { return m_ce; }
  uint32_t digit(uint32_t b, uint32_t level) const { return b / m_stride[level] % m_radix[level]; }
  uint32_t my_digit(uint32_t level) const { return m_mine[level]; }
  uint32_t levels() const { return static_cast<uint32_t>(m_stride.size()); }

 private:
  npu::RingRole role(const Phase& ph, uint32_t q) const {
    const RingPos rp = ring_pos(shape(), m_npu, ph.dim, q);
    npu::RingRole r;
    r.port = shape().port(ph.dim, q);
    r.next = rp.next;
    if (rp.n < 2) return r;
    switch (ph.kind) {
      case PhaseKind::reduce_scatter:
      case PhaseKind::all_gather:
      case PhaseKind::all_reduce:
        r.receives = phase_steps(ph.kind, rp.n);
        r.sends_first = r.receives > 0;
        break;
      case PhaseKind::alltoall:
        r.receives = rp.n - 1;
        r.sends_first = true;
        break;
      case PhaseKind::chain: {
        // Only the rings through the members that hold the data: those whose
        // later dimensions match the root's.
        for (uint32_t l = ph.level + 1; l < levels(); ++l)
          if (m_mine[l] != m_root_digit[l]) return r;
        const uint32_t rd = m_root_digit[ph.level];
        const uint32_t root_pos = q % 2 == 0 ? rd : (rp.n - rd) % rp.n;
        const uint32_t j = mod(int64_t(rp.pos) - root_pos, rp.n);
        if (j == 0) {
          r.sends_first = true;
        } else {
          r.receives = 1;
          r.first_step = j - 1;
        }
        break;
      }
    }
    return r;
  }

  Communicator m_comm;
  CollectiveKind m_kind;
  core::Dtype m_dtype;
  uint64_t m_elems;
  uint32_t m_root;
  uint32_t m_align;
  uint32_t m_npu, m_rank, m_N;
  std::vector<Phase> m_phases;
  std::vector<std::vector<npu::RingRole>> m_roles;  // [phase][ring]
  std::vector<uint32_t> m_stride, m_radix, m_mine, m_root_digit;
  uint64_t m_block = 0, m_ce = 0, m_capacity = 0;
  uint32_t m_chunks = 0;
  std::string m_desc;
};

/// Allreduce: the hierarchical ring algorithm of seed 001 on one chunk range.
class AllreduceChunk final : public npu::ChunkPlan {
 public:
  AllreduceChunk(const TorusPlan& p, uint32_t c) : m_p(p) {
    const uint64_t first = uint64_t(c) * p.chunk_elems();
    m_span.ranges.emplace_back(first, std::min(p.elems(), first + p.chunk_elems()));
    m_spans = phase_spans(p.shape(), p.phase_list(), p.npu(), m_span, p.align());
  }
  const Span& span() const override { return m_span; }
  const Span& input() const override { return m_span; }
  const Span& output() const override { return m_span; }
  Span first_send(uint32_t phase, uint32_t q) const override {
    const Phase& ph = m_p.phase_list()[phase];
    const RingPos rp = ring_pos(m_p.shape(), m_p.npu(), ph.dim, q);
    return segment(m_spans[phase], m_p.shape().rings[ph.dim], q, rp.n, first_send_segment(ph.kind, rp.n, rp.pos),
                   m_p.align());
  }
  npu::Step step(uint32_t phase, uint32_t q, uint32_t t) const override {
    const Phase& ph = m_p.phase_list()[phase];
    const RingPos rp = ring_pos(m_p.shape(), m_p.npu(), ph.dim, q);
    const StepPlan sp = step_plan(ph.kind, rp.n, rp.pos, t);
    npu::Step s;
    s.local = segment(m_spans[phase], m_p.shape().rings[ph.dim], q, rp.n, sp.recv_segment, m_p.align());
    s.reduce = sp.reduce;
    s.forward = sp.forward;
    return s;
  }

 private:
  const TorusPlan& m_p;
  Span m_span;
  std::vector<Span> m_spans;
};

/// Broadcast: the chunk range, passed on around every ring of a phase.
class BroadcastChunk final : public npu::ChunkPlan {
 public:
  BroadcastChunk(const TorusPlan& p, uint32_t c) : m_p(p) {
    const uint64_t first = uint64_t(c) * p.chunk_elems();
    m_span.ranges.emplace_back(first, std::min(p.elems(), first + p.chunk_elems()));
    (p.rank() == p.root() ? m_input : m_output) = m_span;
  }
  const Span& span() const override { return m_span; }
  const Span& input() const override { return m_input; }
  const Span& output() const override { return m_output; }
  Span first_send(uint32_t phase, uint32_t q) const override { return part(phase, q); }
  npu::Step step(uint32_t phase, uint32_t q, uint32_t) const override {
    const Phase& ph = m_p.phase_list()[phase];
    const RingPos rp = ring_pos(m_p.shape(), m_p.npu(), ph.dim, q);
    const npu::RingRole role = m_p.ring(phase, q);
    npu::Step s;
    s.local = part(phase, q);
    s.forward = role.first_step + 2 < rp.n;  // distance j = first_step + 1 < n - 1
    return s;
  }

 private:
  Span part(uint32_t phase, uint32_t q) const {
    const Phase& ph = m_p.phase_list()[phase];
    return split(m_span, m_p.shape().rings[ph.dim], q, m_p.align());
  }
  const TorusPlan& m_p;
  Span m_span, m_input, m_output;
};

/// Reduce-scatter, all-gather, all-to-all: the same slice of every block.
class BlockChunk final : public npu::ChunkPlan {
 public:
  BlockChunk(const TorusPlan& p, uint32_t c) : m_p(p) {
    const uint64_t lo = uint64_t(c) * p.chunk_elems(), hi = std::min(p.block(), lo + p.chunk_elems());
    for (uint32_t b = 0; b < p.members(); ++b) {
      const uint64_t base = uint64_t(b) * p.block();
      m_pieces.push_back(Span{{{base + lo, base + hi}}});
      m_span.append(m_pieces.back());
    }
    const Span& own = m_pieces[p.rank()];
    switch (p.kind()) {
      case CollectiveKind::reducescatter:
        m_input = m_span;
        m_output = own;
        break;
      case CollectiveKind::allgather:
        m_input = own;
        m_output = m_span;
        break;
      default:
        m_input = m_span;
        m_output = m_span;
        break;
    }
  }
  const Span& span() const override { return m_span; }
  const Span& input() const override { return m_input; }
  const Span& output() const override { return m_output; }

  Span first_send(uint32_t phase, uint32_t q) const override {
    const Phase& ph = m_p.phase_list()[phase];
    const RingPos rp = ring_pos(m_p.shape(), m_p.npu(), ph.dim, q);
    if (ph.kind == PhaseKind::alltoall) {
      // The blocks for the members 1 .. n-1 positions ahead, in that order.
      Span s;
      for (uint32_t j = 1; j < rp.n; ++j) s.append(digit_blocks(ph, q, coord_at(q, rp.n, (rp.pos + j) % rp.n), false));
      return s;
    }
    return seg(ph, q, rp, first_send_segment(ph.kind, rp.n, rp.pos));
  }

  npu::Step step(uint32_t phase, uint32_t q, uint32_t t) const override {
    const Phase& ph = m_p.phase_list()[phase];
    const RingPos rp = ring_pos(m_p.shape(), m_p.npu(), ph.dim, q);
    npu::Step s;
    if (ph.kind == PhaseKind::alltoall) {
      // From the member t + 1 positions behind: the blocks for this member
      // (stored in the slots of the origin's coordinate), then those for
      // the n - 2 - t members after it.
      const uint32_t origin = coord_at(q, rp.n, mod(int64_t(rp.pos) - 1 - t, rp.n));
      s.local = digit_blocks(ph, q, origin, false);
      s.forward = t + 2 < rp.n;
      s.forward_local = false;
      s.passthrough = uint64_t(rp.n - 2 - t) * s.local.elems();
      return s;
    }
    const StepPlan sp = step_plan(ph.kind, rp.n, rp.pos, t);
    s.local = seg(ph, q, rp, sp.recv_segment);
    s.reduce = sp.reduce;
    s.forward = sp.forward;
    return s;
  }

 private:
  /// Coordinate (in the phase's dimension) of ring position `pos` of ring q.
  static uint32_t coord_at(uint32_t q, uint32_t n, uint32_t pos) { return q % 2 == 0 ? pos : (n - pos) % n; }

  /// Ring q's piece of every block of the phase's working set whose digit in
  /// the phase's dimension is g. `within`: only blocks whose other digits
  /// match this member's where the phase requires it (reduce-scatter: the
  /// earlier dimensions; all-gather: the later ones); all-to-all: every block.
  Span digit_blocks(const Phase& ph, uint32_t q, uint32_t g, bool within) const {
    const uint32_t K = m_p.shape().rings[ph.dim];
    Span s;
    for (uint32_t b = 0; b < m_p.members(); ++b) {
      if (m_p.digit(b, ph.level) != g) continue;
      if (within) {
        bool ok = true;
        for (uint32_t l = 0; l < m_p.levels() && ok; ++l) {
          const bool fixed = ph.kind == PhaseKind::reduce_scatter ? l < ph.level : l > ph.level;
          if (fixed && m_p.digit(b, l) != m_p.my_digit(l)) ok = false;
        }
        if (!ok) continue;
      }
      s.append(split(m_pieces[b], K, q, m_p.align()));
    }
    return s;
  }

  /// Segment `s` of ring q in a reduce-scatter or all-gather phase: the blocks
  /// whose digit is the one that ring position ends up owning segment s.
  Span seg(const Phase& ph, uint32_t q, const RingPos& rp, uint32_t s) const {
    const uint32_t n = rp.n;
    // Position p owns segment (p + 1) mod n at the end of a reduce-scatter (and
    // from the start of an all-gather); the member at coordinate x owns digit x.
    const uint32_t g = q % 2 == 0 ? (s + n - 1) % n : (n + 1 - s) % n;
    return digit_blocks(ph, q, g, true);
  }

  const TorusPlan& m_p;
  std::vector<Span> m_pieces;  // this chunk's slice of every block
  Span m_span, m_input, m_output;
};

std::unique_ptr<npu::ChunkPlan> TorusPlan::chunk(uint32_t c) const {
  switch (m_kind) {
    case CollectiveKind::allreduce: return std::make_unique<AllreduceChunk>(*this, c);
    case CollectiveKind::broadcast: return std::make_unique<BroadcastChunk>(*this, c);
    default: return std::make_unique<BlockChunk>(*this, c);
  }
}

}  // namespace

std::shared_ptr<const npu::CollectivePlan> make_plan(const Communicator& comm, CollectiveKind kind, core::Dtype dtype,
                                                     uint64_t elems, uint32_t root, const PlanOptions& options,
                                                     uint32_t npu) {
  return std::make_shared<TorusPlan>(comm, kind, dtype, elems, root, options, npu);
}

// ---- host side --------------------------------------------------------------

void run_reference(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                   std::vector<std::vector<uint8_t>>& bufs) {
  if (plans.empty()) return;
  const Communicator& comm = dynamic_cast<const TorusPlan&>(*plans[0]).comm();
  run_plans(
      plans, [&comm](uint32_t npu) { return comm.rank_of(npu); }, bufs);
}

}  // namespace fabricvp::collectives
