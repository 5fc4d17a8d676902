#pragma once
// NVFP4 element and scale codecs shared by the CPU reference and the CUDA kernels (one definition,
// so the two cannot drift). Definitions: ../shared/DESIGN.md "NVFP4" (FlashInfer's format).
//   e2m1 code: bit 3 = sign, bits 0..2 = magnitude index into {0, .5, 1, 1.5, 2, 3, 4, 6}.
//   e4m3 (fn) scale: 1-4-3, bias 7, no infinities, 0x7f/0xff = NaN, max 448.
// Only IEEE operations (no FMA-contractible patterns, no approximate reciprocals), so host and
// device give the same bits.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FASTINFER_HD __host__ __device__ __forceinline__
#else
#define FASTINFER_HD inline
#endif

namespace fastinfer::nvfp4::codec {

inline constexpr int kBlock = 16;            // elements per e4m3 block scale
inline constexpr float kE2m1Max = 6.0f;
inline constexpr float kE4m3Max = 448.0f;

// Magnitude of an e2m1 code (sign applied).
FASTINFER_HD float e2m1_to_float(std::uint8_t code) {
  const std::uint8_t mag = code & 7;
  const float v = mag < 2 ? 0.5f * mag : (mag < 4 ? 1.0f + 0.5f * (mag - 2) : (mag < 6 ? 2.0f + (mag - 4) : 4.0f + 2.0f * (mag - 6)));
  return (code & 8) ? -v : v;
}

// Round to nearest e2m1, ties to even code (even mantissa bit), saturating at +-6. The sign bit is
// the input's sign (so -0.1 -> 0x8, as IEEE rounding keeps the sign). NaN -> 0x7 (+6).
FASTINFER_HD std::uint8_t e2m1_from_float(float v) {
  if (v != v) return 7;
  const std::uint8_t sign = std::signbit(v) ? 8 : 0;
  const float a = std::fabs(v);
  std::uint8_t mag;
  if (a <= 0.25f) mag = 0;        // tie 0.25 -> 0 (even)
  else if (a < 0.75f) mag = 1;    // tie 0.75 -> 1.0 (even)
  else if (a <= 1.25f) mag = 2;   // tie 1.25 -> 1.0
  else if (a < 1.75f) mag = 3;    // tie 1.75 -> 2.0
  else if (a <= 2.5f) mag = 4;    // tie 2.5 -> 2.0
  else if (a < 3.5f) mag = 5;     // tie 3.5 -> 4.0
  else if (a <= 5.0f) mag = 6;    // tie 5 -> 4.0
  else mag = 7;                   // > 5 -> 6, saturating
  return sign | mag;
}

// Exact value of an e4m3 (fn) byte.
FASTINFER_HD float e4m3_to_float(std::uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  float v;
  if (e == 15 && m == 7) v = NAN;
  else if (e == 0) v = std::ldexp(static_cast<float>(m), -9);
  else v = std::ldexp(static_cast<float>(8 + m), e - 10);
  return (b & 0x80) ? -v : v;
}

// Software e4m3 conversion: round to nearest even, satfinite (|x| > 448 -> 448), NaN -> 0x7f.
// The CUDA kernels use the hardware cvt.rn.satfinite.e4m3x2.f32 instead; tests compare the two.
FASTINFER_HD std::uint8_t e4m3_from_float_satfinite(float x) {
  if (x != x) return 0x7f;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7e;
  if (a < 0.015625f) {  // below 2^-6: subnormal grid of 2^-9 (code 8 = 2^-6 is the first normal)
    const float q = std::nearbyint(a * 512.0f);
    return sign | static_cast<std::uint8_t>(q);
  }
  int e;
  const float f = std::frexp(a, &e);          // a = f * 2^e, f in [0.5, 1)
  float q = std::nearbyint(f * 16.0f);        // 4 significant bits, ties to even
  if (q == 16.0f) { q = 8.0f; ++e; }
  const int biased = e - 1 + 7;
  if (biased > 15 || (biased == 15 && q > 14.0f)) return sign | 0x7e;  // rounds past 448
  return sign | static_cast<std::uint8_t>((biased << 3) | (static_cast<int>(q) - 8));
}

// The block scale before its e4m3 rounding: g * amax / 6, evaluated as (g * amax) / 6.
FASTINFER_HD float block_scale_float(float global_scale, float amax) { return global_scale * amax / kE2m1Max; }

// The factor elements are multiplied by before e2m1 rounding: 1 / (sf / g); 0 when sf is 0 (an
// all-zero or vanishingly small block quantizes to zero codes instead of inf * 0 = NaN).
FASTINFER_HD float element_factor(float sf, float global_scale) { return sf == 0.0f ? 0.0f : 1.0f / (sf / global_scale); }

// Byte offset of scale (row n, block kb) in the 128x4-swizzled layout; k_tiles = ceil(K/16/4).
FASTINFER_HD std::int64_t swizzled_offset(std::int64_t n, std::int64_t kb, std::int64_t k_tiles) {
  return ((n / 128) * k_tiles + kb / 4) * 512 + (n % 32) * 16 + ((n % 128) / 32) * 4 + kb % 4;
}

}  // namespace fastinfer::nvfp4::codec
