#include "sw/sched/cholesky.h"

#include <fmt/format.h>

#include <algorithm>

#include "models/core/config.h"
#include "models/tsp/isa.h"
#include "sw/sched/engine.h"
#include "sw/sched/routing.h"

namespace fabricvp::sched {

using tsp::Instr;
using tsp::Op;

namespace {
constexpr uint32_t kRows = kCholeskyRows, kK = kCholeskyK, kF32 = kCholeskyF32, kF16 = kCholeskyF16;
constexpr uint32_t kRing = 8;  // columns in flight per chip (row of L, scale buffers)
static_assert(kRows == tsp::kMxmColumns && kK == tsp::mxm_k(core::Dtype::fp16) &&
                  kF32 * tsp::kVectorBytes == kRows * 4 && kF16 * tsp::kVectorBytes == kRows * 2,
              "a block column is one MXM result: 320 binary32 lanes in 4 vectors, 320 fp16 in 2");

Instr vxm(Op op, core::Dtype dt, uint32_t a, uint32_t b, uint32_t c, uint32_t n, uint64_t imm = 0) {
  Instr in;
  in.op = op;
  in.dtype = dt;
  in.a = a;
  in.b = b;
  in.c = c;
  in.count = n;
  in.imm = imm;
  return in;
}
}  // namespace

uint64_t CholeskyPlan::cols(uint32_t rb) const { return std::min<uint64_t>(req.n, uint64_t(kRows) * (rb + 1)); }

CholeskyPlan plan_cholesky(const Machine& m, const CholeskyRequest& r) {
  CholeskyPlan pl;
  pl.req = r;
  const uint64_t n = r.n;
  const uint32_t T = r.tsps;
  if (n < 2) throw core::ConfigError(fmt::format("cholesky --n {}: the matrix needs at least 2 rows", n));
  if (n > (uint64_t(1) << 20)) throw core::ConfigError(fmt::format("cholesky --n {}: too large", n));
  if (T == 0 || T > m.size())
    throw core::ConfigError(fmt::format("cholesky on {} TSPs: the job has {} (--tsps 1..{})", T, m.size(), m.size()));
  pl.blocks = static_cast<uint32_t>((n + kRows - 1) / kRows);
  if (T > pl.blocks)
    throw core::ConfigError(
        fmt::format("cholesky --n {} has {} block{} of 320 rows, fewer than the {} TSPs asked for: every TSP owns at "
                    "least one block (--tsps {} or a larger --n)",
                    n, pl.blocks, pl.blocks == 1 ? "" : "s", T, pl.blocks));
  const uint32_t nkmax = static_cast<uint32_t>((n - 1 + kK - 1) / kK);  // chunks of the longest row used (n - 1)
  Engine eng(m);
  Router router(m);

  // Layout and the checks that can be made before building anything.
  uint64_t all_cols = 0;  // fp16 copies of every block's columns
  for (uint32_t rb = 0; rb < pl.blocks; ++rb) {
    pl.lcol0.push_back(static_cast<uint32_t>(all_cols));
    all_cols += pl.cols(rb);
  }
  pl.parts.resize(T);
  uint64_t top = 0;
  for (uint32_t t = 0; t < T; ++t) {
    CholeskyPart& p = pl.parts[t];
    p.rank = t;
    p.chip = m.ranks[t];
    uint64_t cols = 0;
    for (uint32_t rb = t; rb < pl.blocks; rb += T) {
      p.blocks.push_back(rb);
      p.col0.push_back(static_cast<uint32_t>(cols));
      cols += pl.cols(rb);
    }
    const ChipSpec& chip = m.chips[p.chip];
    const uint64_t nb = p.blocks.size();
    const uint64_t need = cols * kF32 + all_cols * kF16 + uint64_t(kRows) * kF32 + kRing * (nkmax + 1) + nb * 2 * kF32;
    if (need > tsp::kVectors)
      throw core::ConfigError(fmt::format(
          "cholesky --n {} on {} TSP{}: {} needs {} SRAM vectors (its {} blocks' columns in binary32, every block's "
          "in fp16), more than the {} of a TSP; use more TSPs (--tsps) or a smaller --n",
          n, T, T == 1 ? "" : "s", chip.name, need, nb, tsp::kVectors));
    // LW + MXM per (column, block at or below it, 160 columns): spread over the units.
    uint64_t tiles = 0;
    for (uint64_t i = 1; i < n; ++i) {
      const uint64_t below =
          std::count_if(p.blocks.begin(), p.blocks.end(), [&](uint32_t rb) { return rb >= i / kRows; });
      tiles += below * ((i + kK - 1) / kK);
    }
    const uint32_t units = std::max<uint32_t>(1, eng.mxm_units(p.chip, core::Dtype::fp16));
    if (2 * tiles / units + 1 > chip.imem)
      throw core::ConfigError(fmt::format(
          "cholesky --n {} on {} TSP{}: {} would issue {} LW and MXM instructions on each MXM unit's queue, more than "
          "imem_instructions ({}); use more TSPs (--tsps), a smaller --n or a larger -p '*.imem_instructions'",
          n, T, T == 1 ? "" : "s", chip.name, 2 * tiles / units, chip.imem));
    if (eng.mxm_units(p.chip, core::Dtype::fp16) == 0 || chip.sxm_units == 0)
      throw core::ConfigError(fmt::format("{}: cholesky needs an fp16 MXM unit and an SXM", chip.name));
    if (chip.alus < 3)
      throw core::ConfigError(
          fmt::format("{}: cholesky's vector steps are fly-bys of up to 3 instructions, one vector ALU each "
                      "(docs/isa.md \"Fly-by\"): vxm_alus must be at least 3, it is {}",
                      chip.name, chip.alus));
    p.s_vec = 0;
    p.l_vec = static_cast<uint32_t>(cols * kF32);
    p.mask_vec = static_cast<uint32_t>(cols * kF32 + all_cols * kF16);
    p.sram_vectors = static_cast<uint32_t>(need);
    top = std::max(top, need);
  }
  eng.set_scratch_base(static_cast<uint32_t>(top));  // forwarding buffers (routes through other chips) above

  // Per-chip working buffers after the mask: ring slots for the row of L (x),
  // the pivot's splat (d), the scale (r), the scaled mask (s); two U per block.
  struct Work {
    uint32_t x, rs, u;
    std::vector<uint64_t> x_free, r_free;            // [slot]: last cycle a reader reads it
    std::vector<std::vector<uint64_t>> x_ready;      // [slot][chunk]: cycle readable here
    std::vector<uint64_t> r_ready;                   // [slot]
    std::vector<std::array<uint64_t, 2>> u_free;     // [block][parity]
    std::vector<std::vector<uint64_t>> chunk_ready;  // [global block][chunk]: its fp16 columns so far here
    uint32_t next_unit = 0;
    std::vector<uint32_t> buf;  // [unit]: next weight buffer
  };
  std::vector<Work> w(T);
  for (uint32_t t = 0; t < T; ++t) {
    const CholeskyPart& p = pl.parts[t];
    Work& k = w[t];
    k.x = p.mask_vec + kRows * kF32;
    k.rs = k.x + kRing * nkmax;
    k.u = k.rs + kRing;
    k.x_free.assign(kRing, 0);
    k.r_free.assign(kRing, 0);
    k.x_ready.assign(kRing, std::vector<uint64_t>(nkmax, 0));
    k.r_ready.assign(kRing, 0);
    k.u_free.assign(p.blocks.size(), {0, 0});
    k.chunk_ready.assign(pl.blocks, std::vector<uint64_t>(nkmax + 1, 0));
    k.buf.assign(eng.mxm_units(p.chip, core::Dtype::fp16), 0);
  }
  auto spec = [&](uint32_t t) -> const ChipSpec& { return m.chips[pl.parts[t].chip]; };
  auto cycle_on = [&](uint32_t t, uint64_t ps) { return spec(t).clock.cycle_at_or_after(ps); };
  auto ps_on = [&](uint32_t t, uint64_t cycle) { return spec(t).clock.ps(cycle); };
  const core::Dtype f32 = core::Dtype::fp32, f16 = core::Dtype::fp16;

  // Send `count` vectors at `src` on part `from` to `dst` on part `to`, each
  // ready at cycle ready[i] on the sender, not landing before cycle not_before
  // on the receiver. Returns the cycle each is readable on the receiver;
  // src_free (sender cycles) grows past the sender's last read of `src`.
  auto send = [&](uint32_t from, uint32_t to, uint32_t src, uint32_t dst, const std::vector<uint64_t>& ready,
                  uint64_t not_before, uint64_t& src_free) {
    const uint32_t count = static_cast<uint32_t>(ready.size());
    Ready rd(count);
    for (uint32_t i = 0; i < count; ++i) rd[i] = ps_on(from, ready[i]);
    const Route route = router.minimal(pl.parts[from].chip, pl.parts[to].chip);
    const Ready got = eng.send(route, src, {Engine::Chunk{dst, count}}, count, rd, ps_on(to, not_before));
    pl.sent_vectors += count;
    std::vector<uint64_t> out(count);
    for (uint32_t i = 0; i < count; ++i) out[i] = cycle_on(to, got[i]);
    src_free = std::max(src_free, cycle_on(from, got.back()));  // read before it lands
    return out;
  };
  // Send `ready.size()` vectors at `src` on `from` (vector k readable at
  // cycle ready[k]) to addr(to) on every part of `dests`: directly inside the
  // sender's node; to another node once, to its first destination there,
  // which forwards them to the others of its node as they land (a global
  // cable carries each vector once). not_before(to): first cycle the buffer
  // may be written; arrived(to, cycles); read_until(part): grows past each
  // sender's last read of its copy.
  auto multicast = [&](uint32_t from, const std::vector<uint32_t>& dests, uint32_t src, auto addr,
                       const std::vector<uint64_t>& ready, auto not_before, auto arrived, auto read_until) {
    auto node_of = [&](uint32_t t) { return m.chips[pl.parts[t].chip].node; };
    std::vector<bool> done(T, false);
    for (uint32_t to : dests) {
      if (done[to]) continue;
      const std::vector<uint64_t> got = send(from, to, src, addr(to), ready, not_before(to), read_until(from));
      arrived(to, got);
      done[to] = true;
      if (node_of(to) == node_of(from)) continue;
      for (uint32_t mate : dests)  // the gateway forwards to its node
        if (!done[mate] && node_of(mate) == node_of(to)) {
          arrived(mate, send(to, mate, addr(to), addr(mate), got, not_before(mate), read_until(to)));
          done[mate] = true;
        }
    }
  };

  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t rb_i = static_cast<uint32_t>(i / kRows), o = rb_i % T, bo = rb_i / T;
    const uint32_t l = static_cast<uint32_t>(i % kRows), slot = static_cast<uint32_t>(i % kRing);
    const uint32_t nk = static_cast<uint32_t>((i + kK - 1) / kK);
    const uint32_t par = static_cast<uint32_t>(i % 2);

    // The blocks at or below row i: the diagonal block first (the chain).
    std::vector<std::pair<uint32_t, uint32_t>> work;  // (part, local block)
    work.emplace_back(o, bo);
    for (uint32_t t = 0; t < T; ++t)
      for (uint32_t b = 0; b < pl.parts[t].blocks.size(); ++b)
        if (pl.parts[t].blocks[b] >= rb_i && !(t == o && b == bo)) work.emplace_back(t, b);

    // 1. Row i of L (columns 0 .. i - 1 of block rb_i, lane l) as nk fp16
    // vectors, by SXM TRANSPOSEs on every TSP with work in column i, each from
    // its own copy of the block (the owner first: it is on the chain).
    for (uint32_t t = 0; t < T && nk > 0; ++t) {
      const uint32_t who = (o + t) % T;
      if (pl.parts[who].blocks.back() < rb_i) continue;  // no block at or below row i
      const CholeskyPart& P = pl.parts[who];
      Work& W = w[who];
      const ChipSpec& s = spec(who);
      for (uint32_t kc = 0; kc < nk; ++kc) {
        const uint32_t cnt = static_cast<uint32_t>(std::min<uint64_t>(kK, i - uint64_t(kc) * kK));
        const uint32_t src = P.l_vec + (pl.lcol0[rb_i] + kc * kK) * kF16 + l / kK;
        const uint64_t at = std::max(W.chunk_ready[rb_i][kc], W.x_free[slot] + 1);
        const uint64_t c = eng.transpose(P.chip, at, f16, W.x + slot * nkmax + kc, src, cnt, l % kK, kF16);
        W.x_ready[slot][kc] = c + (cnt - 1) / s.sxm_rate + s.sxm_latency;
        ++pl.transposes;
      }
    }

    // 2. U = row i x the block's tiles, chunk by chunk with ACC; every chunk
    // but the last (which holds column i - 1) of every block before any last one.
    std::vector<uint64_t> u_last(work.size(), 0);  // issue cycle of the latest MXM into each U
    auto mxm_chunk = [&](size_t wi, uint32_t kc) {
      const auto [t, b] = work[wi];
      const CholeskyPart& P = pl.parts[t];
      Work& W = w[t];
      const uint32_t unit = W.next_unit;
      W.next_unit = (W.next_unit + 1) % static_cast<uint32_t>(W.buf.size());
      const uint32_t buf = W.buf[unit];
      W.buf[unit] ^= 1;
      const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(kK, i - uint64_t(kc) * kK));
      const uint32_t rb = P.blocks[b];
      eng.lw(P.chip, W.chunk_ready[rb][kc], f16, unit, buf, P.l_vec + (pl.lcol0[rb] + kc * kK) * kF16, rows * kF16);
      ++pl.weight_loads;
      const uint32_t u = W.u + (b * 2 + par) * kF32;
      uint64_t at = W.x_ready[slot][kc];
      if (kc == 0) {  // the first result overwrites U: issued after the last read of the column before (a
                      // read of a vector with a result in flight to it is a hardware error, docs/isa.md)
        at = std::max(at, W.u_free[b][par] + 1);
      } else {
        at = std::max(at, u_last[wi] + 1);  // ACC in chunk order
      }
      const uint64_t c = eng.mxm(P.chip, at, f16, unit, buf, u, W.x + slot * nkmax + kc, 1, kc > 0);
      u_last[wi] = c;
      W.x_free[slot] = std::max(W.x_free[slot], c);
      ++pl.subops;
    };
    if (nk > 0) {
      for (uint32_t kc = 0; kc + 1 < nk; ++kc)
        for (size_t wi = 0; wi < work.size(); ++wi) mxm_chunk(wi, kc);
      for (size_t wi = 0; wi < work.size(); ++wi) mxm_chunk(wi, nk - 1);
    }

    // 3. Finish column i on every block in fly-bys (docs/isa.md "Fly-by";
    // the seed's "single fly-by" through the VXM's ALUs): on the diagonal's
    // owner rsqrt(splat(S - U)) of the pivot's vector, then everywhere
    // L = ((S - U) x mask) x rsqrt (the mask only on the diagonal block), each
    // read from SRAM once and written once; then NARROW to fp16.
    uint64_t r_at = 0;  // the scale's splat on the owner: cycle readable
    for (size_t wi = 0; wi < work.size(); ++wi) {
      const auto [t, b] = work[wi];
      const CholeskyPart& P = pl.parts[t];
      Work& W = w[t];
      const ChipSpec& s = spec(t);
      const uint32_t lat = s.add_latency;
      const uint32_t rb = P.blocks[b];
      const uint32_t scol = P.s_vec + (P.col0[b] + static_cast<uint32_t>(i)) * kF32;
      const uint32_t u = W.u + (b * 2 + par) * kF32;
      // I = S - U first (column 0: nothing to subtract), reading S and U from SRAM.
      const uint64_t u_at = nk > 0 ? u_last[wi] + s.mxm_latency : 0;
      auto difference = [&](uint32_t v, uint32_t vectors) {
        std::vector<Instr> st;
        if (nk > 0) st.push_back(vxm(Op::SUB, f32, 0, scol + v, u + v, vectors));
        return st;
      };
      if (wi == 0) {  // the diagonal block: the pivot's reciprocal square root
        const uint32_t q = l / (kRows / kF32), e = l % (kRows / kF32);
        std::vector<Instr> st = difference(q, 1);
        st.push_back(vxm(Op::SPLAT, f32, 0, st.empty() ? scol + q : 0, 0, 1, e));
        st.push_back(vxm(Op::RSQRT, f32, W.rs + slot, 0, 0, 1));
        const uint32_t k = static_cast<uint32_t>(st.size());
        const uint64_t c_rs = eng.flyby(P.chip, std::max(u_at, W.r_free[slot] + 1), st);
        pl.vxm_ops += k;
        r_at = eng.flyby_lands(P.chip, c_rs, k, 0);
        W.r_ready[slot] = r_at;
        std::vector<uint32_t> dests;  // the scale to the other TSPs with blocks at or below row i
        for (uint32_t to = 0; to < T; ++to)
          if (to != o && pl.parts[to].blocks.back() >= rb_i) dests.push_back(to);
        multicast(
            o, dests, W.rs + slot, [&](uint32_t to) { return w[to].rs + slot; }, std::vector<uint64_t>{r_at},
            [&](uint32_t to) { return w[to].r_free[slot] + 1; },
            [&](uint32_t to, const std::vector<uint64_t>& got) { w[to].r_ready[slot] = got[0]; },
            [&](uint32_t part) -> uint64_t& { return w[part].r_free[slot]; });
      }
      std::vector<Instr> st = difference(0, kF32);
      if (wi == 0) st.push_back(vxm(Op::MUL, f32, 0, st.empty() ? scol : 0, P.mask_vec + l * kF32, kF32));
      st.push_back(vxm(Op::MUL, f32, scol, st.empty() ? scol : 0, W.rs + slot, kF32, 1));
      const uint32_t k = static_cast<uint32_t>(st.size());
      const uint64_t c_mul = eng.flyby(P.chip, std::max(u_at, W.r_ready[slot]), st);
      pl.vxm_ops += k;
      W.r_free[slot] = std::max(W.r_free[slot], c_mul + kF32 - 1);
      W.u_free[b][par] = c_mul + kF32 - 1;
      // NARROW step k reads binary32 vectors 2k, 2k + 1 at c + k: the last at c + kF16 - 1.
      const uint64_t c_nw =
          eng.vxm(P.chip, eng.flyby_lands(P.chip, c_mul, k, 0) + kF16,
                  vxm(Op::NARROW, f16, P.l_vec + (pl.lcol0[rb] + static_cast<uint32_t>(i)) * kF16, scol, 0, kF16));
      ++pl.vxm_ops;
      const uint32_t kc = static_cast<uint32_t>(i / kK);
      const uint64_t done = c_nw + kF16 - 1 + lat;
      W.chunk_ready[rb][kc] = std::max(W.chunk_ready[rb][kc], done);
      // The fp16 column to the TSPs that will build rows of this block (those with a block at or below it).
      std::vector<uint32_t> dests;
      for (uint32_t to = 0; to < T; ++to)
        if (to != t && pl.parts[to].blocks.back() >= rb) dests.push_back(to);
      const uint32_t at = pl.lcol0[rb] + static_cast<uint32_t>(i);
      uint64_t unused = 0;  // columns are written once: no reuse to guard
      multicast(
          t, dests, P.l_vec + at * kF16, [&](uint32_t to) { return pl.parts[to].l_vec + at * kF16; },
          std::vector<uint64_t>(kF16, done), [](uint32_t) { return uint64_t(0); },
          [&](uint32_t to, const std::vector<uint64_t>& got) {
            w[to].chunk_ready[rb][kc] = std::max(w[to].chunk_ready[rb][kc], got.back());
          },
          [&](uint32_t) -> uint64_t& { return unused; });
    }
  }
  try {
    pl.programs = eng.programs();
  } catch (const core::ConfigError& e) {
    throw core::ConfigError(
        fmt::format("cholesky --n {} on {} TSP{}: {}; use more TSPs (--tsps), a smaller --n or a "
                    "larger -p '*.imem_instructions'",
                    n, T, T == 1 ? "" : "s", e.what()));
  }
  pl.predicted_ps = eng.completion_ps();
  return pl;
}

}  // namespace fabricvp::sched
