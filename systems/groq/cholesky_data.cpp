#include "systems/groq/cholesky_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "models/core/config.h"
#include "models/core/context.h"
#include "models/core/dtype.h"
#include "models/tsp/isa.h"
#include "models/tsp/vxm.h"
#include "systems/groq/matmul_data.h"

namespace fabricvp::groq {

namespace {
constexpr uint32_t kRows = sched::kCholeskyRows, kK = sched::kCholeskyK, kF32 = sched::kCholeskyF32;

float round_fp16(float f) { return core::ieee::f16_to_f32(core::ieee::f32_to_f16(f)); }
float rsqrt(float f) { return core::ieee::float_of(tsp::rsqrt_fp32(core::ieee::bits_of(f))); }
}  // namespace

float CholeskyInput::at(uint64_t r, uint64_t c) const {
  return file ? file->at(r, c) : CholeskyData::a_element(n, seed, r, c);
}

CholeskyInput CholeskyInput::read(const std::string& path, uint64_t max_n) {
  CholeskyInput a;
  auto m = std::make_shared<core::MatrixMarket>(core::read_matrix_market(path, max_n));
  if (m->rows != m->cols)
    throw core::ConfigError(
        fmt::format("{}: A is {} x {}; a Cholesky factorization needs a square matrix", path, m->rows, m->cols));
  if (!m->symmetric)
    for (uint64_t c = 0; c < m->cols; ++c)
      for (uint64_t r = c + 1; r < m->rows; ++r)
        if (m->at(r, c) != m->at(c, r))
          throw core::ConfigError(fmt::format("{}: A is not symmetric: A({}, {}) = {} but A({}, {}) = {} (1-based)",
                                              path, r + 1, c + 1, m->at(r, c), c + 1, r + 1, m->at(c, r)));
  a.n = m->rows;
  a.file = std::move(m);
  a.path = path;
  return a;
}

CholeskyData::CholeskyData(System& sys, const sched::CholeskyPlan& plan, CholeskyInput a)
    : m_sys(sys), m_plan(plan), m_a(std::move(a)) {}

float CholeskyData::a_element(uint64_t n, uint64_t seed, uint64_t r, uint64_t c) {
  if (r < c) std::swap(r, c);
  const uint64_t h = core::splitmix64(seed * 0x9e3779b97f4a7c15ULL + r * (r + 1) / 2 + c);
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits: exact in binary32
  return r == c ? static_cast<float>(n) + u : 2.0f * u - 1.0f;
}

void CholeskyData::load() {
  const uint64_t n = m_plan.req.n;
  std::vector<float> col(kRows);
  for (const sched::CholeskyPart& p : m_plan.parts) {
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      const uint64_t r0 = uint64_t(p.blocks[b]) * kRows, cols = m_plan.cols(p.blocks[b]);
      for (uint64_t j = 0; j < cols; ++j) {
        for (uint32_t e = 0; e < kRows; ++e) col[e] = r0 + e < n ? m_a.at(r0 + e, j) : 0.0f;
        m_sys.host.write(p.chip, (uint64_t(p.s_vec) + (p.col0[b] + j) * kF32) * tsp::kVectorBytes, col.data(),
                         kRows * 4);
      }
    }
    for (uint32_t l = 0; l < kRows; ++l) {  // mask l: 1 on and below the diagonal lane, else 0
      for (uint32_t e = 0; e < kRows; ++e) col[e] = e >= l ? 1.0f : 0.0f;
      m_sys.host.write(p.chip, (uint64_t(p.mask_vec) + l * kF32) * tsp::kVectorBytes, col.data(), kRows * 4);
    }
  }
  m_want = reference(m_a, m_rows);
}

std::vector<float> CholeskyData::reference(const CholeskyInput& a, uint64_t& rows) {
  const uint64_t n = a.n;
  const uint64_t blocks = (n + kRows - 1) / kRows;
  rows = blocks * kRows;
  const uint64_t chunks = (n + kK - 1) / kK;
  std::vector<float> L(n * rows, 0.0f);              // binary32 L, column-major
  std::vector<float> L16(chunks * kK * rows, 0.0f);  // fp16 L as binary32, columns past i still zero
  std::vector<float> x(chunks * kK, 0.0f), U(rows), part(rows), I(rows);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t rb = i / kRows, r0 = rb * kRows, width = rows - r0, l = i % kRows;
    const uint64_t nk = (i + kK - 1) / kK;
    for (uint64_t k = 0; k < nk * kK; ++k) x[k] = k < i ? L16[k * rows + i] : 0.0f;  // row i, TRANSPOSE zero-fills
    for (uint64_t kc = 0; kc < nk; ++kc) {
      reference_dot_fp16(&x[kc * kK], kK, &L16[kc * kK * rows + r0], rows, static_cast<uint32_t>(width), part.data());
      for (uint64_t e = 0; e < width; ++e) U[e] = kc == 0 ? part[e] : U[e] + part[e];
    }
    for (uint64_t e = 0; e < width; ++e) {
      const uint64_t r = r0 + e;
      const float s = r < n ? a.at(r, i) : 0.0f;
      I[e] = nk == 0 ? s : s - U[e];
    }
    if (!std::isfinite(I[l]))
      throw core::ConfigError(fmt::format(
          "{}: column {}'s pivot is {} in the chips' arithmetic: an element of L beyond fp16's range (65504), "
          "rounded for the MXM, made the products infinite; scale A down",
          a.file ? a.path : "the seeded A", i + 1, I[l]));
    if (!(I[l] > 0.0f))
      throw core::ConfigError(fmt::format(
          "{}: A is not positive definite in the chips' arithmetic: column {}'s pivot (A({}, {}) less the squares "
          "of row {} of L so far, binary32 with L in fp16) is {}, not positive",
          a.file ? a.path : "the seeded A", i + 1, i + 1, i + 1, i + 1, I[l]));
    const float scale = rsqrt(I[l]);
    for (uint64_t e = 0; e < width; ++e) {
      // The fly-by's order: (I x mask) x scale on the diagonal block, I x scale below it.
      const float v = e < kRows ? (I[e] * (e >= l ? 1.0f : 0.0f)) * scale : I[e] * scale;
      L[i * rows + r0 + e] = v;
      L16[i * rows + r0 + e] = round_fp16(v);
    }
  }
  return L;
}

CholeskyData::Result CholeskyData::check() const {
  const uint64_t n = m_plan.req.n;
  const uint64_t rows = m_rows;
  const std::vector<float>& want = m_want;
  std::vector<float> got(n * rows, 0.0f);
  std::vector<float> col(kRows);
  for (const sched::CholeskyPart& p : m_plan.parts)
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      const uint64_t r0 = uint64_t(p.blocks[b]) * kRows, cols = std::min<uint64_t>(n, m_plan.cols(p.blocks[b]));
      for (uint64_t j = 0; j < cols; ++j) {
        m_sys.host.read(p.chip, (uint64_t(p.s_vec) + (p.col0[b] + j) * kF32) * tsp::kVectorBytes, col.data(),
                        kRows * 4);
        std::copy(col.begin(), col.end(), &got[j * rows + r0]);
      }
    }
  Result res;
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t r = j; r < n; ++r) {
      const float w = want[j * rows + r], g = got[j * rows + r];
      ++res.elements;
      if (core::ieee::bits_of(w) == core::ieee::bits_of(g)) continue;
      ++res.mismatched;
      if (res.first.size() < 5) res.first.push_back(Mismatch{r, j, w, g});
    }
  // ||L L^T - A||_F / ||A||_F over the lower triangle (both halves counted), row-major binary64.
  std::vector<double> Lr(n * n, 0.0);
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t r = j; r < n; ++r) Lr[r * n + j] = got[j * rows + r];
  double num = 0, den = 0;
  for (uint64_t r = 0; r < n; ++r)
    for (uint64_t c = 0; c <= r; ++c) {
      const double* a = &Lr[r * n];
      const double* b = &Lr[c * n];
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      uint64_t k = 0;
      for (; k + 4 <= c + 1; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
      }
      for (; k <= c; ++k) s0 += a[k] * b[k];
      const double av = m_a.at(r, c), d = (s0 + s1) + (s2 + s3) - av, wgt = r == c ? 1.0 : 2.0;
      num += wgt * d * d;
      den += wgt * av * av;
    }
  res.residual = den > 0 ? std::sqrt(num / den) : 0.0;
  return res;
}

}  // namespace fabricvp::groq
