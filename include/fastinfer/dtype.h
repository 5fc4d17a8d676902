#pragma once
// Element types that cross the public API.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fastinfer {

enum class DType : std::uint8_t {
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt32,
  kInt64,
  kUInt8,
  kFloat8E4M3,
  kFloat8E5M2,
};

// Bytes per element.
constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kUInt8:
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2: return 1;
  }
  return 0;
}

// The name used in error messages and in Python ("bfloat16", "float8_e4m3fn", ...).
std::string_view dtype_name(DType t);

constexpr bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat64 || t == DType::kFloat8E4M3 || t == DType::kFloat8E5M2;
}

}  // namespace fastinfer
