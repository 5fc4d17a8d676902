#pragma once
// NVFP4 (e2m1 values, e4m3 scales per 16 elements, one float global scale): quantize and
// dequantize, bit-compatible with FlashInfer's format (docs/GEMM.md, ../shared/DESIGN.md).
//
//   sf[n, kb]  = e4m3_rn_satfinite(g * amax(W[n, 16kb .. 16kb+15]) / 6)
//   q[n, k]    = e2m1_rn_even_satfinite(W[n, k] * (1 / (float(sf) / g)))   (0 when sf == 0)
//   packed[n, k/2]: low nibble = even k, high nibble = odd k
//   dequant    = e2m1(q) * float(sf) / g
//
// The usual global scale is g = 448 * 6 / max|W| (global_scale_for). CPU tensors run the CPU
// reference, CUDA tensors a kernel; both produce the same bytes.
#include <cstdint>

#include "fastinfer/context.h"
#include "fastinfer/tensor.h"

namespace fastinfer::nvfp4 {

enum class ScaleLayout : std::uint8_t {
  kLinear,         // [N, K/16] row-major, one byte per block
  kSwizzled128x4,  // 128x4 tiles: offset = ((n/128)*Kt + kb/4)*512 + (n%32)*16 + ((n%128)/32)*4 + kb%4,
                   // Kt = ceil(K/16/4), zero-padded to round_up(N,128) * round_up(K/16,4) bytes
};

// Bytes a scale buffer of `layout` needs for an [n, k] weight (k % 16 == 0).
std::int64_t scale_bytes(std::int64_t n, std::int64_t k, ScaleLayout layout);

// 448 * 6 / amax (1 when amax is 0 or not finite): the global scale that maps max|W| to the
// largest e4m3 scale times the largest e2m1 value.
float global_scale_for(float amax);

// Quantizes w [N, K] (float32, float16 or bfloat16; K % 16 == 0, last dim contiguous) into
// packed [N, K/2] uint8 (contiguous) and scales (uint8 or float8_e4m3, contiguous, at least
// scale_bytes(N, K, layout) elements; swizzled padding is written with zeros).
void quantize(const TensorView& w, float global_scale, const TensorView& packed, const TensorView& scales,
              ScaleLayout layout = ScaleLayout::kLinear, Stream stream = nullptr);

// out [N, K] (float32, float16 or bfloat16; last dim contiguous) = e2m1(q) * float(sf) / global_scale.
void dequantize(const TensorView& packed, const TensorView& scales, ScaleLayout layout, float global_scale,
                const TensorView& out, Stream stream = nullptr);

}  // namespace fastinfer::nvfp4
