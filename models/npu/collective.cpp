#include "models/npu/collective.h"

#include <algorithm>

namespace fabricvp::npu {

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

void Span::append(const Span& s) {
  for (const auto& r : s.ranges) {
    if (r.first == r.second) continue;
    if (!ranges.empty() && ranges.back().second == r.first)
      ranges.back().second = r.second;
    else
      ranges.push_back(r);
  }
}

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::allreduce: return "allreduce";
    case CollectiveKind::reducescatter: return "reducescatter";
    case CollectiveKind::allgather: return "allgather";
    case CollectiveKind::alltoall: return "alltoall";
    case CollectiveKind::broadcast: return "broadcast";
  }
  return "?";
}

bool parse_collective(const std::string& s, CollectiveKind& out) {
  for (CollectiveKind k : {CollectiveKind::allreduce, CollectiveKind::reducescatter, CollectiveKind::allgather,
                           CollectiveKind::alltoall, CollectiveKind::broadcast})
    if (s == collective_name(k)) {
      out = k;
      return true;
    }
  return false;
}

}  // namespace fabricvp::npu
