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

void run_plans(const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
               const std::function<uint32_t(uint32_t)>& rank_of, std::vector<std::vector<uint8_t>>& bufs) {
  if (plans.empty()) return;
  const npu::CollectivePlan& p0 = *plans[0];
  const uint32_t N = static_cast<uint32_t>(plans.size());
  const uint32_t es = p0.esize();
  const core::Dtype dt = p0.dtype();
  auto gather = [&](uint32_t r, const Span& s) {
    std::vector<uint8_t> out;
    out.reserve(s.elems() * es);
    for (const auto& [a, b] : s.ranges) out.insert(out.end(), bufs[r].begin() + a * es, bufs[r].begin() + b * es);
    return out;
  };
  for (uint32_t c = 0; c < p0.chunks(); ++c) {
    std::vector<std::unique_ptr<npu::ChunkPlan>> cp;
    for (uint32_t r = 0; r < N; ++r) cp.push_back(plans[r]->chunk(c));
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
            for (const auto& [a, b] : s.local.ranges) {
              const uint64_t len = (b - a) * es;
              uint8_t* mine = bufs[r].data() + a * es;
              if (s.reduce)
                core::add(dt, mine, in.data() + off, mine, len);
              else
                std::memcpy(mine, in.data() + off, len);
              off += len;
            }
            if (s.forward) {
              std::vector<uint8_t> out = s.forward_local ? gather(r, s.local) : std::vector<uint8_t>();
              out.insert(out.end(), in.begin() + static_cast<int64_t>(off),
                         in.begin() + static_cast<int64_t>(off + s.passthrough * es));
              mail[{rank_of(role[r].next), step + 1}] = std::move(out);
            }
          }
        }
        if (!mail.empty()) throw std::logic_error("reference: messages left undelivered in a ring phase");
        for (uint32_t r = 0; r < N; ++r)
          if (done[r] != role[r].receives) throw std::logic_error("reference: a member missed a ring step");
      }
    }
  }
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
