#include "models/tsp/mxm.h"

#include <cstring>
#include <stdexcept>

namespace fabricvp::tsp {

namespace {

constexpr uint32_t kCols = kMxmColumns;

// The inner products, column by column in k order. Written so that the
// compiler vectorizes across the 320 columns (each column's sum keeps its own
// k order, so the result is the sequential one); on x86-64 a copy for AVX2 is
// chosen at run time where the host has it (same results: products are exact).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define FABRICVP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FABRICVP_CLONES
#endif

FABRICVP_CLONES void dot_fp16(const float* a, const float* w, float* acc) {
  for (uint32_t j = 0; j < kCols; ++j) acc[j] = 0.0f;
  for (uint32_t k = 0; k < 160; ++k) {
    const float x = a[k];
    const float* row = w + k * kCols;
    for (uint32_t j = 0; j < kCols; ++j) acc[j] += x * row[j];
  }
}

FABRICVP_CLONES void dot_int8(const int8_t* a, const int16_t* w, int32_t* acc) {
  for (uint32_t j = 0; j < kCols; ++j) acc[j] = 0;
  for (uint32_t k = 0; k < 320; ++k) {
    const int32_t x = a[k];
    const int16_t* row = w + k * kCols;
    for (uint32_t j = 0; j < kCols; ++j) acc[j] += x * row[j];
  }
}

}  // namespace

void WeightTile::begin(core::Dtype dt, uint32_t vectors) {
  m_dt = dt;
  if (dt == core::Dtype::fp16) {
    if (!m_f) m_f.reset(new float[160 * kCols]);
    m_rows = (vectors + 1) / 2;
    std::memset(m_f.get() + m_rows * kCols, 0, (160 - m_rows) * kCols * sizeof(float));
    if (vectors % 2) std::memset(m_f.get() + (m_rows - 1) * kCols + 160, 0, 160 * sizeof(float));  // half a row
  } else if (dt == core::Dtype::int8) {
    if (!m_i) m_i.reset(new int16_t[320 * kCols]);
    m_rows = vectors;
    std::memset(m_i.get() + m_rows * kCols, 0, (320 - m_rows) * kCols * sizeof(int16_t));
  } else {
    throw std::logic_error("WeightTile: the MXM takes fp16 or int8 weights");
  }
}

void WeightTile::load(uint32_t v, const uint8_t* vec) {
  if (m_dt == core::Dtype::fp16) {
    // Row k is vectors 2k (columns 0..159) and 2k + 1 (columns 160..319).
    float* out = m_f.get() + (v / 2) * kCols + (v % 2) * 160;
    for (uint32_t e = 0; e < 160; ++e) {
      uint16_t h;
      std::memcpy(&h, vec + 2 * e, 2);
      out[e] = core::ieee::f16_to_f32(h);
    }
  } else {
    int16_t* out = m_i.get() + v * kCols;
    for (uint32_t e = 0; e < kCols; ++e) out[e] = static_cast<int8_t>(vec[e]);
  }
}

void WeightTile::multiply(const uint8_t* in, uint32_t* out) const {
  if (m_dt == core::Dtype::fp16) {
    float a[160];
    for (uint32_t k = 0; k < 160; ++k) {
      uint16_t h;
      std::memcpy(&h, in + 2 * k, 2);
      a[k] = core::ieee::f16_to_f32(h);
    }
    float acc[kCols];
    dot_fp16(a, m_f.get(), acc);
    for (uint32_t j = 0; j < kCols; ++j) {
      std::memcpy(&out[j], &acc[j], 4);
      if (acc[j] != acc[j]) out[j] = core::ieee::kNaN32;
    }
  } else {
    int32_t acc[kCols];
    dot_int8(reinterpret_cast<const int8_t*>(in), m_i.get(), acc);
    std::memcpy(out, acc, sizeof acc);
  }
}

}  // namespace fabricvp::tsp
