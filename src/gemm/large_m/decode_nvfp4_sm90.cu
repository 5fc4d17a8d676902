// The decode pass of the dequant_gemm tactic: NVFP4 weight [N, K/2] + linear e4m3 scales
// [N, K/16] -> bf16 [N, K] holding e2m1(q) * float(sf). The product is exact in bf16 (2 and 4
// significant bits), so the GEMM sees the same numbers as the fp64 reference; the global
// dequant factor is applied later in the GEMM epilogue.
//
// Memory-bound (H200: 28672x4096 in 157 us with 16-byte loads and 64-byte-strided stores, about
// 1.9 TB/s; now every warp access is contiguous). The packed, scale and output arrays are all
// linear in the same element index, so the whole matrix is one flat range.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gemm/large_m.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gemm::detail {
namespace {

constexpr int kDecodeThreads = 256;  // unmeasured; any multiple of 32 keeps the accesses coalesced
constexpr int kUnitsPerThread = 4;   // unmeasured; 4 independent loads in flight per thread

__device__ __forceinline__ std::uint32_t byte_permute(std::uint32_t a, std::uint32_t b, std::uint32_t selector) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

// The block scale as a bf16 pair (exact: e4m3 has 3 mantissa bits).
__device__ __forceinline__ __nv_bfloat162 scale_pair(std::uint8_t sf_bits) {
  __nv_fp8_e4m3 sf;
  sf.__x = sf_bits;
  const __nv_bfloat16 s = __float2bfloat16_rn(static_cast<float>(sf));
  return __nv_bfloat162(s, s);
}

// Eight e2m1 nibbles (element i in bits 4i..4i+3) -> eight bf16 values times the scale.
// Magnitudes come from two byte tables through prmt (high and low byte of the bf16 of
// {0, .5, 1, 1.5, 2, 3, 4, 6}); the sign bit is moved into place with shifts.
__device__ __forceinline__ uint4 decode_eight(std::uint32_t nibbles, __nv_bfloat162 scale) {
  constexpr std::uint32_t kHighBytes0to3 = 0x3F3F3F00u, kHighBytes4to7 = 0x40404040u;
  constexpr std::uint32_t kLowBytes0to3 = 0xC0800000u, kLowBytes4to7 = 0xC0804000u;
  std::uint32_t words[4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::uint32_t s = nibbles >> (16 * half);  // elements 4*half .. 4*half+3
    const std::uint32_t index = s & 0x7777u;         // magnitudes; bit 3 of a selector must stay 0
    const std::uint32_t high = byte_permute(kHighBytes0to3, kHighBytes4to7, index);
    const std::uint32_t low = byte_permute(kLowBytes0to3, kLowBytes4to7, index);
    const std::uint32_t pair01 = byte_permute(low, high, 0x5140u) | ((s << 12) & 0x8000u) | ((s << 24) & 0x80000000u);
    const std::uint32_t pair23 = byte_permute(low, high, 0x7362u) | ((s << 4) & 0x8000u) | ((s << 16) & 0x80000000u);
    words[2 * half] = pair01;
    words[2 * half + 1] = pair23;
  }
  uint4 out;
  std::uint32_t* o = &out.x;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    __nv_bfloat162 v = *reinterpret_cast<__nv_bfloat162*>(&words[i]);
    v = __hmul2(v, scale);
    o[i] = *reinterpret_cast<std::uint32_t*>(&v);
  }
  return out;
}

__global__ void __launch_bounds__(kDecodeThreads) decode_nvfp4_to_bf16_kernel(
    const std::uint32_t* __restrict__ packed, const std::uint8_t* __restrict__ scales, uint4* __restrict__ out,
    std::int64_t units) {
  // Inputs may come from the previous kernel when launched with PDL.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // A unit = 8 elements = one packed 32-bit word = one 16-byte output vector; its scale is byte
  // unit / 2. Lane-consecutive units make every load and store instruction of a warp contiguous
  // (128 B loads, 512 B stores: full sectors, no partial writes).
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kDecodeThreads * kUnitsPerThread + threadIdx.x;
  std::uint32_t words[kUnitsPerThread];
  std::uint8_t sf[kUnitsPerThread];
#pragma unroll
  for (int i = 0; i < kUnitsPerThread; ++i) {  // all loads first: more bytes in flight
    const std::int64_t unit = first + i * kDecodeThreads;
    if (unit < units) {
      words[i] = __ldg(packed + unit);
      sf[i] = __ldg(scales + unit / 2);
    }
  }
#pragma unroll
  for (int i = 0; i < kUnitsPerThread; ++i) {
    const std::int64_t unit = first + i * kDecodeThreads;
    if (unit < units) out[unit] = decode_eight(words[i], scale_pair(sf[i]));
  }
}

}  // namespace

void decode_nvfp4_to_bf16(const std::uint8_t* w_packed, const std::uint8_t* w_scales, void* w_bf16, int n, int k,
                          bool enable_pdl, Stream stream) {
  const std::int64_t units = static_cast<std::int64_t>(n) * (k / 8);
  if (units == 0) return;
  const std::int64_t per_block = std::int64_t{kDecodeThreads} * kUnitsPerThread;
  const std::int64_t blocks = (units + per_block - 1) / per_block;

  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kDecodeThreads);
  config.stream = stream;
  config.attrs = &pdl;
  config.numAttrs = enable_pdl ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, decode_nvfp4_to_bf16_kernel,
                                          reinterpret_cast<const std::uint32_t*>(w_packed), w_scales,
                                          static_cast<uint4*>(w_bf16), units));
}

}  // namespace fastinfer::gemm::detail
