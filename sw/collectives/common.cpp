#include "sw/collectives/common.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

namespace fabricvp::collectives {

namespace {
/// Elements [first, second) of the concatenation that part i of k holds.
std::pair<uint64_t, uint64_t> split_range(uint64_t total, uint32_t k, uint32_t i, uint32_t align) {
  const uint64_t units = (total + align - 1) / align;
  const uint64_t base = units / k, extra = units % k;
  const uint64_t u0 = i * base + std::min<uint64_t>(i, extra);
  const uint64_t u1 = u0 + base + (i < extra ? 1 : 0);
  return {std::min(total, u0 * align), std::min(total, u1 * align)};
}
}  // namespace

Span split(const Span& s, uint32_t k, uint32_t i, uint32_t align) {
  const auto [from, to] = split_range(s.elems(), k, i, align);
  return s.sub(from, to);
}

uint64_t split_elems(uint64_t total, uint32_t k, uint32_t i, uint32_t align) {
  const auto [from, to] = split_range(total, k, i, align);
  return to - from;
}

namespace {

/// One member's copy of the elements of one chunk (its span(), in span
/// order), or of its whole buffer: element e of the buffer lives at byte
/// offset of(e) * es of `data`.
struct Window {
  struct Piece {
    uint64_t from, to, at;  ///< elements [from, to) of the buffer at window element `at`
  };
  std::vector<Piece> pieces;  ///< sorted by `from`
  uint8_t* data = nullptr;

  void map(const Span& s) {
    pieces.clear();
    uint64_t at = 0;
    for (const auto& [a, b] : s.ranges) {
      pieces.push_back(Piece{a, b, at});
      at += b - a;
    }
    std::sort(pieces.begin(), pieces.end(), [](const Piece& x, const Piece& y) { return x.from < y.from; });
  }
  /// Calls f(window element, count) for the parts of buffer elements [a, b).
  template <typename F>
  void each(uint64_t a, uint64_t b, F&& f) const {
    auto it = std::upper_bound(pieces.begin(), pieces.end(), a, [](uint64_t e, const Piece& p) { return e < p.from; });
    if (it == pieces.begin()) throw std::logic_error("reference: a step's elements lie outside its chunk");
    --it;
    while (a < b) {
      if (it == pieces.end() || a < it->from || a >= it->to)
        throw std::logic_error("reference: a step's elements lie outside its chunk");
      const uint64_t n = std::min(b, it->to) - a;
      f(it->at + (a - it->from), n);
      a += n;
      ++it;
    }
  }
};

/// Replay chunk `c` of every member's plan on its window, phase by phase and
/// step by step as the model does (core::add for every reduction).
void replay_chunk(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                  const std::function<uint32_t(uint32_t)>& rank_of,
                  const std::vector<std::unique_ptr<npu::ChunkPlan>>& cp, std::vector<Window>& win,
                  std::vector<std::vector<uint8_t>>& spare) {
  const npu::CollectivePlan& p0 = *plans[0];
  const uint32_t N = static_cast<uint32_t>(plans.size());
  const uint32_t es = p0.esize();
  const core::Dtype dt = p0.dtype();
  // Message buffers are recycled: a fresh one per message would fault in
  // (and zero) new pages for every message of a large collective.
  auto take = [&] {
    if (spare.empty()) return std::vector<uint8_t>();
    std::vector<uint8_t> v = std::move(spare.back());
    spare.pop_back();
    v.clear();
    return v;
  };
  auto gather = [&](uint32_t r, const Span& s) {
    std::vector<uint8_t> out = take();
    out.reserve(s.elems() * es);
    for (const auto& [a, b] : s.ranges)
      win[r].each(a, b, [&](uint64_t at, uint64_t n) {
        out.insert(out.end(), win[r].data + at * es, win[r].data + (at + n) * es);
      });
    return out;
  };
  for (uint32_t ph = 0; ph < p0.phases(); ++ph) {
    // Every member sends its first messages of every ring when the phase
    // starts, before it receives anything in it (as the engine does).
    const uint32_t K = p0.rings(ph);
    std::vector<std::map<std::pair<uint32_t, uint32_t>, std::vector<uint8_t>>> mails(K);
    std::vector<std::vector<npu::RingRole>> roles(K, std::vector<npu::RingRole>(N));
    for (uint32_t q = 0; q < K; ++q)
      for (uint32_t r = 0; r < N; ++r) {
        roles[q][r] = plans[r]->ring(ph, q);
        if (roles[q][r].sends_first) mails[q][{rank_of(roles[q][r].next), 0}] = gather(r, cp[r]->first_send(ph, q));
      }
    for (uint32_t q = 0; q < K; ++q) {
      // Messages in flight, by (receiving rank, message step); processed in step order.
      auto& mail = mails[q];
      const std::vector<npu::RingRole>& role = roles[q];
      std::vector<uint32_t> done(N, 0);  // receives taken per rank
      uint32_t steps = 0;
      for (uint32_t r = 0; r < N; ++r) steps = std::max(steps, role[r].first_step + role[r].receives);
      for (uint32_t step = 0; step < steps; ++step) {
        for (uint32_t r = 0; r < N; ++r) {
          if (done[r] >= role[r].receives || role[r].first_step + done[r] != step) continue;
          auto it = mail.find({r, step});
          if (it == mail.end()) throw std::logic_error("reference: a ring step's message was never sent");
          std::vector<uint8_t> in = std::move(it->second);
          mail.erase(it);
          const npu::Step s = cp[r]->step(ph, q, done[r]++);
          uint64_t off = 0;
          for (const auto& [a, b] : s.local.ranges)
            win[r].each(a, b, [&](uint64_t at, uint64_t n) {
              uint8_t* mine = win[r].data + at * es;
              if (s.reduce)
                core::add(dt, mine, in.data() + off, mine, n * es);
              else
                std::memcpy(mine, in.data() + off, n * es);
              off += n * es;
            });
          if (s.forward) {
            std::vector<uint8_t> out = s.forward_local ? gather(r, s.local) : take();
            out.insert(out.end(), in.begin() + static_cast<int64_t>(off),
                       in.begin() + static_cast<int64_t>(off + s.passthrough * es));
            mail[{rank_of(role[r].next), step + 1}] = std::move(out);
          }
          spare.push_back(std::move(in));
        }
      }
      if (!mail.empty()) throw std::logic_error("reference: messages left undelivered in a ring phase");
      for (uint32_t r = 0; r < N; ++r)
        if (done[r] != role[r].receives) throw std::logic_error("reference: a member missed a ring step");
    }
  }
}

}  // namespace

void run_plans(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
               const std::function<uint32_t(uint32_t)>& rank_of, std::vector<std::vector<uint8_t>>& bufs) {
  if (plans.empty()) return;
  const uint32_t N = static_cast<uint32_t>(plans.size());
  std::vector<Window> win(N);
  for (uint32_t r = 0; r < N; ++r) {
    Span whole;
    whole.ranges.emplace_back(0, plans[r]->elems());
    win[r].map(whole);
    win[r].data = bufs[r].data();
  }
  std::vector<std::vector<uint8_t>> spare;
  for (uint32_t c = 0; c < plans[0]->chunks(); ++c) {
    std::vector<std::unique_ptr<npu::ChunkPlan>> cp;
    for (uint32_t r = 0; r < N; ++r) cp.push_back(plans[r]->chunk(c));
    replay_chunk(plans, rank_of, cp, win, spare);
  }
}

namespace {

/// Closed forms: rank r's expected elements [a, b) into `out`, from the inputs.
void closed_form(CollectiveKind kind, uint32_t root, uint32_t N, uint64_t elems, uint32_t es, uint32_t r, uint64_t a,
                 uint64_t b, uint8_t* out, const CheckIo& io) {
  const uint64_t block = elems / N;
  while (a < b) {
    // The source rank and element of a, and how far that source runs.
    uint32_t src = r;
    uint64_t from = a, end = b;
    if (kind == CollectiveKind::broadcast) {
      src = root;
    } else if (a < uint64_t(N) * block) {  // allgather, alltoall: block a / block
      const uint32_t s = static_cast<uint32_t>(a / block);
      end = std::min(b, (uint64_t(s) + 1) * block);
      if (kind == CollectiveKind::allgather) {
        src = s;
      } else {  // alltoall: block r of rank s
        src = s;
        from = uint64_t(r) * block + (a - uint64_t(s) * block);
      }
    } else {
      end = b;  // past the last whole block: the member's own input
    }
    io.input(src, from, end - a, out);
    out += (end - a) * es;
    a = end;
  }
}

}  // namespace

uint64_t check_collective(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                          const std::function<uint32_t(uint32_t)>& rank_of, uint32_t root, const CheckIo& io) {
  if (plans.empty()) return 0;
  const npu::CollectivePlan& p0 = *plans[0];
  const uint32_t N = static_cast<uint32_t>(plans.size());
  const uint32_t es = p0.esize();
  const uint64_t elems = p0.elems();
  const CollectiveKind kind = p0.kind();
  uint64_t bad = 0;
  std::vector<uint8_t> got;
  auto compare = [&](uint32_t r, uint64_t a, uint64_t n, const uint8_t* want) {
    got.resize(n * es);
    io.result(r, a, n, got.data());
    if (std::memcmp(got.data(), want, n * es) == 0) return;
    for (uint64_t k = 0; k < n; ++k)
      if (std::memcmp(got.data() + k * es, want + k * es, es) != 0) {
        ++bad;
        io.mismatch(r, a + k, want + k * es, got.data() + k * es);
      }
  };
  if (kind != CollectiveKind::allreduce && kind != CollectiveKind::reducescatter) {
    // Closed forms, a slice at a time.
    constexpr uint64_t kSlice = uint64_t(1) << 20;  // elements
    std::vector<uint8_t> want;
    for (uint32_t r = 0; r < N; ++r)
      for (const auto& [a0, b0] : output_elements(kind, elems, N, r).ranges)
        for (uint64_t a = a0; a < b0; a += kSlice) {
          const uint64_t b = std::min(b0, a + kSlice);
          want.resize((b - a) * es);
          closed_form(kind, root, N, elems, es, r, a, b, want.data(), io);
          compare(r, a, b - a, want.data());
        }
    return bad;
  }
  // Reductions: the plans' order of additions, one chunk of every member at
  // a time (its inputs, its replay, its outputs).
  std::vector<Window> win(N);
  std::vector<std::vector<uint8_t>> data(N), spare;
  std::vector<uint64_t> compared(N, 0);
  std::vector<Span> mine(N);  // each member's own output elements (reduce-scatter: its block)
  for (uint32_t r = 0; r < N; ++r) mine[r] = output_elements(kind, elems, N, r);
  for (uint32_t c = 0; c < p0.chunks(); ++c) {
    std::vector<std::unique_ptr<npu::ChunkPlan>> cp;
    for (uint32_t r = 0; r < N; ++r) {
      cp.push_back(plans[r]->chunk(c));
      const Span& span = cp[r]->span();
      data[r].resize(span.elems() * es);
      win[r].map(span);
      win[r].data = data[r].data();
      uint64_t at = 0;
      for (const auto& [a, b] : span.ranges) {
        io.input(r, a, b - a, data[r].data() + at * es);
        at += b - a;
      }
    }
    replay_chunk(plans, rank_of, cp, win, spare);
    for (uint32_t r = 0; r < N; ++r) {
      for (const auto& range : cp[r]->output().ranges) {
        uint64_t e = range.first;
        win[r].each(range.first, range.second, [&](uint64_t at, uint64_t n) {
          for (const auto& m : mine[r].ranges) {
            const uint64_t lo = std::max(e, m.first), hi = std::min(e + n, m.second);
            if (lo >= hi) continue;
            compare(r, lo, hi - lo, data[r].data() + (at + (lo - e)) * es);
            compared[r] += hi - lo;
          }
          e += n;
        });
      }
    }
  }
  for (uint32_t r = 0; r < N; ++r)
    if (compared[r] != mine[r].elems())
      throw std::logic_error("reference: the chunks' outputs do not cover a member's result");
  return bad;
}

bool expected(CollectiveKind kind, uint32_t root, std::vector<std::vector<uint8_t>>& b) {
  const uint32_t N = static_cast<uint32_t>(b.size());
  if (N == 0) return true;
  const uint64_t bytes = b[0].size(), block = bytes / N;
  switch (kind) {
    case CollectiveKind::allreduce:
    case CollectiveKind::reducescatter: return false;
    case CollectiveKind::broadcast:
      for (uint32_t r = 0; r < N; ++r)
        if (r != root) b[r] = b[root];
      return true;
    case CollectiveKind::allgather: {
      for (uint32_t r = 0; r < N; ++r)
        for (uint32_t s = 0; s < N; ++s)
          if (s != r) std::memcpy(b[r].data() + s * block, b[s].data() + s * block, block);
      return true;
    }
    case CollectiveKind::alltoall: {
      const std::vector<std::vector<uint8_t>> in = b;
      for (uint32_t r = 0; r < N; ++r)
        for (uint32_t s = 0; s < N; ++s) std::memcpy(b[r].data() + s * block, in[s].data() + r * block, block);
      return true;
    }
  }
  return false;
}

Span output_elements(CollectiveKind kind, uint64_t elems, uint32_t members, uint32_t rank) {
  Span s;
  if (kind == CollectiveKind::reducescatter) {
    const uint64_t block = elems / members;
    s.ranges.emplace_back(rank * block, (rank + 1) * block);
  } else {
    s.ranges.emplace_back(0, elems);
  }
  return s;
}

double bus_factor(CollectiveKind kind, uint32_t n) {
  if (n < 1) return 0;
  switch (kind) {
    case CollectiveKind::allreduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::broadcast: return 1.0;
    default: return static_cast<double>(n - 1) / n;
  }
}

}  // namespace fabricvp::collectives
