#pragma once
// Host conversions for the 16-bit float formats (round to nearest even, IEEE semantics), and a
// dtype-dispatched element load/store used by every CPU reference.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fastinfer/tensor.h"

namespace fastinfer::ref {

inline float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

inline std::uint16_t float_to_bf16(float x) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // keep it a quiet NaN
  u += 0x7fff + ((u >> 16) & 1);                                              // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

inline std::uint16_t float_to_fp16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  const float a = std::fabs(x);
  if (std::isnan(x)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < 6.103515625e-05f) {               // subnormal: multiples of 2^-24, ties to even
    const float q = std::nearbyint(a * 16777216.0f);
    return sign | static_cast<std::uint16_t>(q);
  }
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits: scale to [1024, 2048) and round to nearest even.
  float q = std::nearbyint(m * 2048.0f);
  if (q == 2048.0f) {
    q = 1024.0f;
    ++e;
  }
  const int biased = e - 1 + 15;
  if (biased >= 31) return sign | 0x7c00;
  return sign | static_cast<std::uint16_t>((biased << 10) | (static_cast<std::uint32_t>(q) - 1024));
}

// Reads element `offset` (in elements) of a float tensor as double.
inline double load(const TensorView& t, std::int64_t offset) {
  const char* p = static_cast<const char*>(t.data) + offset * static_cast<std::int64_t>(t.element_size());
  switch (t.dtype) {
    case DType::kFloat32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::kFloat64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::kBFloat16: { std::uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
    case DType::kFloat16: { std::uint16_t v; std::memcpy(&v, p, 2); return fp16_to_float(v); }
    case DType::kInt32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kInt64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::kUInt8: return static_cast<unsigned char>(*p);
    default: return NAN;
  }
}

// Writes `value` into element `offset`, rounding float dtypes to nearest even and truncating
// integer ones.
inline void store(const TensorView& t, std::int64_t offset, double value) {
  char* p = static_cast<char*>(t.data) + offset * static_cast<std::int64_t>(t.element_size());
  switch (t.dtype) {
    case DType::kFloat32: { float v = static_cast<float>(value); std::memcpy(p, &v, 4); break; }
    case DType::kFloat64: std::memcpy(p, &value, 8); break;
    case DType::kBFloat16: { std::uint16_t v = float_to_bf16(static_cast<float>(value)); std::memcpy(p, &v, 2); break; }
    case DType::kFloat16: { std::uint16_t v = float_to_fp16(static_cast<float>(value)); std::memcpy(p, &v, 2); break; }
    case DType::kInt32: { auto v = static_cast<std::int32_t>(value); std::memcpy(p, &v, 4); break; }
    case DType::kInt64: { auto v = static_cast<std::int64_t>(value); std::memcpy(p, &v, 8); break; }
    case DType::kUInt8: *p = static_cast<char>(static_cast<unsigned char>(value)); break;
    default: break;  // fp8: no host conversion here (the NVFP4 code has its own)
  }
}

// Row-major offset of a multi-index under the view's strides.
template <class... I>
std::int64_t offset_of(const TensorView& t, I... idx) {
  std::int64_t o = 0;
  int d = 0;
  ((o += static_cast<std::int64_t>(idx) * t.strides[d++]), ...);
  return o;
}

}  // namespace fastinfer::ref
