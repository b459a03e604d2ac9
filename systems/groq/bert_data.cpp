#include "systems/groq/bert_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "models/core/context.h"
#include "models/core/dtype.h"
#include "models/tsp/isa.h"
#include "models/tsp/vxm.h"

namespace fabricvp::groq {

namespace {
constexpr uint32_t kK = sched::kBertK, kL = sched::kBertLanes;
constexpr uint32_t kLanes32 = tsp::kVectorBytes / 4, kLanes16 = tsp::kVectorBytes / 2;

enum Tensor : uint32_t { kWqkv, kBqkv, kWo, kBo, kW1, kB1, kW2, kB2, kG1, kBe1, kG2, kBe2 };

float round16(float f) { return core::ieee::f16_to_f32(core::ieee::f32_to_f16(f)); }
float rsqrt(float f) { return core::ieee::float_of(tsp::rsqrt_fp32(core::ieee::bits_of(f))); }
float vexp(float f) { return core::ieee::float_of(tsp::exp_fp32(core::ieee::bits_of(f))); }

/// The constants' values (sw/sched/bert.h BertConst), shared by the load and the reference.
float inv_h(uint32_t H) { return 1.0f / static_cast<float>(H); }
constexpr float kNegEps = -1e-12f, kGeluC1 = 0.044715f, kNegOne = -1.0f;
const float kGeluC2 = static_cast<float>(-2.0 * std::sqrt(2.0 / 3.14159265358979323846));

/// Pairwise tree sum (sw/sched/bert.cpp Compiler::tree): level by level, v[i] + v[i + h], an odd last row carried.
float tree_sum(std::vector<float>& v, uint32_t n) {
  while (n > 1) {
    const uint32_t h = n / 2;
    for (uint32_t i = 0; i < h; ++i) v[i] = v[i] + v[i + h];
    if (n % 2) v[h] = v[2 * h];
    n = h + n % 2;
  }
  return v[0];
}
}  // namespace

BertData::BertData(System& sys, const sched::BertPlan& plan, uint64_t seed) : m_sys(sys), m_plan(plan), m_seed(seed) {}

float BertData::element(uint32_t e, uint32_t tensor, uint64_t idx) const {
  const sched::BertRequest& r = m_plan.req;
  const uint64_t h =
      core::splitmix64(core::splitmix64(m_seed * 0x9e3779b97f4a7c15ULL + uint64_t(e) * 64 + tensor) + idx);
  const float v = 2.0f * (static_cast<float>(h >> 40) * (1.0f / 16777216.0f)) - 1.0f;  // [-1, 1), exact
  switch (tensor) {
    case kWqkv: {  // U(-a, a), a = sqrt(3 / fan_in): variance 1 / fan_in; W_q also carries 1 / sqrt(dh)
      float w = v * std::sqrt(3.0f / static_cast<float>(r.hidden));
      if (idx % (3 * r.hidden) < r.hidden) w /= std::sqrt(static_cast<float>(m_plan.dh));
      return round16(w);
    }
    case kBqkv: return round16(0.1f * v / (idx < r.hidden ? std::sqrt(static_cast<float>(m_plan.dh)) : 1.0f));
    case kWo:
    case kW1: return round16(v * std::sqrt(3.0f / static_cast<float>(r.hidden)));
    case kW2: return round16(v * std::sqrt(3.0f / static_cast<float>(r.ffn)));
    case kBo:
    case kB1:
    case kB2: return round16(0.1f * v);
    case kG1:
    case kG2: return 1.0f + 0.1f * v;
    default: return 0.1f * v;  // LayerNorm betas
  }
}

float BertData::input(uint32_t inference, uint64_t s, uint64_t f) const {
  const uint64_t h = core::splitmix64(core::splitmix64(m_seed * 0x9e3779b97f4a7c15ULL + 0xbe27ULL + inference) +
                                      s * m_plan.req.hidden + f);
  return (2.0f * (static_cast<float>(h >> 40) * (1.0f / 16777216.0f)) - 1.0f) * 1.7f;
}

void BertData::input_vectors(uint32_t inference, uint8_t* out) const {
  // binary32 [tile][feature][4 x 80 lanes]: lane e of vector q of tile p is position p * 320 + q * 80 + e.
  const uint32_t H = m_plan.req.hidden, S = m_plan.req.seq;
  float* o = reinterpret_cast<float*>(out);
  for (uint32_t p = 0; p < m_plan.tiles; ++p)
    for (uint32_t f = 0; f < H; ++f)
      for (uint32_t l = 0; l < kL; ++l) {
        const uint32_t s = p * kL + l;
        o[(uint64_t(p) * H + f) * kL + l] = s < S ? input(inference, s, f) : 0.0f;
      }
}

void BertData::load(bool timing_only) {
  const sched::BertRequest& r = m_plan.req;
  const uint32_t H = r.hidden, F = r.ffn, S = r.seq;
  if (!r.launched) {
    std::vector<Host::TimedWrite> writes;
    for (const sched::BertPlan::Input& in : m_plan.inputs) writes.push_back(input_write(in.inference, timing_only));
    m_sys.host.schedule(std::move(writes));
  }
  if (timing_only) return;

  std::vector<uint16_t> v16;
  std::vector<float> v32;
  for (const sched::BertPart& P : m_plan.parts) {
    auto put = [&](uint64_t vec, const void* data, uint64_t vectors) {
      m_sys.host.write(P.chip, vec * tsp::kVectorBytes, data, vectors * tsp::kVectorBytes);
    };
    for (uint32_t e = 0; e < P.encs; ++e) {
      const uint32_t g = P.enc0 + e;
      const uint64_t base = P.w_vec + uint64_t(e) * m_plan.enc_vectors;
      // W^T chunk-major: vector kc * out + f' holds rows kc*160 .. of column f', the bias in lane (in - kc*160).
      auto linear = [&](uint32_t off, uint32_t in, uint32_t out, uint32_t tw, uint32_t tb) {
        const uint32_t nk = (in + 1 + kK - 1) / kK;
        for (uint32_t kc = 0; kc < nk; ++kc) {
          v16.assign(uint64_t(out) * kLanes16, 0);
          for (uint32_t f = 0; f < out; ++f)
            for (uint32_t k = 0; k < kK; ++k) {
              const uint32_t row = kc * kK + k;
              if (row > in) break;
              const float w = row < in ? element(g, tw, uint64_t(row) * out + f) : element(g, tb, f);
              v16[uint64_t(f) * kLanes16 + k] = core::ieee::f32_to_f16(w);
            }
          put(base + off + uint64_t(kc) * out, v16.data(), out);
        }
      };
      linear(m_plan.w_qkv, H, 3 * H, kWqkv, kBqkv);
      linear(m_plan.w_o, H, H, kWo, kBo);
      linear(m_plan.w_1, H, F, kW1, kB1);
      linear(m_plan.w_2, F, H, kW2, kB2);
      // LayerNorm: gamma and -beta, one vector per feature, every lane equal.
      auto per_feature = [&](uint32_t off, uint32_t t, bool negate) {
        v32.assign(uint64_t(H) * kLanes32, 0.0f);
        for (uint32_t f = 0; f < H; ++f) {
          const float x = element(g, t, f);
          std::fill_n(&v32[uint64_t(f) * kLanes32], kLanes32, negate ? -x : x);
        }
        put(base + off, v32.data(), H);
      };
      per_feature(m_plan.ln_g1, kG1, false);
      per_feature(m_plan.ln_b1, kBe1, true);
      per_feature(m_plan.ln_g2, kG2, false);
      per_feature(m_plan.ln_b2, kBe2, true);
    }
    // Constants (sw/sched/bert.h BertConst).
    v16.assign(kLanes16, core::ieee::f32_to_f16(1.0f));
    put(P.const_vec + sched::kBertOnes, v16.data(), 1);
    const float c[] = {inv_h(H), kNegEps, kGeluC1, kGeluC2, kNegOne};
    const uint32_t at[] = {sched::kBertInvH, sched::kBertNegEps, sched::kBertGeluC1, sched::kBertGeluC2,
                           sched::kBertNegOne};
    for (size_t k = 0; k < 5; ++k) {
      v32.assign(kLanes32, c[k]);
      put(P.const_vec + at[k], v32.data(), 1);
    }
    v32.assign(kL, 0.0f);  // the last position tile's real positions
    for (uint32_t l = 0; l < kL; ++l) v32[l] = (m_plan.tiles - 1) * kL + l < S ? 1.0f : 0.0f;
    put(P.const_vec + sched::kBertMask, v32.data(), 4);
    // Ones rows, 4 per position tile: 1.0 in the lanes of real positions.
    for (size_t k = 0; k < P.ones.size(); ++k) {
      const uint32_t p = static_cast<uint32_t>(k / 4);
      v16.assign(2 * kLanes16, 0);
      for (uint32_t l = 0; l < kL; ++l)
        if (p * kL + l < S) v16[l] = core::ieee::f32_to_f16(1.0f);
      put(P.ones[k], v16.data(), 2);
    }
  }
}

Host::TimedWrite BertData::input_write(uint32_t inference, bool timing_only) const {
  const sched::BertPlan::Input& in = m_plan.inputs[m_plan.req.launched ? 0 : inference];
  Host::TimedWrite w;
  w.chip = m_plan.parts[0].chip;
  w.addr = uint64_t(in.addr) * tsp::kVectorBytes;
  w.len = uint64_t(in.n) * tsp::kVectorBytes;
  w.ready_ps = in.start_ps;
  if (!timing_only) w.fill = [this, inference](uint8_t* out) { input_vectors(inference, out); };
  return w;
}

void BertData::capture(uint32_t run) { compare(run, m_plan.host_out_vec(0), m_launched); }

std::vector<float> BertData::reference(uint32_t inference) const {
  const sched::BertRequest& r = m_plan.req;
  const uint32_t H = r.hidden, F = r.ffn, S = r.seq, dh = m_plan.dh;
  std::vector<float> x(uint64_t(S) * H);
  for (uint32_t s = 0; s < S; ++s)
    for (uint32_t f = 0; f < H; ++f) x[uint64_t(s) * H + f] = input(inference, s, f);

  // a16 [S][in] x W [in][out] + b: per 160-row chunk a k-sequential binary32
  // sum from +0 (the bias row last, times the ones row's 1.0), chunks accumulated in order.
  std::vector<float> W, part, acc;
  auto linear = [&](uint32_t g, const std::vector<float>& a16, uint32_t in, uint32_t out, uint32_t tw, uint32_t tb) {
    W.resize(uint64_t(in + 1) * out);
    for (uint64_t k = 0; k < in; ++k)
      for (uint32_t f = 0; f < out; ++f) W[k * out + f] = element(g, tw, k * out + f);
    for (uint32_t f = 0; f < out; ++f) W[uint64_t(in) * out + f] = element(g, tb, f);
    std::vector<float> y(uint64_t(S) * out);
    part.resize(out);
    acc.resize(out);
    const uint32_t nk = (in + 1 + kK - 1) / kK;
    for (uint32_t s = 0; s < S; ++s) {
      for (uint32_t kc = 0; kc < nk; ++kc) {
        std::fill(part.begin(), part.end(), 0.0f);
        for (uint32_t k = kc * kK; k < std::min(in + 1, (kc + 1) * kK); ++k) {
          const float av = k < in ? a16[uint64_t(s) * in + k] : 1.0f;
          const float* w = &W[uint64_t(k) * out];
          for (uint32_t f = 0; f < out; ++f) part[f] = part[f] + w[f] * av;
        }
        for (uint32_t f = 0; f < out; ++f) acc[f] = kc == 0 ? part[f] : acc[f] + part[f];
      }
      std::copy(acc.begin(), acc.end(), &y[uint64_t(s) * out]);
    }
    return y;
  };
  auto rounded = [](std::vector<float> v) {
    for (float& f : v) f = round16(f);
    return v;
  };
  std::vector<float> col(H);
  auto layernorm = [&](uint32_t g, const std::vector<float>& y, uint32_t tg, uint32_t tb) {
    std::vector<float> out(y.size());
    const float ih = inv_h(H);
    for (uint32_t s = 0; s < S; ++s) {
      const float* ys = &y[uint64_t(s) * H];
      col.assign(ys, ys + H);
      const float mean = tree_sum(col, H) * ih;
      std::vector<float> d(H);
      for (uint32_t f = 0; f < H; ++f) d[f] = ys[f] - mean;
      for (uint32_t f = 0; f < H; ++f) col[f] = d[f] * d[f];
      const float var = tree_sum(col, H) * ih;
      const float rstd = rsqrt(var - kNegEps);
      for (uint32_t f = 0; f < H; ++f)
        out[uint64_t(s) * H + f] = d[f] * rstd * element(g, tg, f) - (-element(g, tb, f));
    }
    return out;
  };

  const uint32_t nks = (S + kK - 1) / kK;
  std::vector<float> e16(uint64_t(S) * S), sum(S), cu(uint64_t(dh) * S), ctx(uint64_t(S) * H);
  for (uint32_t g = 0; g < r.encoders; ++g) {
    const std::vector<float> x16 = rounded(x);
    const std::vector<float> qkv16 = rounded(linear(g, x16, H, 3 * H, kWqkv, kBqkv));
    auto Q = [&](uint32_t s, uint32_t c) { return qkv16[uint64_t(s) * 3 * H + c]; };
    for (uint32_t h = 0; h < r.heads; ++h) {
      const uint32_t q0 = h * dh, k0 = H + h * dh, v0 = 2 * H + h * dh;
      for (uint32_t t = 0; t < S; ++t)
        for (uint32_t s = 0; s < S; ++s) {
          float p = 0.0f;
          for (uint32_t d = 0; d < dh; ++d) p = p + Q(t, k0 + d) * Q(s, q0 + d);
          e16[uint64_t(t) * S + s] = p;  // the score, for now
        }
      // Softmax: each query's largest score subtracted (exact: the order of the
      // chips' MAX tree can only change the sign of a zero maximum, which
      // neither the difference's exponential nor anything after sees).
      for (uint32_t s = 0; s < S; ++s) {
        uint32_t top = core::ieee::bits_of(e16[s]);
        for (uint32_t t = 1; t < S; ++t) top = tsp::max_fp32(top, core::ieee::bits_of(e16[uint64_t(t) * S + s]));
        const float m = core::ieee::float_of(top);
        for (uint32_t t = 0; t < S; ++t) e16[uint64_t(t) * S + s] = round16(vexp(e16[uint64_t(t) * S + s] - m));
      }
      for (uint32_t s = 0; s < S; ++s) {
        float a = 0.0f;
        for (uint32_t kc = 0; kc < nks; ++kc) {
          float p = 0.0f;
          for (uint32_t t = kc * kK; t < std::min(S, (kc + 1) * kK); ++t) p = p + e16[uint64_t(t) * S + s] * 1.0f;
          a = kc == 0 ? p : a + p;
        }
        sum[s] = a;
      }
      for (uint32_t d = 0; d < dh; ++d)
        for (uint32_t s = 0; s < S; ++s) {
          float a = 0.0f;
          for (uint32_t kc = 0; kc < nks; ++kc) {
            float p = 0.0f;
            for (uint32_t t = kc * kK; t < std::min(S, (kc + 1) * kK); ++t)
              p = p + Q(t, v0 + d) * e16[uint64_t(t) * S + s];
            a = kc == 0 ? p : a + p;
          }
          cu[uint64_t(d) * S + s] = a;
        }
      for (uint32_t s = 0; s < S; ++s) {
        float rr = rsqrt(sum[s]);
        rr = rr * rr;
        for (uint32_t d = 0; d < dh; ++d) ctx[uint64_t(s) * H + q0 + d] = cu[uint64_t(d) * S + s] * rr;
      }
    }
    std::vector<float> y = linear(g, rounded(ctx), H, H, kWo, kBo);
    for (size_t k = 0; k < y.size(); ++k) y[k] = y[k] + x[k];
    const std::vector<float> x1 = layernorm(g, y, kG1, kBe1);
    std::vector<float> hh = linear(g, rounded(x1), H, F, kW1, kB1);
    for (float& v : hh) {  // GELU, operation by operation as the VXM runs it
      float a = v * v;
      a = a * kGeluC1;
      a = a * v;
      a = a + v;
      a = a * kGeluC2;
      a = vexp(a);
      a = a - kNegOne;
      a = rsqrt(a);
      a = a * a;
      v = v * a;
    }
    y = linear(g, rounded(hh), F, H, kW2, kB2);
    for (size_t k = 0; k < y.size(); ++k) y[k] = y[k] + x1[k];
    x = layernorm(g, y, kG2, kBe2);
  }
  return x;
}

void BertData::compare(uint32_t inference, uint64_t vec, Result& res) const {
  const sched::BertRequest& r = m_plan.req;
  const uint32_t H = r.hidden, S = r.seq;
  std::vector<float> got(m_plan.x_vectors() * kLanes32);
  const bool all = m_sys.host.received(m_plan.parts.back().chip, vec * tsp::kVectorBytes, got.data(),
                                       m_plan.x_vectors() * tsp::kVectorBytes);
  const std::vector<float> want = reference(inference);
  for (uint32_t s = 0; s < S; ++s)
    for (uint32_t f = 0; f < H; ++f) {
      const float w = want[uint64_t(s) * H + f];
      const float g = got[(uint64_t(s / kL) * H + f) * kL + s % kL];
      ++res.elements;
      const bool finite = std::isfinite(w) && std::isfinite(g);
      if (finite) res.max_abs = std::max(res.max_abs, std::fabs(double(g)));
      res.nonfinite += !finite;
      if (all && finite && core::ieee::bits_of(w) == core::ieee::bits_of(g)) continue;
      ++res.mismatched;
      if (res.first.size() < 5) res.first.push_back(Mismatch{inference, s, f, w, g});
    }
}

BertData::Result BertData::check(uint32_t runs) const {
  if (m_plan.req.launched) return m_launched;
  Result res;
  for (uint32_t i = 0; i < runs; ++i) compare(i, m_plan.host_out_vec(i), res);
  return res;
}

}  // namespace fabricvp::groq
