#include "systems/groq/collective_data.h"

#include <algorithm>
#include <cstring>

#include "models/core/dtype.h"

namespace fabricvp::groq {

CollectiveData::CollectiveData(System& sys, const sched::Machine& m, const sched::Plan& plan, const sched::Request& req)
    : m_sys(sys), m_m(m), m_plan(plan), m_req(req) {}

uint64_t CollectiveData::seed(uint32_t r) const { return m_sys.chips[m_m.ranks[r]]->seed_for("workload_input"); }

void CollectiveData::fold(uint8_t* acc, const uint8_t* x, uint64_t len, bool first) const {
  if (first)
    std::memcpy(acc, x, len);
  else
    core::add(m_req.dtype, acc, acc, x, len);
}

void CollectiveData::load() {
  using sched::Kind;
  const uint32_t P = m_m.size();
  const uint64_t N = m_plan.input_bytes;
  const bool sum = m_req.kind == Kind::allreduce || m_req.kind == Kind::reducescatter;
  if (sum) m_acc.assign(3, std::vector<uint8_t>(N));
  if (m_req.kind == Kind::allgather) m_ref.resize(static_cast<uint64_t>(P) * N);
  if (m_req.kind == Kind::broadcast || m_req.kind == Kind::p2p) m_ref.resize(N);
  std::vector<uint8_t> slice(std::min<uint64_t>(std::max<uint64_t>(N, 1), 1u << 20));
  for (uint32_t r = 0; r < P; ++r) {
    if (m_plan.inputs[r].empty()) continue;
    const sched::Coord c = m_m.coord[r];
    for (uint64_t pos = 0; pos < N; pos += slice.size()) {
      uint64_t len = std::min<uint64_t>(slice.size(), N - pos);
      core::random_elements(m_req.dtype, seed(r), slice.data(), len, pos, P);
      uint64_t base = 0;  // scatter stream bytes [pos, pos + len) over the rank's input regions
      for (const sched::Region& reg : m_plan.inputs[r]) {
        uint64_t lo = std::max(pos, base), hi = std::min(pos + len, base + reg.bytes);
        if (lo < hi)
          m_sys.host.write(m_m.ranks[r], static_cast<uint64_t>(reg.vec) * tsp::kVectorBytes + (lo - base),
                           slice.data() + (lo - pos), hi - lo);
        base += reg.bytes;
      }
      if (sum)
        fold(m_acc[0].data() + pos, slice.data(), len, c.tsp == 0);
      else if (m_req.kind == Kind::allgather)
        std::memcpy(m_ref.data() + m_plan.collective_rank[r] * N + pos, slice.data(), len);
      else if (!m_ref.empty())
        std::memcpy(m_ref.data() + pos, slice.data(), len);
    }
    if (sum && c.tsp + 1 == m_m.tsps_per_node) {
      fold(m_acc[1].data(), m_acc[0].data(), N, c.node == 0);
      if (c.node + 1 == m_m.nodes_per_rack) fold(m_acc[2].data(), m_acc[1].data(), N, c.rack == 0);
    }
  }
}

void CollectiveData::expected(uint32_t r, uint64_t pos, uint8_t* out, uint64_t len) const {
  using sched::Kind;
  const uint64_t N = m_plan.input_bytes;
  switch (m_req.kind) {
    case Kind::allreduce: std::memcpy(out, m_acc[2].data() + pos, len); break;
    case Kind::reducescatter:
      std::memcpy(out, m_acc[2].data() + m_plan.collective_rank[r] * (N / m_m.size()) + pos, len);
      break;
    case Kind::allgather:
    case Kind::broadcast:
    case Kind::p2p: std::memcpy(out, m_ref.data() + pos, len); break;
    case Kind::alltoall: {
      // Block s of rank r's output is block r of rank s's input.
      const uint64_t block = N / m_m.size();
      while (len) {
        uint64_t s = pos / block, in = pos % block, n = std::min<uint64_t>(len, block - in);
        core::random_elements(m_req.dtype, seed(static_cast<uint32_t>(s)), out, n, r * block + in, m_m.size());
        out += n;
        pos += n;
        len -= n;
      }
      break;
    }
  }
}

CheckResult check_outputs(Host& host, const std::vector<uint32_t>& chips,
                          const std::vector<std::vector<sched::Region>>& outputs, const Expected& expected,
                          core::Dtype dt) {
  CheckResult res;
  const uint32_t es = core::dtype_bytes(dt);
  constexpr uint64_t kSlice = 4u << 20;
  std::vector<uint8_t> got, want;
  for (uint32_t r = 0; r < outputs.size(); ++r) {
    if (outputs[r].empty()) continue;
    ++res.ranks_checked;
    uint64_t bad = 0, pos = 0;
    for (const auto& reg : outputs[r]) {
      for (uint64_t done = 0; done < reg.bytes;) {
        uint64_t len = std::min<uint64_t>(kSlice, reg.bytes - done);
        got.resize(len);
        want.resize(len);
        host.read(chips[r], static_cast<uint64_t>(reg.vec) * tsp::kVectorBytes + done, got.data(), len);
        expected(r, pos, want.data(), len);
        if (std::memcmp(got.data(), want.data(), len) != 0) {
          for (uint64_t b = 0; b < len; b += es)
            if (std::memcmp(got.data() + b, want.data() + b, es) != 0) {
              if (res.first.size() < 8)
                res.first.push_back(
                    {r, pos + b, core::element_value(dt, want.data() + b), core::element_value(dt, got.data() + b)});
              ++bad;
            }
        }
        done += len;
        pos += len;
      }
    }
    res.mismatched += bad;
    if (!bad) ++res.ranks_ok;
  }
  return res;
}

}  // namespace fabricvp::groq
