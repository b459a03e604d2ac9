#include "sw/sched/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/core/config.h"

namespace fabricvp::sched {

using tsp::Instr;
using tsp::Op;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::allreduce: return "allreduce";
    case Kind::allgather: return "allgather";
    case Kind::reducescatter: return "reducescatter";
    case Kind::broadcast: return "broadcast";
  }
  return "?";
}

bool parse_kind(const std::string& s, Kind& out) {
  for (Kind k : {Kind::allreduce, Kind::allgather, Kind::reducescatter, Kind::broadcast})
    if (s == kind_name(k)) return out = k, true;
  return false;
}

namespace {

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// Schedule builder: tracks every queue's next free cycle, every link
/// direction's serializer and every receive port, and emits instructions with
/// the WAITs that place them at their exact cycle.
class Builder {
 public:
  Builder(const Machine& m, Plan& plan) : m_m(m), m_plan(plan) {
    uint32_t n = m.size();
    plan.programs.assign(n, sw::Program{});
    m_qnext.assign(n, {});
    for (uint32_t c = 0; c < n; ++c) {
      const ChipSpec& s = m.chips[c];
      if (s.queues < 2 * s.ports + 1)
        throw core::ConfigError(fmt::format("{}: the collective scheduler needs {} instruction queues, chip has {}",
                                            s.name, 2 * s.ports + 1, s.queues));
      m_qnext[c].assign(s.queues, 0);
      plan.programs[c].target = s.name;
    }
    m_tx_free.assign(n, std::vector<uint64_t>(n, 0));
    m_rx_last.assign(n, std::vector<uint64_t>(n, 0));
    m_rx_any.assign(n, std::vector<bool>(n, false));
    m_alu_free.assign(n, 0);
  }

  struct Sent {
    uint64_t cycle, start_ps, arrival0_ps;
  };
  struct Received {
    uint64_t cycle, write0_ps;  // vector i readable at write0 + ser(i)
  };

  const LinkSpec& link(uint32_t a, uint32_t b) const { return m_m.link[a][b]; }
  const core::Clock& clk(uint32_t c) const { return m_m.chips[c].clock; }

  /// SEND n vectors at `addr` from a to b, no earlier than `min_cycle`, such
  /// that vector v is read no earlier than ready[v] (empty: all ready now).
  Sent send(uint32_t a, uint32_t b, uint32_t addr, uint32_t n, uint64_t min_cycle,
            const std::vector<uint64_t>& ready = {}) {
    const ChipSpec& C = m_m.chips[a];
    const LinkSpec& L = link(a, b);
    uint32_t p = port(a, b);
    uint32_t q = p;
    uint64_t need = 0;  // every vector v must be read at >= need + ser(v)
    for (uint32_t v = 0; v < ready.size(); ++v) need = std::max(need, ready[v] - std::min(ready[v], L.rate.ps(v)));
    uint64_t c = std::max(min_cycle, m_qnext[a][q]);
    uint64_t start = 0;
    for (;;) {
      uint64_t rdy = C.clock.ps(c + C.send_latency);
      uint64_t lead = rdy - C.clock.ps(c);
      start = std::max(rdy, m_tx_free[a][b]);
      uint64_t fifo = L.rate.ps(C.tx_buffer);
      if (start - rdy > fifo) {  // transmit buffer would overflow: issue later
        uint64_t want = start - fifo;
        uint64_t cc = C.clock.cycle_at_or_after(want);
        c = std::max(c + 1, cc >= C.send_latency ? cc - C.send_latency : 0);
        continue;
      }
      if (start - lead < need) {  // a vector would be read before it is written
        c = std::max(c + 1, C.clock.cycle_at_or_after(need));
        continue;
      }
      break;
    }
    Instr in;
    in.op = Op::SEND;
    in.port = static_cast<uint16_t>(p);
    in.a = addr;
    in.count = n;
    emit(a, q, c, in);
    m_tx_free[a][b] = start + L.rate.ps(n);
    return Sent{c, start, start + L.rate.ps(1) + L.latency_ps};
  }

  /// RECV on chip b of the n vectors a burst from a delivers, first arriving at arrival0.
  Received recv(uint32_t b, uint32_t a, uint32_t addr, uint32_t n, uint64_t arrival0) {
    const ChipSpec& C = m_m.chips[b];
    const LinkSpec& L = link(a, b);
    uint32_t p = port(b, a);
    uint32_t q = C.ports + p;
    uint64_t c = std::max(m_qnext[b][q], C.clock.cycle_at_or_after(arrival0));
    if (m_rx_any[b][a] && C.clock.ps(c) <= m_rx_last[b][a]) c = C.clock.cycle_at_or_after(m_rx_last[b][a] + 1);
    Instr in;
    in.op = Op::RECV;
    in.port = static_cast<uint16_t>(p);
    in.a = addr;
    in.count = n;
    emit(b, q, c, in);
    m_rx_last[b][a] = C.clock.ps(c) + L.rate.ps(n - 1);
    m_rx_any[b][a] = true;
    uint64_t w0 = C.clock.ps(c + C.recv_latency);
    complete(w0 + L.rate.ps(n - 1));
    return Received{c, w0};
  }

  /// ADD on chip c no earlier than min_cycle; returns the issue cycle.
  uint64_t add(uint32_t chip, uint64_t min_cycle, tsp::Dtype dt, uint32_t dst, uint32_t a, uint32_t b, uint32_t n) {
    const ChipSpec& C = m_m.chips[chip];
    uint32_t q = 2 * C.ports;
    uint64_t c = std::max({min_cycle, m_qnext[chip][q], m_alu_free[chip]});
    Instr in;
    in.op = Op::ADD;
    in.dtype = dt;
    in.a = dst;
    in.b = a;
    in.c = b;
    in.count = n;
    emit(chip, q, c, in);
    m_alu_free[chip] = c + n;
    complete(C.clock.ps(c + n - 1 + C.add_latency));
    return c;
  }

  void complete(uint64_t t) { m_plan.predicted_ps = std::max(m_plan.predicted_ps, t); }

  uint32_t port(uint32_t a, uint32_t b) const {
    int p = m_m.port[a][b];
    if (p < 0) throw std::logic_error(fmt::format("no link from {} to {}", m_m.chips[a].name, m_m.chips[b].name));
    return static_cast<uint32_t>(p);
  }

  size_t queue_length(uint32_t chip, uint32_t q) const {
    const auto& qs = m_plan.programs[chip].queues;
    return q < qs.size() ? qs[q].size() : 0;
  }

 private:
  void emit(uint32_t chip, uint32_t q, uint64_t cycle, Instr in) {
    uint64_t& next = m_qnext[chip][q];
    if (cycle < next) throw std::logic_error("scheduler emitted an instruction before its queue was free");
    if (cycle > next) {
      Instr w;
      w.op = Op::WAIT;
      w.imm = cycle;
      m_plan.programs[chip].emit(q, w);
    }
    m_plan.programs[chip].emit(q, in);
    next = cycle + 1;
  }

  const Machine& m_m;
  Plan& m_plan;
  std::vector<std::vector<uint64_t>> m_qnext;
  std::vector<std::vector<uint64_t>> m_tx_free;
  std::vector<std::vector<uint64_t>> m_rx_last;
  std::vector<std::vector<bool>> m_rx_any;
  std::vector<uint64_t> m_alu_free;
};

/// Split v vectors into n parts differing by at most one.
std::vector<uint32_t> split(uint32_t v, uint32_t n) {
  std::vector<uint32_t> s(n);
  for (uint32_t j = 0; j < n; ++j) s[j] = v / n + (j < v % n ? 1 : 0);
  return s;
}

void check_fits(const Machine& m, uint64_t vectors, const Request& r) {
  if (vectors > tsp::kVectors)
    throw core::ConfigError(fmt::format(
        "{} of {} bytes needs {} vectors of SRAM per chip (inputs, staging and accumulators); a TSP has {} (220 MiB)",
        kind_name(r.kind), r.bytes, vectors, tsp::kVectors));
  (void)m;
}

/// A staging ring slot would be overwritten before the reduction has read it.
struct RingTooSmall {};

/// Reduce-scatter: chip i sends its contribution to shard j (at src(i, j)) to
/// chip j in one burst; chip j receives it chunk by chunk into a ring of
/// `ring` chunk slots per source, and sums the n contributions of each chunk in
/// rank order into dst(j) as soon as the chunk has landed from every source.
/// Returns, per chip j, the time each vector of its reduced shard is written.
template <typename SrcFn, typename DstFn>
std::vector<std::vector<uint64_t>> reduce_scatter(Builder& B, const Machine& m, const Request& r,
                                                  const std::vector<uint32_t>& shard, SrcFn src, DstFn dst,
                                                  uint32_t staging, uint32_t chunk, uint32_t ring) {
  uint32_t n = m.size();
  std::vector<std::vector<Builder::Sent>> sent(n, std::vector<Builder::Sent>(n));
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < n; ++j)
      if (i != j && shard[j]) sent[i][j] = B.send(i, j, src(i, j), shard[j], 0);
  const uint32_t slot_vectors = ring * chunk;
  auto slot = [](uint32_t j, uint32_t i) { return i < j ? i : i - 1; };  // ring of source i on chip j
  auto ring_addr = [&](uint32_t j, uint32_t i, uint32_t c) {
    return staging + slot(j, i) * slot_vectors + (c % ring) * chunk;
  };
  uint32_t acc = staging + (n - 1) * slot_vectors;

  std::vector<std::vector<uint64_t>> written(n);
  for (uint32_t j = 0; j < n; ++j) {
    if (!shard[j]) continue;
    const ChipSpec& C = m.chips[j];
    written[j].assign(shard[j], 0);
    uint32_t chunks = (shard[j] + chunk - 1) / chunk;
    // Last cycle the reduction reads each ring slot of each source, per chunk.
    std::vector<std::vector<uint64_t>> last_read(n, std::vector<uint64_t>(chunks, 0));
    std::vector<std::vector<Builder::Received>> got(n, std::vector<Builder::Received>(chunks));
    for (uint32_t c = 0; c < chunks; ++c) {
      uint32_t base = c * chunk;
      uint32_t len = std::min(chunk, shard[j] - base);
      uint64_t ready = 0;  // cycle at which the chunk has landed from every source
      for (uint32_t i = 0; i < n; ++i) {
        if (i == j) continue;
        const LinkSpec& L = B.link(i, j);
        uint64_t arrival = sent[i][j].start_ps + L.rate.ps(base + 1) + L.latency_ps;
        got[i][c] = B.recv(j, i, ring_addr(j, i, c), len, arrival);
        if (c >= ring && C.clock.ps(last_read[i][c - ring]) >= got[i][c].write0_ps) throw RingTooSmall{};
        ready = std::max(ready, C.clock.cycle_at_or_after(got[i][c].write0_ps + L.rate.ps(len - 1)));
      }
      auto term = [&](uint32_t rank) { return rank == j ? dst(j) + base : ring_addr(j, rank, c); };
      uint32_t acc_c = acc + (c % ring) * chunk;
      uint64_t cyc = ready;
      uint64_t last = 0;
      for (uint32_t k = 1; k < n; ++k) {
        uint32_t d = k == n - 1 ? dst(j) + base : acc_c;
        uint32_t a = k == 1 ? term(0) : acc_c;
        last = B.add(j, cyc, r.dtype, d, a, term(k), len);
        if (k == 1 && j != 0) last_read[0][c] = last + len - 1;
        if (j != k) last_read[k][c] = last + len - 1;
        cyc = last + std::max<uint64_t>(len, C.add_latency);
      }
      for (uint32_t v = 0; v < len; ++v) written[j][base + v] = C.clock.ps(last + v + C.add_latency);
    }
  }
  return written;
}

/// Staging ring depth in chunks (never more than the shard needs).
uint32_t ring_chunks(const Request& r, uint32_t shard, uint32_t chunk) {
  uint32_t chunks = static_cast<uint32_t>(div_up(shard, chunk));
  return std::max<uint32_t>(1, std::min(r.staging_chunks, chunks));
}

uint32_t choose_chunk(const Machine& m, const Request& r, uint32_t shard) {
  // Keep the reduction queue (a WAIT and n-1 ADDs per chunk) inside instruction memory.
  uint32_t n = m.size();
  uint32_t imem = m.chips[0].imem;
  for (const auto& c : m.chips) imem = std::min(imem, c.imem);
  uint64_t max_chunks = std::max<uint64_t>(1, (imem - 16) / n);
  uint32_t chunk = std::max<uint32_t>(1, r.chunk_vectors);
  return static_cast<uint32_t>(std::max<uint64_t>(chunk, div_up(shard, max_chunks)));
}

}  // namespace

Plan plan_once(const Machine& m, const Request& r);

Plan plan(const Machine& m, const Request& r) {
  // A staging ring that the reduction cannot drain in time is doubled until
  // it can (in the limit, every chunk has its own slot and nothing is reused).
  Request q = r;
  for (;;) {
    try {
      return plan_once(m, q);
    } catch (const RingTooSmall&) {
      if (q.staging_chunks >= tsp::kVectors) throw std::logic_error("staging ring cannot grow further");
      q.staging_chunks *= 2;
    }
  }
}

Plan plan_once(const Machine& m, const Request& r) {
  uint32_t n = m.size();
  uint32_t esize = tsp::dtype_bytes(r.dtype);
  if (n < 2) throw core::ConfigError("collectives need at least 2 chips");
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = 0; b < n; ++b)
      if (a != b && m.port[a][b] < 0)
        throw core::ConfigError(fmt::format("the collective scheduler needs a direct link between every pair of chips; "
                                            "{} and {} have none",
                                            m.chips[a].name, m.chips[b].name));
  if (esize == 0) throw core::ConfigError("unknown data type");
  if (r.bytes == 0) throw core::ConfigError("--bytes must be at least one element");
  if (r.bytes % esize)
    throw core::ConfigError(fmt::format("--bytes {} is not a whole number of {} elements ({} bytes each)", r.bytes,
                                        tsp::dtype_name(r.dtype), esize));
  bool per_rank = r.kind == Kind::allgather || r.kind == Kind::reducescatter;
  if (per_rank && r.bytes % (static_cast<uint64_t>(n) * esize))
    throw core::ConfigError(fmt::format("{}: --bytes {} must split into {} equal pieces of whole {} elements",
                                        kind_name(r.kind), r.bytes, n, tsp::dtype_name(r.dtype)));
  if (r.kind == Kind::broadcast && r.root >= n)
    throw core::ConfigError(fmt::format("broadcast root {} does not exist ({} chips)", r.root, n));

  Plan P;
  Builder B(m, P);
  P.inputs.assign(n, {});
  P.outputs.assign(n, {});
  const uint64_t VB = tsp::kVectorBytes;

  switch (r.kind) {
    case Kind::allreduce: {
      uint64_t V = div_up(r.bytes, VB);
      std::vector<uint32_t> shard = split(static_cast<uint32_t>(std::min<uint64_t>(V, tsp::kVectors)), n);
      std::vector<uint32_t> off(n, 0);
      for (uint32_t j = 1; j < n; ++j) off[j] = off[j - 1] + shard[j - 1];
      uint32_t smax = *std::max_element(shard.begin(), shard.end());
      P.chunk_vectors = choose_chunk(m, r, smax);
      uint32_t ring = ring_chunks(r, smax, P.chunk_vectors);
      check_fits(m, V + static_cast<uint64_t>(n) * ring * P.chunk_vectors, r);
      P.staging_chunks = ring;
      auto written = reduce_scatter(
          B, m, r, shard, [&](uint32_t, uint32_t j) { return off[j]; }, [&](uint32_t j) { return off[j]; },
          static_cast<uint32_t>(V), P.chunk_vectors, ring);
      std::vector<std::vector<Builder::Sent>> sent(n, std::vector<Builder::Sent>(n));
      for (uint32_t j = 0; j < n; ++j)
        for (uint32_t i = 0; i < n; ++i)
          if (i != j && shard[j]) sent[j][i] = B.send(j, i, off[j], shard[j], 0, written[j]);
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < n; ++j)
          if (i != j && shard[j]) B.recv(i, j, off[j], shard[j], sent[j][i].arrival0_ps);
      for (uint32_t c = 0; c < n; ++c) {
        P.inputs[c] = {Region{0, r.bytes}};
        P.outputs[c] = {Region{0, r.bytes}};
      }
      P.input_bytes = r.bytes;
      P.bus_factor = 2.0 * (n - 1) / n;
      break;
    }
    case Kind::reducescatter: {
      uint64_t piece = r.bytes / n;
      uint32_t vp = static_cast<uint32_t>(div_up(piece, VB));
      std::vector<uint32_t> shard(n, vp);
      P.chunk_vectors = choose_chunk(m, r, vp);
      uint32_t ring = ring_chunks(r, vp, P.chunk_vectors);
      check_fits(m, static_cast<uint64_t>(vp) * n + static_cast<uint64_t>(n) * ring * P.chunk_vectors, r);
      P.staging_chunks = ring;
      reduce_scatter(
          B, m, r, shard, [&](uint32_t, uint32_t j) { return j * vp; }, [&](uint32_t j) { return j * vp; }, vp * n,
          P.chunk_vectors, ring);
      for (uint32_t c = 0; c < n; ++c) {
        for (uint32_t k = 0; k < n; ++k) P.inputs[c].push_back(Region{k * vp, piece});
        P.outputs[c] = {Region{c * vp, piece}};
      }
      P.input_bytes = r.bytes;
      P.bus_factor = static_cast<double>(n - 1) / n;
      break;
    }
    case Kind::allgather: {
      uint64_t piece = r.bytes / n;
      uint32_t vp = static_cast<uint32_t>(div_up(piece, VB));
      check_fits(m, static_cast<uint64_t>(vp) * n, r);
      std::vector<std::vector<Builder::Sent>> sent(n, std::vector<Builder::Sent>(n));
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < n; ++j)
          if (i != j) sent[i][j] = B.send(i, j, i * vp, vp, 0);
      for (uint32_t j = 0; j < n; ++j)
        for (uint32_t i = 0; i < n; ++i)
          if (i != j) B.recv(j, i, i * vp, vp, sent[i][j].arrival0_ps);
      for (uint32_t c = 0; c < n; ++c) {
        P.inputs[c] = {Region{c * vp, piece}};
        for (uint32_t k = 0; k < n; ++k) P.outputs[c].push_back(Region{k * vp, piece});
      }
      P.input_bytes = piece;
      P.bus_factor = static_cast<double>(n - 1) / n;
      break;
    }
    case Kind::broadcast: {
      uint64_t V = div_up(r.bytes, VB);
      check_fits(m, V, r);
      std::vector<uint32_t> others;
      for (uint32_t c = 0; c < n; ++c)
        if (c != r.root) others.push_back(c);
      std::vector<uint32_t> part = split(static_cast<uint32_t>(V), n - 1);
      std::vector<uint32_t> off(n - 1, 0);
      for (uint32_t k = 1; k < n - 1; ++k) off[k] = off[k - 1] + part[k - 1];
      std::vector<Builder::Sent> first(n - 1);
      for (uint32_t k = 0; k < n - 1; ++k)
        if (part[k]) first[k] = B.send(r.root, others[k], off[k], part[k], 0);
      std::vector<Builder::Received> got(n - 1);
      for (uint32_t k = 0; k < n - 1; ++k)
        if (part[k]) got[k] = B.recv(others[k], r.root, off[k], part[k], first[k].arrival0_ps);
      // Forward each part as it lands (virtual cut-through through SRAM).
      for (uint32_t k = 0; k < n - 1; ++k) {
        if (!part[k]) continue;
        uint32_t src = others[k];
        std::vector<uint64_t> ready(part[k]);
        for (uint32_t v = 0; v < part[k]; ++v) ready[v] = got[k].write0_ps + B.link(r.root, src).rate.ps(v);
        for (uint32_t k2 = 0; k2 < n - 1; ++k2) {
          if (k2 == k) continue;
          Builder::Sent s = B.send(src, others[k2], off[k], part[k], got[k].cycle, ready);
          B.recv(others[k2], src, off[k], part[k], s.arrival0_ps);
        }
      }
      P.inputs[r.root] = {Region{0, r.bytes}};
      for (uint32_t c = 0; c < n; ++c) P.outputs[c] = {Region{0, r.bytes}};
      P.input_bytes = r.bytes;
      P.bus_factor = 1.0;
      break;
    }
  }
  for (uint32_t c = 0; c < n; ++c)
    for (uint32_t q = 0; q < P.programs[c].queues.size(); ++q)
      if (B.queue_length(c, q) + 1 > m.chips[c].imem)
        throw core::ConfigError(fmt::format("{}: queue {} needs {} instructions; imem_instructions is {}",
                                            m.chips[c].name, q, B.queue_length(c, q) + 1, m.chips[c].imem));
  return P;
}

}  // namespace fabricvp::sched
