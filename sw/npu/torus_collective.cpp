#include "sw/npu/torus_collective.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fabricvp::npu {

const char* dim_name(uint32_t d) {
  switch (d) {
    case kLocal: return "local";
    case kVertical: return "vertical";
    case kHorizontal: return "horizontal";
  }
  return "?";
}

const char* phase_kind_name(PhaseKind k) {
  switch (k) {
    case PhaseKind::reduce_scatter: return "reduce-scatter";
    case PhaseKind::all_gather: return "all-gather";
    case PhaseKind::all_reduce: return "all-reduce";
  }
  return "?";
}

uint32_t TorusShape::step(uint32_t npu, uint32_t d, int delta) const {
  std::array<uint32_t, 3> c = coord(npu);
  const int64_t n = size[d];
  c[d] = static_cast<uint32_t>(((static_cast<int64_t>(c[d]) + delta) % n + n) % n);
  return id(c);
}

uint64_t Span::elems() const {
  uint64_t n = 0;
  for (const auto& r : ranges) n += r.second - r.first;
  return n;
}

Span Span::sub(uint64_t from, uint64_t to) const {
  Span out;
  uint64_t base = 0;
  for (const auto& r : ranges) {
    const uint64_t len = r.second - r.first;
    const uint64_t lo = std::max(from, base), hi = std::min(to, base + len);
    if (lo < hi) out.ranges.emplace_back(r.first + (lo - base), r.first + (hi - base));
    base += len;
  }
  return out;
}

Span split(const Span& s, uint32_t k, uint32_t i, uint32_t align) {
  const uint64_t total = s.elems();
  const uint64_t units = (total + align - 1) / align;
  const uint64_t base = units / k, extra = units % k;
  const uint64_t u0 = i * base + std::min<uint64_t>(i, extra);
  const uint64_t u1 = u0 + base + (i < extra ? 1 : 0);
  return s.sub(std::min(total, u0 * align), std::min(total, u1 * align));
}

std::vector<Phase> allreduce_phases(const std::string& algorithm) {
  if (algorithm == "enhanced")
    return {{PhaseKind::reduce_scatter, kLocal},
            {PhaseKind::all_reduce, kVertical},
            {PhaseKind::all_reduce, kHorizontal},
            {PhaseKind::all_gather, kLocal}};
  if (algorithm == "baseline")
    return {{PhaseKind::all_reduce, kLocal}, {PhaseKind::all_reduce, kVertical}, {PhaseKind::all_reduce, kHorizontal}};
  throw std::invalid_argument("unknown all-reduce algorithm '" + algorithm + "'");
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

uint32_t phase_steps(PhaseKind k, uint32_t n) {
  if (n < 2) return 0;
  return k == PhaseKind::all_reduce ? 2 * (n - 1) : n - 1;
}

namespace {
uint32_t mod(int64_t a, uint32_t n) { return static_cast<uint32_t>(((a % n) + n) % n); }
}  // namespace

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

uint32_t first_send_segment(PhaseKind k, uint32_t n, uint32_t p) {
  return k == PhaseKind::all_gather ? (p + 1) % n : p;
}

Span segment(const Span& span, uint32_t K, uint32_t q, uint32_t n, uint32_t seg, uint32_t align) {
  return split(split(span, K, q, align), n, seg, align);
}

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
    }
  }
  return out;
}

void reference_chunk(const TorusShape& t, const std::vector<Phase>& phases, uint32_t align, uint64_t chunk_first,
                     uint64_t elems, uint32_t esize, std::vector<std::vector<uint8_t>>& x,
                     const std::function<void(uint8_t*, const uint8_t*, uint64_t)>& add) {
  Span chunk;
  chunk.ranges.emplace_back(chunk_first, chunk_first + elems);
  // Spans of every NPU (members of one ring share them).
  std::vector<std::vector<Span>> spans(t.npus());
  for (uint32_t i = 0; i < t.npus(); ++i) spans[i] = phase_spans(t, phases, i, chunk, align);
  std::vector<uint8_t> acc;
  for (size_t ph = 0; ph < phases.size(); ++ph) {
    const Phase& phase = phases[ph];
    const uint32_t d = phase.dim, n = t.size[d], K = t.rings[d];
    if (n < 2) continue;
    for (uint32_t start = 0; start < t.npus(); ++start) {
      if (t.coord(start)[d] != 0) continue;
      for (uint32_t q = 0; q < K; ++q) {
        std::vector<uint32_t> m(n);
        for (uint32_t p = 0; p < n; ++p) m[p] = t.step(start, d, q % 2 == 0 ? int(p) : -int(p));
        for (uint32_t k = 0; k < n; ++k) {
          const Span seg = segment(spans[m[0]][ph], K, q, n, k, align);
          for (const auto& r : seg.ranges) {
            const uint64_t off = (r.first - chunk_first) * esize, len = (r.second - r.first) * esize;
            if (phase.kind != PhaseKind::all_gather) {
              // Starts at member k, each next member adds its own, ends at member k - 1.
              acc.assign(x[m[k]].begin() + off, x[m[k]].begin() + off + len);
              for (uint32_t j = 1; j < n; ++j) {
                std::vector<uint8_t>& mine = x[m[(k + j) % n]];
                add(acc.data(), mine.data() + off, len);
                std::memcpy(mine.data() + off, acc.data(), len);
              }
            }
            if (phase.kind != PhaseKind::reduce_scatter) {
              const std::vector<uint8_t>& owner = x[m[(k + n - 1) % n]];
              for (uint32_t j = 0; j < n; ++j)
                if (m[j] != m[(k + n - 1) % n]) std::memcpy(x[m[j]].data() + off, owner.data() + off, len);
            }
          }
        }
      }
    }
  }
}

}  // namespace fabricvp::npu
