#pragma once
// bf16 x NVFP4 GEMM on Hopper: out[M, N] = alpha * (a[M, K] @ W^T), W[n, k] = e2m1(q[n, k]) * sf[n, k/16].
// (alpha is usually 1 / global_scale, which makes W the dequantized weight.) docs/GEMM.md has the
// layouts, the tactics and the constraints.
//
//   auto w = gemm::prepare_bf16_fp4_weights(packed, scales, nvfp4::ScaleLayout::kSwizzled128x4, 1 / g);
//   gemm::mm_bf16_fp4(a, *w, out, stream);   // no allocation, no sync, graph-capturable
#include <cstdint>
#include <memory>

#include "fastinfer/context.h"
#include "fastinfer/nvfp4.h"
#include "fastinfer/tensor.h"

namespace fastinfer::gemm {

// Immutable prepared weights: owns copies of the packed weight and its linear scales plus the
// tiled copy the small-M kernels stream (device memory for CUDA inputs, host memory for CPU
// inputs). Safe to share between threads and streams.
class Bf16Fp4Weights {
 public:
  struct Impl;
  explicit Bf16Fp4Weights(std::unique_ptr<Impl> impl);
  ~Bf16Fp4Weights();
  Bf16Fp4Weights(const Bf16Fp4Weights&) = delete;
  Bf16Fp4Weights& operator=(const Bf16Fp4Weights&) = delete;

  std::int64_t n() const;
  std::int64_t k() const;
  float alpha() const;
  Device device() const;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// One-time preparation (allocates; blocks until the repack on `stream` is done). b: [N, K/2]
// uint8 packed e2m1 (low nibble = even k), contiguous; b_descale: e4m3 block scales (uint8 or
// float8_e4m3, contiguous) in `layout`, at least nvfp4::scale_bytes(N, K, layout) bytes.
// Constraints: N >= 1, K >= 16, K % 16 == 0; scales non-negative and finite.
std::shared_ptr<const Bf16Fp4Weights> prepare_bf16_fp4_weights(const TensorView& b, const TensorView& b_descale,
                                                               nvfp4::ScaleLayout layout, float alpha,
                                                               Stream stream = nullptr);

// out [M, N] (bfloat16 or float16; last dim contiguous, row stride % 8 == 0, 16-byte aligned)
// = alpha * (a @ W^T); a [M, K] bfloat16 (last dim contiguous, row stride % 8 == 0, 16-byte
// aligned) on the weights' device. M == 0 is a no-op. enable_pdl launches with programmatic
// dependent launch (the kernel waits for the previous kernel before reading a).
void mm_bf16_fp4(const TensorView& a, const Bf16Fp4Weights& weights, const TensorView& out, Stream stream = nullptr,
                 bool enable_pdl = false);

}  // namespace fastinfer::gemm
