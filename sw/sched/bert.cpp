#include "sw/sched/bert.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "models/core/config.h"
#include "models/tsp/isa.h"
#include "sw/sched/engine.h"
#include "sw/sched/routing.h"

namespace fabricvp::sched {

using tsp::Instr;
using tsp::Op;

namespace {
constexpr uint32_t kL = kBertLanes, kK = kBertK;
constexpr core::Dtype f32 = core::Dtype::fp32, f16 = core::Dtype::fp16;
static_assert(kL == tsp::kMxmColumns && kK == tsp::mxm_k(core::Dtype::fp16),
              "a position tile is an MXM result's 320 lanes; a feature chunk is an fp16 tile's 160 rows");

/// A buffer's place in the schedule: readable from cycle `ready` (its last
/// write landed), writable from cycle `free` (after its last read). Buffers
/// that share SRAM in other phases of an encoder (attention, LayerNorm, FFN)
/// are its aliases: a write waits for their reads too.
struct Buf {
  uint32_t addr = 0;
  uint64_t ready = 0, free = 0;
  std::vector<const Buf*> alias;
  uint64_t write_gate() const {
    uint64_t g = free;
    for (const Buf* a : alias) g = std::max(g, a->free);
    return g;
  }
  void read(uint64_t last) { free = std::max(free, last + 1); }
  void wrote(uint64_t readable) { ready = std::max(ready, readable); }
};

/// A vector of a buffer.
struct Ref {
  Buf* b;
  uint32_t off;
  uint32_t addr() const { return b->addr + off; }
};

/// An MXM stream through an installed tile: `rows` input vectors from src
/// (stride apart), 4 result vectors each into dst.
struct Stream {
  Ref src;
  uint32_t stride, rows;
  Ref dst;
};

/// An activation: one buffer per position tile, consecutive in SRAM, so that
/// tile p's next operation waits for tile p only (the MXMs of one tile overlap
/// the VXM work of the other).
using Act = std::vector<Buf>;

/// One pipeline stage's buffers.
struct Stage {
  uint32_t chip = 0;
  Buf w, cst;  // weights and constants: written by the host only
  Act in[2], xa, xb, x16, qkv16, qkv32, ctx32, ctx16, y32, x1, x1h, h32, ga, g16;
  Buf kh[2], st[2], mx[2], e16[2], cu[2], sum[2], rs[2];  // attention, two heads in flight
  std::vector<Buf> d32, sq, tr, mean, var;                // LayerNorm, per position tile
  std::vector<uint32_t> wbuf;                             // per MXM unit: the next weight buffer
};

class Compiler {
 public:
  Compiler(const Machine& m, BertPlan& pl) : m_m(m), m_pl(pl), m_r(pl.req), m_eng(m), m_router(m) {}

  void run();

 private:
  const ChipSpec& spec(const Stage& s) const { return m_m.chips[s.chip]; }
  uint64_t ps(const Stage& s, uint64_t cycle) const { return spec(s).clock.ps(cycle); }
  uint64_t cycle(const Stage& s, uint64_t t_ps) const { return spec(s).clock.cycle_at_or_after(t_ps); }

  void layout();
  /// One VXM operation over n steps, split over the chip's ALUs in pieces of
  /// whole `granule` steps (the BCAST period or SPREAD group of b).
  void vx(Stage& s, Op op, core::Dtype dt, Ref d, Ref a, std::optional<Ref> b, uint32_t n, uint32_t bcast = 0,
          uint32_t spread = 0);
  /// Install the tile at `tile` (nvec vectors) on every MXM unit that gets
  /// rows and stream `streams` through it, rows split evenly over the units
  /// (the same split every pass, so an ACC chain stays on one unit).
  void pass(Stage& s, Ref tile, uint32_t nvec, const std::vector<Stream>& streams, bool acc);
  /// dst[tile p][f'][4] = act (fp16 tiles of `in` features plus the ones row) x W (chunk-major at w_off) + bias.
  void linear(Stage& s, Act& act, uint32_t in, uint32_t w_off, uint32_t out, Act& dst);
  /// Pairwise tree sum (or maximum, op MAX) of n rows (4 vectors each) from
  /// src into row 0 of dst (first level src -> dst, then in place; an odd row
  /// is carried by COPY).
  void tree(Stage& s, Ref src, uint32_t n, Ref dst, Op op = Op::ADD);
  void layernorm(Stage& s, Act& y, Act& out, uint32_t g_off, uint32_t b_off);
  void encoder(Stage& s, uint32_t e, Act& x, Act& out);
  void send(Stage& from, Stage& to, Act& x, Act& dst);

  const Machine& m_m;
  BertPlan& m_pl;
  const BertRequest& m_r;
  Engine m_eng;
  Router m_router;
  std::vector<Stage> m_st;
};

void Compiler::vx(Stage& s, Op op, core::Dtype dt, Ref d, Ref a, std::optional<Ref> b, uint32_t n, uint32_t bcast,
                  uint32_t spread) {
  const ChipSpec& c = spec(s);
  const uint32_t granule = std::max({1u, bcast, spread});
  if (n % granule) throw std::logic_error("bert: a VXM operation splits into whole BCAST / SPREAD groups");
  uint64_t at = std::max(a.b->ready, d.b->write_gate());
  if (b) at = std::max(at, b->b->ready);
  const uint32_t groups = n / granule, pieces = std::min<uint32_t>(std::max(1u, c.alus), groups);
  const uint32_t a_step = op == Op::NARROW ? 2 : 1;
  uint64_t last_read = 0, last_ready = 0;
  for (uint32_t k = 0; k < pieces; ++k) {
    const uint32_t s0 = groups * uint64_t(k) / pieces * granule, s1 = groups * uint64_t(k + 1) / pieces * granule;
    Instr in;
    in.op = op;
    in.dtype = dt;
    in.a = d.addr() + s0;
    in.b = a.addr() + s0 * a_step;
    if (b) in.c = b->addr() + (bcast ? 0 : spread ? s0 / spread : s0);
    in.count = s1 - s0;
    in.imm = tsp::vxm_imm(bcast, spread);
    const uint64_t issue = m_eng.vxm(s.chip, at, in);
    last_read = std::max(last_read, issue + in.count - 1);
    last_ready = std::max(last_ready, issue + in.count - 1 + c.add_latency);
    ++m_pl.vxm_ops;
  }
  a.b->read(last_read);
  if (b) b->b->read(last_read);
  d.b->wrote(last_ready);
}

void Compiler::pass(Stage& s, Ref tile, uint32_t nvec, const std::vector<Stream>& streams, bool acc) {
  const ChipSpec& c = spec(s);
  const uint32_t units = static_cast<uint32_t>(s.wbuf.size());
  uint64_t rows = 0;
  for (const Stream& st : streams) rows += st.rows;
  uint64_t tile_read = 0;
  for (uint32_t u = 0; u < units; ++u) {
    const uint64_t r0 = rows * u / units, r1 = rows * (u + 1) / units;
    if (r0 == r1) continue;
    const uint32_t buf = s.wbuf[u];
    s.wbuf[u] ^= 1;
    const uint64_t installed = m_eng.lw(s.chip, tile.b->ready, f16, u, buf, tile.addr(), nvec);
    tile_read = std::max(tile_read, installed - c.lw_latency - 1);
    ++m_pl.weight_loads;
    uint64_t pos = 0;
    for (const Stream& st : streams) {
      const uint64_t lo = std::max(r0, pos), hi = std::min(r1, pos + st.rows);
      pos += st.rows;
      if (lo >= hi) continue;
      const uint32_t k0 = static_cast<uint32_t>(lo - (pos - st.rows)), n = static_cast<uint32_t>(hi - lo);
      uint64_t at = std::max(installed, st.src.b->ready);
      if (!acc) at = std::max(at, st.dst.b->write_gate());
      const uint64_t issue = m_eng.mxm(s.chip, at, f16, u, buf, st.dst.addr() + k0 * tsp::kResultVectors,
                                       st.src.addr() + k0 * st.stride, n, acc, st.stride);
      m_pl.subops += n;
      st.src.b->read(issue + n - 1);
      st.dst.b->wrote(issue + n - 1 + c.mxm_latency);
    }
  }
  tile.b->read(tile_read);
}

void Compiler::linear(Stage& s, Act& act, uint32_t in, uint32_t w_off, uint32_t out, Act& dst) {
  const uint32_t nk = (in + 1 + kK - 1) / kK;
  for (uint32_t p = 0; p < m_pl.tiles; ++p)
    for (uint32_t kc = 0; kc < nk; ++kc) {
      const uint32_t rows = std::min(kK, in + 1 - kc * kK);
      pass(s, Ref{&act[p], kc * kK * 2}, rows * 2, {Stream{Ref{&s.w, w_off + kc * out}, 1, out, Ref{&dst[p], 0}}},
           kc > 0);
    }
}

void Compiler::tree(Stage& s, Ref src, uint32_t n, Ref dst, Op op) {
  Ref from = src;
  while (n > 1) {
    const uint32_t h = n / 2;
    vx(s, op, f32, dst, from, Ref{from.b, from.off + h * 4}, h * 4);
    if (n % 2) vx(s, Op::COPY, f32, Ref{dst.b, dst.off + h * 4}, Ref{from.b, from.off + 2 * h * 4}, std::nullopt, 4);
    n = h + n % 2;
    from = dst;
  }
  if (from.b != dst.b || from.off != dst.off)  // a single row: copy it
    vx(s, Op::COPY, f32, dst, from, std::nullopt, 4);
}

void Compiler::layernorm(Stage& s, Act& y, Act& out, uint32_t g_off, uint32_t b_off) {
  const uint32_t H = m_r.hidden;
  for (uint32_t p = 0; p < m_pl.tiles; ++p) {
    Ref Y{&y[p], 0}, O{&out[p], 0};
    Ref D{&s.d32[p], 0}, Q{&s.sq[p], 0}, M{&s.mean[p], 0}, V{&s.var[p], 0};
    tree(s, Y, H, Ref{&s.tr[p], 0});
    vx(s, Op::MUL, f32, M, Ref{&s.tr[p], 0}, Ref{&s.cst, kBertInvH}, 4, 1);
    vx(s, Op::SUB, f32, D, Y, M, H * 4, 4);
    vx(s, Op::MUL, f32, Q, D, D, H * 4);
    tree(s, Q, H, Q);
    vx(s, Op::MUL, f32, V, Q, Ref{&s.cst, kBertInvH}, 4, 1);
    vx(s, Op::SUB, f32, V, V, Ref{&s.cst, kBertNegEps}, 4, 1);
    vx(s, Op::RSQRT, f32, V, V, std::nullopt, 4);
    vx(s, Op::MUL, f32, D, D, V, H * 4, 4);
    vx(s, Op::MUL, f32, D, D, Ref{&s.w, g_off}, H * 4, 0, 4);
    vx(s, Op::SUB, f32, O, D, Ref{&s.w, b_off}, H * 4, 0, 4);
  }
}

void Compiler::encoder(Stage& s, uint32_t e, Act& x, Act& out) {
  const uint32_t H = m_r.hidden, F = m_r.ffn, S = m_r.seq, T = m_pl.tiles, dh = m_pl.dh;
  const uint32_t wb = e * m_pl.enc_vectors;
  const ChipSpec& c = spec(s);
  for (uint32_t p = 0; p < T; ++p) vx(s, Op::NARROW, f16, Ref{&s.x16[p], 0}, Ref{&x[p], 0}, std::nullopt, 2 * H);
  linear(s, s.x16, H, wb + m_pl.w_qkv, 3 * H, s.qkv32);
  for (uint32_t p = 0; p < T; ++p)
    vx(s, Op::NARROW, f16, Ref{&s.qkv16[p], 0}, Ref{&s.qkv32[p], 0}, std::nullopt, 3 * H * 2);

  const uint32_t nks = (S + kK - 1) / kK;  // 160-key chunks
  for (uint32_t h = 0; h < m_r.heads; ++h) {
    const uint32_t sl = h % 2;
    // K_h, one row per key (its dh dims in lanes), from the fp16 K^T rows of the key's tile.
    const uint64_t gate = s.kh[sl].write_gate();
    uint64_t ready = 0;
    std::vector<uint64_t> last_read(T, 0);
    for (uint32_t t = 0; t < S; ++t) {
      const uint32_t kt = t / kL, half = (t % kL) / kK;
      const uint32_t src = s.qkv16[kt].addr + (H + h * dh) * 2 + half;
      const uint64_t issue =
          m_eng.transpose(s.chip, std::max(gate, s.qkv16[kt].ready), f16, s.kh[sl].addr + t, src, dh, t % kK, 2);
      last_read[kt] = std::max(last_read[kt], issue + (dh - 1) / c.sxm_rate);
      ready = std::max(ready, issue + (dh - 1) / c.sxm_rate + c.sxm_latency);
      ++m_pl.transposes;
    }
    for (uint32_t kt = 0; kt < T; ++kt) s.qkv16[kt].read(last_read[kt]);
    s.kh[sl].wrote(ready);
    // scores^T[t][queries of tile qt] = K_h[t] . Q_h^T
    for (uint32_t qt = 0; qt < T; ++qt)
      pass(s, Ref{&s.qkv16[qt], h * dh * 2}, dh * 2, {Stream{Ref{&s.kh[sl], 0}, 1, S, Ref{&s.st[sl], qt * S * 4}}},
           false);
    // The lanes past the last position hold no query: zero their scores, so
    // that whatever the previous encoder left in those lanes, nothing there
    // turns into an inf or NaN that V's padded lanes would carry into the
    // real queries of the next encoder.
    if (S % kL)
      vx(s, Op::MUL, f32, Ref{&s.st[sl], (T - 1) * S * 4}, Ref{&s.st[sl], (T - 1) * S * 4}, Ref{&s.cst, kBertMask},
         S * 4, 4);
    // Softmax as BERT computes it: each query's largest score (a MAX tree
    // over the keys, which are rows here) subtracted before EXP, so every
    // exponential is at most 1 and its fp16 rounding never overflows.
    const uint32_t mrows = (S + 1) / 2;
    for (uint32_t qt = 0; qt < T; ++qt) {
      const Ref scores{&s.st[sl], qt * S * 4}, top{&s.mx[sl], qt * mrows * 4};
      tree(s, scores, S, top, Op::MAX);
      vx(s, Op::SUB, f32, scores, scores, top, S * 4, 4);
    }
    vx(s, Op::EXP, f32, Ref{&s.st[sl], 0}, Ref{&s.st[sl], 0}, std::nullopt, T * S * 4);
    vx(s, Op::NARROW, f16, Ref{&s.e16[sl], 0}, Ref{&s.st[sl], 0}, std::nullopt, T * S * 2);
    // ctx^T = V_h^T x E16 and the sums of E16 over the keys, 160 keys at a time.
    for (uint32_t qt = 0; qt < T; ++qt)
      for (uint32_t kc = 0; kc < nks; ++kc) {
        const uint32_t rows = std::min(kK, S - kc * kK), kt = kc / 2, half = kc % 2;
        pass(s, Ref{&s.e16[sl], qt * S * 2 + kc * kK * 2}, rows * 2,
             {Stream{Ref{&s.qkv16[kt], (2 * H + h * dh) * 2 + half}, 2, dh, Ref{&s.cu[sl], qt * dh * 4}},
              Stream{Ref{&s.cst, kBertOnes}, 1, 1, Ref{&s.sum[sl], qt * 4}}},
             kc > 0);
      }
    vx(s, Op::RSQRT, f32, Ref{&s.rs[sl], 0}, Ref{&s.sum[sl], 0}, std::nullopt, T * 4);
    vx(s, Op::MUL, f32, Ref{&s.rs[sl], 0}, Ref{&s.rs[sl], 0}, Ref{&s.rs[sl], 0}, T * 4);
    for (uint32_t qt = 0; qt < T; ++qt)
      vx(s, Op::MUL, f32, Ref{&s.ctx32[qt], h * dh * 4}, Ref{&s.cu[sl], qt * dh * 4}, Ref{&s.rs[sl], qt * 4}, dh * 4,
         4);
  }
  for (uint32_t p = 0; p < T; ++p)
    vx(s, Op::NARROW, f16, Ref{&s.ctx16[p], 0}, Ref{&s.ctx32[p], 0}, std::nullopt, 2 * H);
  linear(s, s.ctx16, H, wb + m_pl.w_o, H, s.y32);
  for (uint32_t p = 0; p < T; ++p) vx(s, Op::ADD, f32, Ref{&s.y32[p], 0}, Ref{&s.y32[p], 0}, Ref{&x[p], 0}, H * 4);
  layernorm(s, s.y32, s.x1, wb + m_pl.ln_g1, wb + m_pl.ln_b1);
  for (uint32_t p = 0; p < T; ++p) vx(s, Op::NARROW, f16, Ref{&s.x1h[p], 0}, Ref{&s.x1[p], 0}, std::nullopt, 2 * H);
  linear(s, s.x1h, H, wb + m_pl.w_1, F, s.h32);
  // GELU, tanh form: h / (1 + e^(-2 sqrt(2/pi) (h + 0.044715 h^3))), 1 / y as RSQRT(y)^2.
  for (uint32_t p = 0; p < T; ++p) {
    const uint32_t n = F * 4;
    const Ref hh{&s.h32[p], 0}, a{&s.ga[p], 0};
    vx(s, Op::MUL, f32, a, hh, hh, n);
    vx(s, Op::MUL, f32, a, a, Ref{&s.cst, kBertGeluC1}, n, 1);
    vx(s, Op::MUL, f32, a, a, hh, n);
    vx(s, Op::ADD, f32, a, a, hh, n);
    vx(s, Op::MUL, f32, a, a, Ref{&s.cst, kBertGeluC2}, n, 1);
    vx(s, Op::EXP, f32, a, a, std::nullopt, n);
    vx(s, Op::SUB, f32, a, a, Ref{&s.cst, kBertNegOne}, n, 1);
    vx(s, Op::RSQRT, f32, a, a, std::nullopt, n);
    vx(s, Op::MUL, f32, a, a, a, n);
    vx(s, Op::MUL, f32, a, hh, a, n);
    vx(s, Op::NARROW, f16, Ref{&s.g16[p], 0}, a, std::nullopt, 2 * F);
  }
  linear(s, s.g16, F, wb + m_pl.w_2, H, s.y32);
  for (uint32_t p = 0; p < T; ++p) vx(s, Op::ADD, f32, Ref{&s.y32[p], 0}, Ref{&s.y32[p], 0}, Ref{&s.x1[p], 0}, H * 4);
  layernorm(s, s.y32, out, wb + m_pl.ln_g2, wb + m_pl.ln_b2);
}

void Compiler::send(Stage& from, Stage& to, Act& x, Act& dst) {
  const uint32_t n = static_cast<uint32_t>(m_pl.x_vectors());
  const std::vector<Route> routes = m_router.candidates(from.chip, to.chip, std::max(1u, m_r.paths));
  const std::vector<uint32_t> counts = m_router.split(routes, n);
  uint64_t ready = 0, gate = 0;
  for (const Buf& b : x) ready = std::max(ready, b.ready);
  for (const Buf& b : dst) gate = std::max(gate, b.write_gate());
  uint32_t off = 0;
  uint64_t last_read = 0, landed = 0;
  for (size_t r = 0; r < routes.size(); ++r) {
    const uint32_t k = counts[r];
    if (k == 0) continue;
    const Ready got = m_eng.send(routes[r], x[0].addr + off, {Engine::Chunk{dst[0].addr + off, k}}, k,
                                 Ready(k, ps(from, ready)), ps(to, gate));
    last_read = std::max(last_read, cycle(from, got.back()));  // read before it lands
    landed = std::max(landed, cycle(to, *std::max_element(got.begin(), got.end())));
    m_pl.sent_vectors += k;
    off += k;
  }
  for (Buf& b : x) b.read(last_read);
  for (Buf& b : dst) b.wrote(landed);
}

void Compiler::layout() {
  const uint32_t H = m_r.hidden, F = m_r.ffn, S = m_r.seq, T = m_pl.tiles, dh = m_pl.dh;
  // One encoder's weights.
  uint32_t o = 0;
  m_pl.w_qkv = o, o += m_pl.kh * 3 * H;
  m_pl.w_o = o, o += m_pl.kh * H;
  m_pl.w_1 = o, o += m_pl.kh * F;
  m_pl.w_2 = o, o += m_pl.kf * H;
  m_pl.ln_g1 = o, o += H;
  m_pl.ln_b1 = o, o += H;
  m_pl.ln_g2 = o, o += H;
  m_pl.ln_b2 = o, o += H;
  m_pl.enc_vectors = o;

  const uint32_t stages = m_r.tsps;
  m_pl.parts.resize(stages);
  m_st.resize(stages);
  uint64_t top = 0;
  for (uint32_t k = 0; k < stages; ++k) {
    BertPart& P = m_pl.parts[k];
    Stage& s = m_st[k];
    P.rank = k;
    P.chip = s.chip = m_m.ranks[k];
    P.encs = m_r.encoders / stages + (k < m_r.encoders % stages ? 1 : 0);
    P.enc0 = k == 0 ? 0 : m_pl.parts[k - 1].enc0 + m_pl.parts[k - 1].encs;
    const ChipSpec& c = spec(s);
    if (c.mxm_planes < 2 || c.sxm_units == 0 || c.alus == 0)
      throw core::ConfigError(fmt::format("{}: a BERT encoder needs an fp16 MXM unit, an SXM and a VXM", c.name));
    s.wbuf.assign(m_eng.mxm_units(s.chip, f16), 0);

    uint64_t v = 0;
    auto take = [&](Buf& b, uint64_t n) { b.addr = static_cast<uint32_t>(v), v += n; };
    auto tiles = [&](Act& a, uint64_t per_tile) {  // T consecutive tiles
      a.resize(T);
      for (Buf& b : a) take(b, per_tile);
    };
    const uint64_t x = uint64_t(H) * 4, x16 = uint64_t(H + 1) * 2;  // per position tile
    take(s.w, uint64_t(P.encs) * m_pl.enc_vectors);
    P.w_vec = s.w.addr;
    take(s.cst, kBertConsts);
    P.const_vec = s.cst.addr;
    for (Act& a : s.in) tiles(a, x);
    P.in_vec[0] = s.in[0][0].addr, P.in_vec[1] = s.in[1][0].addr;
    for (Act* a : {&s.xa, &s.xb, &s.y32, &s.x1}) tiles(*a, x);
    for (Act* a : {&s.x16, &s.ctx16, &s.x1h}) tiles(*a, x16);
    tiles(s.g16, uint64_t(F + 1) * 2);
    tiles(s.qkv16, uint64_t(3) * H * 2);
    for (Buf& b : s.kh) take(b, S);
    for (Buf* b : {&s.sum[0], &s.sum[1], &s.rs[0], &s.rs[1]}) take(*b, uint64_t(T) * 4);
    s.mean.resize(T), s.var.resize(T), s.d32.resize(T), s.sq.resize(T), s.tr.resize(T);
    for (uint32_t p = 0; p < T; ++p) take(s.mean[p], 4), take(s.var[p], 4);
    // The ones rows: after the last feature of every fp16 activation tile.
    for (uint32_t p = 0; p < T; ++p) {
      P.ones.push_back(s.x16[p].addr + 2 * H);
      P.ones.push_back(s.ctx16[p].addr + 2 * H);
      P.ones.push_back(s.x1h[p].addr + 2 * H);
      P.ones.push_back(s.g16[p].addr + 2 * F);
    }
    // Region 1: the FFN's h, or attention's scores, exponentials and context,
    // or LayerNorm's scratch; region 2: the QKV projection's binary32 results,
    // or GELU's scratch. A write into one waits for the reads of the others.
    using Group = std::vector<std::pair<Buf*, uint64_t>>;  // buffers one after the other, vectors each
    auto region = [&v](const std::vector<Group>& groups) {
      const uint64_t base = v;
      for (size_t g = 0; g < groups.size(); ++g) {
        uint64_t at = base;
        for (const auto& [b, n] : groups[g]) b->addr = static_cast<uint32_t>(at), at += n;
        v = std::max(v, at);
        for (const auto& [b, n] : groups[g])
          for (size_t other = 0; other < groups.size(); ++other)
            if (other != g)
              for (const auto& member : groups[other]) b->alias.push_back(member.first);
      }
    };
    Group att, ln, ffn, qkv, gelu;
    s.ctx32.resize(T), s.h32.resize(T), s.qkv32.resize(T), s.ga.resize(T);
    for (Buf& b : s.st) att.emplace_back(&b, uint64_t(T) * S * 4);
    for (Buf& b : s.mx) att.emplace_back(&b, uint64_t(T) * ((S + 1) / 2) * 4);
    for (Buf& b : s.e16) att.emplace_back(&b, uint64_t(T) * S * 2);
    for (Buf& b : s.cu) att.emplace_back(&b, uint64_t(T) * dh * 4);
    for (Buf& b : s.ctx32) att.emplace_back(&b, x);
    for (uint32_t p = 0; p < T; ++p)
      ln.insert(ln.end(), {{&s.d32[p], x}, {&s.sq[p], x}, {&s.tr[p], uint64_t((H + 1) / 2) * 4}});
    for (Buf& b : s.h32) ffn.emplace_back(&b, uint64_t(F) * 4);
    for (Buf& b : s.qkv32) qkv.emplace_back(&b, uint64_t(3) * H * 4);
    for (Buf& b : s.ga) gelu.emplace_back(&b, uint64_t(F) * 4);
    region({att, ln, ffn});
    region({qkv, gelu});

    P.sram_vectors = static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
    if (v > tsp::kVectors)
      throw core::ConfigError(fmt::format(
          "bert: {} encoder{} of hidden {}, ffn {}, {} positions on {} need {} SRAM vectors ({} of weights), more "
          "than the {} of a TSP; use more TSPs (--tsps) or fewer --encoders",
          P.encs, P.encs == 1 ? "" : "s", H, F, S, c.name, v, uint64_t(P.encs) * m_pl.enc_vectors, tsp::kVectors));
    top = std::max(top, v);
  }
  m_eng.set_scratch_base(static_cast<uint32_t>(top));
}

void Compiler::run() {
  layout();
  const uint32_t n = static_cast<uint32_t>(m_pl.x_vectors());
  m_pl.done_ps.assign(m_r.inferences, 0);
  m_pl.input_ps = m_eng.host_lands(m_st[0].chip, 0, n - 1);
  for (uint32_t i = 0; i < m_r.inferences; ++i) {
    Stage& s0 = m_st[0];
    Act& in = s0.in[i % 2];
    if (m_r.launched) {  // in SRAM at the launch: the host runtime writes it first
      m_pl.inputs.push_back(BertPlan::Input{i, in[0].addr, n, 0});
    } else {
      uint64_t gate = 0;
      for (const Buf& b : in) gate = std::max(gate, b.write_gate());
      const uint64_t start = m_eng.host_write_start(s0.chip, n, ps(s0, gate));
      m_pl.inputs.push_back(BertPlan::Input{i, in[0].addr, n, start});
      const uint32_t per_tile = n / m_pl.tiles;  // tile p lands with its last vector
      for (uint32_t p = 0; p < m_pl.tiles; ++p)
        in[p].wrote(cycle(s0, m_eng.host_lands(s0.chip, start, (p + 1) * per_tile - 1)));
    }
    for (uint32_t k = 0; k < m_st.size(); ++k) {
      Stage& s = m_st[k];
      Act* x = &s.in[i % 2];
      for (uint32_t e = 0; e < m_pl.parts[k].encs; ++e) {
        Act& out = e % 2 == 0 ? s.xa : s.xb;
        encoder(s, e, *x, out);
        x = &out;
      }
      if (k + 1 < m_st.size()) {
        send(s, m_st[k + 1], *x, m_st[k + 1].in[i % 2]);
        continue;
      }
      const ChipSpec& c = spec(s);
      uint64_t ready = 0;
      for (const Buf& b : *x) ready = std::max(ready, b.ready);
      const uint64_t issue = m_eng.to_host(s.chip, ready, (*x)[0].addr, n, m_pl.host_out_vec(i));
      for (Buf& b : *x) b.read(cycle(s, ps(s, issue) + c.pcie.ps(n - 1)));
      m_pl.done_ps[i] = ps(s, issue) + c.pcie.ps(n) + c.pcie_latency_ps;
    }
  }
  try {
    m_pl.programs = m_eng.programs();
  } catch (const core::ConfigError& e) {
    throw core::ConfigError(fmt::format(
        "bert: {} encoder{} on {} TSP{}, {} inference{}: {}; use more TSPs (--tsps), fewer --inferences or a larger "
        "-p '*.imem_instructions'",
        m_r.encoders, m_r.encoders == 1 ? "" : "s", m_r.tsps, m_r.tsps == 1 ? "" : "s", m_r.inferences,
        m_r.inferences == 1 ? "" : "s", e.what()));
  }
  m_pl.predicted_ps = m_eng.completion_ps();
}

}  // namespace

double BertPlan::flops() const {
  const double S = req.seq, H = req.hidden, F = req.ffn;
  return req.encoders * (2 * S * (4 * H * H + 2 * H * F) + 4 * S * S * H);
}

BertPlan plan_bert(const Machine& m, const BertRequest& r) {
  BertPlan pl;
  pl.req = r;
  auto bad = [](const std::string& msg) { throw core::ConfigError("bert: " + msg); };
  if (r.encoders == 0) bad("--encoders must be at least 1");
  if (r.tsps == 0 || r.tsps > m.size())
    bad(fmt::format("--tsps {}: the platform's job has {} TSPs (--tsps 1..{})", r.tsps, m.size(), m.size()));
  if (r.tsps > r.encoders)
    bad(fmt::format("{} encoders on {} TSPs: every pipeline stage needs at least one encoder", r.encoders, r.tsps));
  if (r.seq == 0 || r.seq > 4 * kL) bad(fmt::format("--seq {} out of range 1..{}", r.seq, 4 * kL));
  if (r.hidden < 2 || r.hidden > 8192 || r.ffn == 0 || r.ffn > 32768)
    bad(fmt::format("hidden {} / ffn {} out of range (hidden 2..8192, ffn 1..32768)", r.hidden, r.ffn));
  if (r.heads == 0 || r.hidden % r.heads)
    bad(fmt::format("hidden {} is not a multiple of heads {}", r.hidden, r.heads));
  pl.dh = r.hidden / r.heads;
  if (pl.dh > kK)
    bad(fmt::format("head dimension {} (hidden {} / heads {}) exceeds the {} lanes of an fp16 vector", pl.dh, r.hidden,
                    r.heads, kK));
  if (r.inferences == 0 || r.inferences > 4096) bad(fmt::format("--inferences {} out of range 1..4096", r.inferences));
  if (r.launched && r.inferences != 1) bad("a launched run compiles one inference (the host runtime repeats it)");
  pl.tiles = (r.seq + kL - 1) / kL;
  pl.kh = (r.hidden + 1 + kK - 1) / kK;
  pl.kf = (r.ffn + 1 + kK - 1) / kK;
  Compiler c(m, pl);
  c.run();
  return pl;
}

}  // namespace fabricvp::sched
