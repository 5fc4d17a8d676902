// NVFP4 quantize / dequantize kernels: one thread per 16-element block. One-time (weight loading)
// work, so the kernels favour obviously-matching-the-reference code over peak bandwidth. The
// block scale uses the hardware e4m3 conversion (cvt.rn.satfinite.e4m3x2.f32); the tests compare
// it with the software conversion of the CPU reference.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "nvfp4/nvfp4_codec.h"
#include "nvfp4/nvfp4_launch.h"
#include "runtime/cuda_check.h"

namespace fastinfer::nvfp4::detail {
namespace {

namespace codec = nvfp4::codec;

template <class T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

__device__ __forceinline__ std::int64_t scale_index(std::int64_t n, std::int64_t kb, std::int64_t blocks,
                                                    ScaleLayout layout) {
  return layout == ScaleLayout::kLinear ? n * blocks + kb : codec::swizzled_offset(n, kb, (blocks + 3) / 4);
}

// Grid covers the scale domain: [n_pad, blocks_pad] (swizzled padding) or [n, blocks].
template <class T>
__global__ void quantize_kernel(QuantizeParams p, std::int64_t n_pad, std::int64_t blocks_pad) {
  const std::int64_t blocks = p.k / codec::kBlock;
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_pad * blocks_pad) return;
  const std::int64_t n = idx / blocks_pad, kb = idx % blocks_pad;
  if (n >= p.n || kb >= blocks) {  // swizzled padding reads as zero scales
    p.scales[scale_index(n, kb, blocks, p.layout)] = 0;
    return;
  }
  const T* row = static_cast<const T*>(p.w) + n * p.ldw + kb * codec::kBlock;
  float x[codec::kBlock];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < codec::kBlock; ++i) {
    x[i] = to_float(row[i]);
    amax = fmaxf(amax, fabsf(x[i]));
  }
  const std::uint8_t sf = static_cast<std::uint8_t>(
      __nv_cvt_float_to_fp8(codec::block_scale_float(p.global_scale, amax), __NV_SATFINITE, __NV_E4M3));
  const float factor = codec::element_factor(codec::e4m3_to_float(sf), p.global_scale);
  p.scales[scale_index(n, kb, blocks, p.layout)] = sf;
  std::uint32_t words[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < codec::kBlock; ++i)
    words[i / 8] |= static_cast<std::uint32_t>(codec::e2m1_from_float(x[i] * factor)) << (4 * (i % 8));
  *reinterpret_cast<uint2*>(p.packed + n * (p.k / 2) + kb * (codec::kBlock / 2)) = make_uint2(words[0], words[1]);
}

template <class T>
__global__ void dequantize_kernel(DequantizeParams p) {
  const std::int64_t blocks = p.k / codec::kBlock;
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.n * blocks) return;
  const std::int64_t n = idx / blocks, kb = idx % blocks;
  const float s = codec::e4m3_to_float(p.scales[scale_index(n, kb, blocks, p.layout)]);
  const uint2 q = *reinterpret_cast<const uint2*>(p.packed + n * (p.k / 2) + kb * (codec::kBlock / 2));
  T* row = static_cast<T*>(p.out) + n * p.ldo + kb * codec::kBlock;
#pragma unroll
  for (int i = 0; i < codec::kBlock; ++i) {
    const std::uint32_t word = i < 8 ? q.x : q.y;
    const std::uint8_t code = (word >> (4 * (i % 8))) & 0xf;
    row[i] = from_float<T>(codec::e2m1_to_float(code) * s / p.global_scale);
  }
}

constexpr int kThreads = 256;

unsigned grid_for(std::int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

}  // namespace

void launch_quantize(const QuantizeParams& p, Stream stream) {
  const std::int64_t blocks = p.k / codec::kBlock;
  const bool swizzled = p.layout == ScaleLayout::kSwizzled128x4;
  const std::int64_t n_pad = swizzled ? (p.n + 127) / 128 * 128 : p.n;
  const std::int64_t blocks_pad = swizzled ? (blocks + 3) / 4 * 4 : blocks;
  const std::int64_t count = n_pad * blocks_pad;
  if (count == 0) return;
  switch (p.w_dtype) {
    case DType::kFloat32: quantize_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(p, n_pad, blocks_pad); break;
    case DType::kFloat16: quantize_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(p, n_pad, blocks_pad); break;
    default: quantize_kernel<__nv_bfloat16><<<grid_for(count), kThreads, 0, stream>>>(p, n_pad, blocks_pad); break;
  }
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

void launch_dequantize(const DequantizeParams& p, Stream stream) {
  const std::int64_t count = p.n * (p.k / codec::kBlock);
  if (count == 0) return;
  switch (p.out_dtype) {
    case DType::kFloat32: dequantize_kernel<float><<<grid_for(count), kThreads, 0, stream>>>(p); break;
    case DType::kFloat16: dequantize_kernel<__half><<<grid_for(count), kThreads, 0, stream>>>(p); break;
    default: dequantize_kernel<__nv_bfloat16><<<grid_for(count), kThreads, 0, stream>>>(p); break;
  }
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::nvfp4::detail
