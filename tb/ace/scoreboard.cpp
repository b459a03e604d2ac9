#include "tb/ace/scoreboard.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

namespace fabricvp::tb {

void Scoreboard::report(const std::string& text, uint64_t cycle) {
  if (m_first < 0) {
    m_first = static_cast<int64_t>(m_compared);
    m_first_text = text;
    m_first_cycle = cycle;
  }
  ++m_mismatches;
  if (m_log && m_mismatches <= m_limit) *m_log << text << "\n";
  if (m_log && m_mismatches == m_limit + 1) *m_log << "  (further mismatches counted, not shown)\n";
}

void Scoreboard::missing(const std::string& why) {
  report(fmt::format("MISMATCH completion {}: {}", m_compared, why), 0);
  ++m_compared;
}

void Scoreboard::cover(const ace::Chunk& c, const std::vector<uint32_t>& local, const ace::Completion& e) {
  if (e.err) ++m_cov.err_chunks;
  if (c.op != ace::Op::add || e.err || !e.sent || local.size() != e.data.size() || c.data.size() != e.data.size())
    return;
  if (c.dtype == core::Dtype::int32) {
    for (size_t i = 0; i < e.data.size(); ++i) {
      const uint32_t a = c.data[i], b = local[i], r = e.data[i];
      if (((a ^ r) & (b ^ r)) >> 31) ++m_cov.int_wraps;  // both operands' sign differs from the sum's
    }
    return;
  }
  const bool half = c.dtype != core::Dtype::fp32;
  const uint32_t mask = half ? 0xffffu : 0xffffffffu;
  const uint32_t sign = half ? 0x8000u : 0x80000000u;
  const uint32_t exp = c.dtype == core::Dtype::fp32 ? 0x7f800000u : c.dtype == core::Dtype::bf16 ? 0x7f80u : 0x7c00u;
  for (size_t i = 0; i < e.data.size(); ++i) {
    const uint32_t a = c.data[i] & mask, b = local[i] & mask, r = e.data[i] & mask;
    ++m_cov.fp_lanes;
    if ((r & exp) == exp) {
      if (r & ~(exp | sign)) {
        ++m_cov.nan;
      } else {
        ++m_cov.inf;
        if ((a & exp) != exp && (b & exp) != exp) ++m_cov.overflow;
      }
    } else if ((r & ~sign) == 0) {
      if (r) ++m_cov.neg_zero;
      if ((a & ~sign) != 0) ++m_cov.cancel;
    } else if ((r & exp) == 0) {
      ++m_cov.subnormal;
    }
  }
}

void Scoreboard::submitted(const ace::Chunk& c, const uint32_t* local, size_t lanes) {
  Entry& e = m_chunks.push();
  e.chunk = c;
  if (local)
    e.local.assign(local, local + lanes);
  else
    e.local.clear();
}

bool Scoreboard::compare(const ace::Completion& e, const ace::Completion& a) {
  static const Entry kNone;
  const Entry& c = m_chunks.empty() ? kNone : m_chunks.front();
  std::string diff;
  if (e.tag != a.tag) diff += fmt::format("\n  tag: expected {} got {}", e.tag, a.tag);
  if (e.err != a.err) diff += fmt::format("\n  err: expected {} got {}", e.err, a.err);
  if (e.sent != a.sent) diff += fmt::format("\n  sent: expected {} got {}", e.sent, a.sent);
  if (e.accept_cycle != a.accept_cycle)
    diff += fmt::format("\n  accept cycle: expected {} got {}", e.accept_cycle, a.accept_cycle);
  if (e.retire_cycle != a.retire_cycle)
    diff += fmt::format("\n  retire cycle: expected {} got {}", e.retire_cycle, a.retire_cycle);
  if (e.data.size() != a.data.size()) {
    diff += fmt::format("\n  result lanes: expected {} got {}", e.data.size(), a.data.size());
  } else {
    for (size_t i = 0; i < e.data.size(); ++i) {
      if (e.data[i] == a.data[i]) continue;
      diff += fmt::format("\n  lane {}: expected {:08x} got {:08x}", i, e.data[i], a.data[i]);
      if (i < c.chunk.data.size()) diff += fmt::format(" (incoming {:08x}", c.chunk.data[i]);
      if (i < c.local.size()) diff += fmt::format(", local {:08x}", c.local[i]);
      if (i < c.chunk.data.size()) diff += ")";
    }
  }
  if (!diff.empty())
    report(fmt::format("MISMATCH completion {}: chunk tag {} op {} dtype {} part {} row {} wb {} send {} gap {}{}",
                       m_compared, c.chunk.tag, ace::op_name(c.chunk.op), core::dtype_name(c.chunk.dtype), c.chunk.part,
                       c.chunk.row, c.chunk.wb, c.chunk.send, c.chunk.gap, diff),
           std::min(e.accept_cycle, a.accept_cycle));
  ++m_compared;
  cover(c.chunk, c.local, e);
  if (!m_chunks.empty()) m_chunks.pop();
  return diff.empty();
}

}  // namespace fabricvp::tb
