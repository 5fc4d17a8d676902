#pragma once
// Launchers of the NVFP4 quantize / dequantize kernels (nvfp4_kernels.cu). Arguments are
// validated by the public entry (nvfp4.cpp) before these run.
#include <cstdint>

#include "fastinfer/context.h"
#include "fastinfer/nvfp4.h"

namespace fastinfer::nvfp4::detail {

struct QuantizeParams {
  const void* w = nullptr;   // [n, k], row stride ldw elements
  DType w_dtype = DType::kBFloat16;
  std::int64_t ldw = 0;
  std::uint8_t* packed = nullptr;  // [n, k/2] contiguous
  std::uint8_t* scales = nullptr;  // scale_bytes(n, k, layout) bytes
  ScaleLayout layout = ScaleLayout::kLinear;
  std::int64_t n = 0, k = 0;
  float global_scale = 1.0f;
};

struct DequantizeParams {
  const std::uint8_t* packed = nullptr;
  const std::uint8_t* scales = nullptr;
  ScaleLayout layout = ScaleLayout::kLinear;
  void* out = nullptr;  // [n, k], row stride ldo elements
  DType out_dtype = DType::kBFloat16;
  std::int64_t ldo = 0;
  std::int64_t n = 0, k = 0;
  float global_scale = 1.0f;
};

void launch_quantize(const QuantizeParams& p, Stream stream);
void launch_dequantize(const DequantizeParams& p, Stream stream);

}  // namespace fastinfer::nvfp4::detail
