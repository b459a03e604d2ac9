#include "models/tsp/vxm.h"

#include <cmath>
#include <cstring>

namespace fabricvp::tsp {

using core::ieee::bits_of;
using core::ieee::float_of;

// Compiled with -ffp-contract=off (CMakeLists.txt): every product and sum is
// its own binary32 operation, on every host.
uint32_t rsqrt_fp32(uint32_t x) {
  const uint32_t sign = x & 0x80000000u, mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return core::ieee::kNaN32;  // NaN
  if (mag == 0) return sign | 0x7f800000u;           // +-0 -> +-inf
  if (sign) return core::ieee::kNaN32;               // negative
  if (mag == 0x7f800000u) return 0;                  // +inf -> +0
  float scale = 1.0f;
  if (mag < 0x00800000u) {  // subnormal: x * 2^24 is normal; rsqrt(x) = rsqrt(x * 2^24) * 2^12
    x = bits_of(float_of(x) * 16777216.0f);
    scale = 4096.0f;
  }
  const float v = float_of(x), half = 0.5f * v;
  float y = float_of(0x5f3759dfu - (x >> 1));
  for (int i = 0; i < 2; ++i) {
    const float yy = y * y;
    const float t = half * yy;
    y = y * (1.5f - t);
  }
  return bits_of(y * scale);
}

uint32_t exp_fp32(uint32_t xb) {
  const uint32_t mag = xb & 0x7fffffffu;
  if (mag > 0x7f800000u) return core::ieee::kNaN32;
  const float x = float_of(xb);
  if (x > 88.7228394f) return 0x7f800000u;  // past ln(FLT_MAX): +inf (and +inf itself)
  if (x < -103.972084f) return 0;           // below ln(2^-150): +0 (and -inf)
  const float kf = std::floor(x * 1.44269502f + 0.5f);
  const float r = (x - kf * 0.693145751953125f) - kf * 1.42860677e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int k = static_cast<int>(kf);
  auto pow2 = [](int e) { return float_of(static_cast<uint32_t>(e + 127) << 23); };  // -126 <= e <= 127
  if (k > 127) return bits_of(p * pow2(127) * pow2(k - 127));
  if (k < -126) return bits_of(p * pow2(k + 126) * pow2(-126));
  return bits_of(p * pow2(k));
}

void narrow(core::Dtype to, const uint8_t* lo, const uint8_t* hi, uint8_t* out) {
  for (uint32_t e = 0; e < 160; ++e) {
    const uint8_t* src = e < 80 ? lo + 4 * e : hi + 4 * (e - 80);
    uint32_t w;
    std::memcpy(&w, src, 4);
    const uint16_t h =
        to == core::Dtype::bf16 ? core::ieee::f32_to_bf16(float_of(w)) : core::ieee::f32_to_f16(float_of(w));
    std::memcpy(out + 2 * e, &h, 2);
  }
}

void widen(core::Dtype from, const uint8_t* in, uint8_t* lo, uint8_t* hi) {
  for (uint32_t e = 0; e < 160; ++e) {
    uint16_t h;
    std::memcpy(&h, in + 2 * e, 2);
    const uint32_t w = bits_of(from == core::Dtype::bf16 ? core::ieee::bf16_to_f32(h) : core::ieee::f16_to_f32(h));
    std::memcpy(e < 80 ? lo + 4 * e : hi + 4 * (e - 80), &w, 4);
  }
}

uint32_t max_fp32(uint32_t a, uint32_t b) {
  const float x = core::ieee::float_of(a), y = core::ieee::float_of(b);
  if (x != x || y != y) return 0x7fc00000u;  // the canonical NaN
  return y > x ? b : a;
}

}  // namespace fabricvp::tsp
