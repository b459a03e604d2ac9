#include "systems/groq/matmul_data.h"

#include <algorithm>
#include <cstring>

#include "models/core/dtype.h"
#include "models/tsp/isa.h"

namespace fabricvp::groq {

namespace {

constexpr uint32_t kCols = tsp::kMxmColumns;

// fp16 inputs: |x| in [2^-6, 1) with a random sign (core::random_elements with
// the largest `ranks`), so sums over any K stay far from overflow.
constexpr uint32_t kFp16Range = 65504;

uint64_t stream_seed(uint64_t seed, bool b) { return seed * 0x9e3779b97f4a7c15ULL + (b ? 0xb0b : 0xa0a); }

// The reference's int8 inner products (int32, exact), written without the
// model's tile machinery.
void ref_dot_int8(const int8_t* a, uint32_t kn, const int32_t* w, uint32_t width, int32_t* out) {
  for (uint32_t e = 0; e < width; ++e) out[e] = 0;
  for (uint32_t k = 0; k < kn; ++k)
    for (uint32_t e = 0; e < width; ++e) out[e] += a[k] * w[uint64_t(k) * width + e];
}

uint32_t bits(float f) { return f != f ? core::ieee::kNaN32 : core::ieee::bits_of(f); }  // NaN canonical

}  // namespace

// The reference's inner products: k in order, binary32 sums of exact products,
// written without the model's tile machinery (this file is compiled unfused).
void reference_dot_fp16(const float* a, uint32_t kn, const float* w, uint64_t stride, uint32_t width, float* out) {
  for (uint32_t e = 0; e < width; ++e) out[e] = 0.0f;
  for (uint32_t k = 0; k < kn; ++k)
    for (uint32_t e = 0; e < width; ++e) out[e] = out[e] + a[k] * w[k * stride + e];
}

MatmulData::MatmulData(System& sys, const sched::MatmulPlan& plan, uint64_t seed)
    : m_sys(sys), m_plan(plan), m_seed(seed) {}

void MatmulData::elements(const sched::MatmulRequest& r, uint64_t seed, bool b, uint64_t row, uint64_t col0, uint64_t n,
                          uint8_t* out) {
  const uint64_t cols = b ? r.L : r.N;
  const uint32_t es = core::dtype_bytes(r.dtype);
  core::random_elements(r.dtype, stream_seed(seed, b), out, n * es, (row * cols + col0) * es, kFp16Range);
}

void MatmulData::a_slice(uint32_t t, uint64_t m0, uint64_t rows, uint8_t* out) const {
  const sched::MatmulRequest& r = m_plan.req;
  const uint64_t k0 = uint64_t(t) * m_plan.K, kn = std::min<uint64_t>(m_plan.K, r.N - k0);
  for (uint64_t i = 0; i < rows; ++i) {
    std::fill(out + i * tsp::kVectorBytes, out + (i + 1) * tsp::kVectorBytes, 0);
    if (m0 + i < r.M) elements(r, m_seed, false, m0 + i, k0, kn, out + i * tsp::kVectorBytes);
  }
}

void MatmulData::b_tile(uint32_t t, uint32_t j, uint8_t* out) const {
  const sched::MatmulRequest& r = m_plan.req;
  const uint32_t es = core::dtype_bytes(r.dtype);
  const uint64_t k0 = uint64_t(t) * m_plan.K, kn = std::min<uint64_t>(m_plan.K, r.N - k0);
  const uint64_t c0 = uint64_t(j) * kCols, cn = std::min<uint64_t>(kCols, r.L - c0);
  std::fill(out, out + uint64_t(m_plan.tile_vectors(t)) * tsp::kVectorBytes, 0);
  for (uint64_t k = 0; k < kn; ++k) elements(r, m_seed, true, k0 + k, c0, cn, out + k * kCols * es);
}

void MatmulData::load(bool timing_only) {
  const sched::MatmulRequest& r = m_plan.req;
  if (r.host_inputs) {  // the host's writes over PCIe, in the compiler's order, at its times
    std::vector<Host::TimedWrite> writes;
    writes.reserve(m_plan.dmas.size());
    for (const sched::MatmulDma& d : m_plan.dmas) {
      Host::TimedWrite w;
      w.chip = m_plan.parts[d.part].chip;
      w.addr = uint64_t(d.addr) * tsp::kVectorBytes;
      w.len = uint64_t(d.n) * tsp::kVectorBytes;
      w.ready_ps = d.ready_ps;
      writes.push_back(std::move(w));
    }
    // Block k (MatmulPlan::blocks) sends rows k * block_rows on, one period later.
    Host::RoundFill fill;
    if (!timing_only)
      fill = [this](size_t i, uint64_t k, uint8_t* out) {
        const sched::MatmulDma& d = m_plan.dmas[i];
        if (d.b)
          b_tile(d.t, d.j, out);
        else
          a_slice(d.t, k * m_plan.block_rows, d.n, out);
      };
    m_sys.host.schedule(std::move(writes), m_plan.blocks, m_plan.block_period_ps, std::move(fill));
    return;
  }
  if (timing_only) return;
  const uint32_t es = core::dtype_bytes(r.dtype), K = m_plan.K;
  std::vector<uint8_t> vec(tsp::kVectorBytes), tile(uint64_t(tsp::kTileVectors) * tsp::kVectorBytes);
  for (const sched::MatmulPart& p : m_plan.parts) {
    // A: vector (t - t0) * M + m holds A[m][t*K .. t*K + K), zero-padded.
    for (uint32_t t = p.t0; t < p.t1; ++t) {
      const uint64_t k0 = uint64_t(t) * K, kn = std::min<uint64_t>(K, r.N - k0);
      for (uint64_t m = 0; m < r.M; ++m) {
        std::fill(vec.begin(), vec.end(), 0);
        elements(r, m_seed, false, m, k0, kn, vec.data());
        m_sys.host.write(p.chip, (uint64_t(p.a_vec) + (t - p.t0) * r.M + m) * tsp::kVectorBytes, vec.data(),
                         vec.size());
      }
    }
    // B: tile (t, j): fp16 row k in vectors 2k (columns 0..159), 2k + 1; int8 row k in vector k.
    for (uint32_t j = p.j0; j < p.j1; ++j)
      for (uint32_t t = p.t0; t < p.t1; ++t) {
        const uint64_t k0 = uint64_t(t) * K, kn = std::min<uint64_t>(K, r.N - k0);
        const uint64_t c0 = uint64_t(j) * kCols, cn = std::min<uint64_t>(kCols, r.L - c0);
        std::fill(tile.begin(), tile.end(), 0);
        for (uint64_t k = 0; k < kn; ++k) elements(r, m_seed, true, k0 + k, c0, cn, &tile[k * kCols * es]);
        const uint32_t n = m_plan.tile_vectors(t);
        const uint64_t at = uint64_t(p.b_vec) + ((j - p.j0) * (p.t1 - p.t0) + (t - p.t0)) * tsp::kTileVectors;
        m_sys.host.write(p.chip, at * tsp::kVectorBytes, tile.data(), uint64_t(n) * tsp::kVectorBytes);
      }
  }
}

std::vector<uint32_t> MatmulData::partial(const sched::MatmulPart& p) const {
  const sched::MatmulRequest& r = m_plan.req;
  const uint32_t K = m_plan.K, es = core::dtype_bytes(r.dtype);
  const uint32_t jn = p.j1 - p.j0, width = jn * kCols;
  const bool fp = r.dtype == core::Dtype::fp16;
  std::vector<uint32_t> c(r.M * width, 0);
  std::vector<uint8_t> raw(std::max<uint64_t>(K, width) * es);
  std::vector<float> wf(fp ? uint64_t(K) * width : 0), af(fp ? K : 0);
  std::vector<int32_t> wi(fp ? 0 : uint64_t(K) * width);
  std::vector<int8_t> ai(fp ? 0 : K);
  std::vector<float> of(fp ? width : 0);
  std::vector<int32_t> oi(fp ? 0 : width);
  for (uint32_t t = p.t0; t < p.t1; ++t) {
    const uint64_t k0 = uint64_t(t) * K, kn = std::min<uint64_t>(K, r.N - k0);
    // B rows k0 .. k0 + kn, the part's columns (zero beyond L).
    for (uint64_t k = 0; k < kn; ++k) {
      const uint64_t c0 = uint64_t(p.j0) * kCols, cn = std::min<uint64_t>(width, r.L - c0);
      std::fill(raw.begin(), raw.end(), 0);
      elements(r, m_seed, true, k0 + k, c0, cn, raw.data());
      for (uint32_t e = 0; e < width; ++e) {
        if (fp) {
          uint16_t h;
          std::memcpy(&h, &raw[2 * e], 2);
          wf[k * width + e] = core::ieee::f16_to_f32(h);
        } else {
          wi[k * width + e] = static_cast<int8_t>(raw[e]);
        }
      }
    }
    for (uint64_t m = 0; m < r.M; ++m) {
      std::fill(raw.begin(), raw.end(), 0);
      elements(r, m_seed, false, m, k0, kn, raw.data());
      for (uint64_t k = 0; k < kn; ++k) {
        if (fp) {
          uint16_t h;
          std::memcpy(&h, &raw[2 * k], 2);
          af[k] = core::ieee::f16_to_f32(h);
        } else {
          ai[k] = static_cast<int8_t>(raw[k]);
        }
      }
      uint32_t* out = &c[m * width];
      if (fp) {
        reference_dot_fp16(af.data(), static_cast<uint32_t>(kn), wf.data(), width, width, of.data());
        for (uint32_t e = 0; e < width; ++e)
          out[e] = t == p.t0 ? bits(of[e]) : core::ieee::add_fp32(out[e], bits(of[e]));
      } else {
        ref_dot_int8(ai.data(), static_cast<uint32_t>(kn), wi.data(), width, oi.data());
        for (uint32_t e = 0; e < width; ++e) out[e] = (t == p.t0 ? 0u : out[e]) + static_cast<uint32_t>(oi[e]);
      }
    }
  }
  return c;
}

MatmulData::Result MatmulData::check() const {
  const sched::MatmulRequest& r = m_plan.req;
  const bool fp = r.dtype == core::Dtype::fp16;
  auto add = [fp](uint32_t a, uint32_t b) { return fp ? core::ieee::add_fp32(a, b) : a + b; };
  const core::Dtype out_dt = fp ? core::Dtype::fp32 : core::Dtype::int32;
  Result res;
  std::vector<uint8_t> got;
  const uint32_t groups = static_cast<uint32_t>(m_plan.parts.size() / r.row);  // 1 with --widest-share
  for (uint32_t g = 0; g < groups; ++g) {
    const uint32_t base = g * r.row;
    std::vector<std::vector<uint32_t>> parts(r.row);
    for (uint32_t i = 0; i < r.row; ++i) parts[i] = partial(m_plan.parts[base + i]);
    const sched::MatmulPart& first = m_plan.parts[base];
    const uint32_t jn = first.j1 - first.j0, width = jn * kCols;
    // Final values and where they are: (holder, rows) per piece.
    struct Piece {
      uint32_t holder;
      uint64_t m0, m1;
    };
    std::vector<Piece> pieces;
    std::vector<uint32_t> expect = parts[0];
    if (r.row == 1) {
      pieces.push_back(Piece{base, 0, r.M});
    } else {
      const sched::MatmulGroup& grp = m_plan.groups[g];
      for (const sched::MatmulGroup::Piece& pc : grp.pieces) {
        pieces.push_back(Piece{pc.holder[0], pc.m0, pc.m1});
        for (uint64_t m = pc.m0; m < pc.m1; ++m)
          for (uint32_t e = 0; e < width; ++e) {
            uint32_t total = 0;
            for (size_t k = 0; k < grp.nodes.size(); ++k) {
              const uint32_t h = pc.holder[k] - base;
              uint32_t s = parts[h][m * width + e];
              for (uint32_t member : grp.nodes[k])
                if (member != pc.holder[k]) s = add(s, parts[member - base][m * width + e]);
              total = k == 0 ? s : add(total, s);
            }
            expect[m * width + e] = total;
          }
      }
    }
    for (const Piece& pc : pieces) {
      const sched::MatmulPart& h = m_plan.parts[pc.holder];
      // Rows a block apart are apart in host memory too: one read per block.
      const uint64_t block = m_plan.block_rows ? m_plan.block_rows : r.M;
      for (uint64_t b0 = pc.m0; b0 < pc.m1; b0 = std::min(pc.m1, (b0 / block + 1) * block))
        for (uint32_t j = 0; j < jn; ++j) {
          const uint64_t b1 = std::min(pc.m1, (b0 / block + 1) * block), rows = b1 - b0;
          got.resize(rows * tsp::kResultVectors * tsp::kVectorBytes);
          const uint64_t at = m_plan.c_vector(h, first.j0 + j, b0) * tsp::kVectorBytes;
          if (r.host_outputs)  // what reached host memory (a vector never written reads as zero and mismatches)
            m_sys.host.received(h.chip, at, got.data(), got.size());
          else
            m_sys.host.read(h.chip, at, got.data(), got.size());
          for (uint64_t m = b0; m < b1; ++m)
            for (uint32_t e = 0; e < kCols; ++e) {
              const uint64_t col = uint64_t(first.j0 + j) * kCols + e;
              if (col >= r.L) continue;  // padding columns of the last tile
              uint32_t w;
              std::memcpy(&w, &got[((m - b0) * kCols + e) * 4], 4);
              const uint32_t x = expect[m * width + j * kCols + e];
              ++res.elements;
              if (w == x) continue;
              ++res.mismatched;
              if (res.first.size() < 5) {
                uint8_t xb[4], wb[4];
                std::memcpy(xb, &x, 4);
                std::memcpy(wb, &w, 4);
                res.first.push_back(Mismatch{m, col, core::element_value(out_dt, xb), core::element_value(out_dt, wb)});
              }
            }
        }
    }
  }
  return res;
}

}  // namespace fabricvp::groq
