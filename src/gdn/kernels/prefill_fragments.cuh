#pragma once
// Warp-level tensor-core building blocks of the GDN prefill kernel: 16x8x16 MMAs (CuTe's SM80
// atoms, which sm_90a runs natively) with operands read from padded shared-memory tiles.
//
// Fragment ownership inside a warp (lane = 4*group + quad, PTX m16n8k16 layout):
//   accumulator c[0..1] -> (row group,   cols 2*quad, 2*quad+1) of the 16x8 tile
//               c[2..3] -> (row group+8, cols 2*quad, 2*quad+1)
// Tiles are stored row-major with the reduction dimension contiguous; a row pitch of
// (multiple of 64 elements) + 8 puts the 8 rows x 4 quads of one fragment load on 32 banks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include <cute/arch/mma_sm80.hpp>

#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels {

// The 16-bit operand type and its MMA atom.
template <InputType kType>
struct Operand;

template <>
struct Operand<InputType::kBFloat16> {
  using Element = __nv_bfloat16;
  using Pair = __nv_bfloat162;
  using Mma = cute::SM80_16x8x16_F32BF16BF16F32_TN;
  static __device__ __forceinline__ Pair pack(float lo, float hi) { return __floats2bfloat162_rn(lo, hi); }
  static __device__ __forceinline__ Element round(float x) { return __float2bfloat16_rn(x); }
  static __device__ __forceinline__ float to_float(Element x) { return __bfloat162float(x); }
};

template <>
struct Operand<InputType::kFloat16> {
  using Element = __half;
  using Pair = __half2;
  using Mma = cute::SM80_16x8x16_F32F16F16F32_TN;
  static __device__ __forceinline__ Pair pack(float lo, float hi) { return __floats2half2_rn(lo, hi); }
  static __device__ __forceinline__ Element round(float x) { return __float2half_rn(x); }
  static __device__ __forceinline__ float to_float(Element x) { return __half2float(x); }
};

struct LaneCoords {
  int group;  // lane / 4: the row (A, C) or column (B) inside the tile
  int quad;   // lane % 4: the pair of reduction (A, B) or output (C) columns
  __device__ __forceinline__ LaneCoords() : group(threadIdx.x % 32 / 4), quad(threadIdx.x % 4) {}
};

template <class Element>
__device__ __forceinline__ std::uint32_t load_pair(const Element* p) {
  return *reinterpret_cast<const std::uint32_t*>(p);
}

// A operand: the 16x16 tile at (row0, k0) of a row-major [rows][pitch] tile.
template <class Element>
__device__ __forceinline__ void load_a(std::uint32_t (&a)[4], const Element* tile, int pitch, int row0, int k0,
                                       LaneCoords lc) {
  const Element* p = tile + (row0 + lc.group) * pitch + k0 + 2 * lc.quad;
  a[0] = load_pair(p);
  a[1] = load_pair(p + 8 * pitch);
  a[2] = load_pair(p + 8);
  a[3] = load_pair(p + 8 * pitch + 8);
}

// B operand: the 16(k) x 8(n) tile at (k0, n0) of an operand stored [n][pitch] (k contiguous).
template <class Element>
__device__ __forceinline__ void load_b(std::uint32_t (&b)[2], const Element* tile, int pitch, int n0, int k0,
                                       LaneCoords lc) {
  const Element* p = tile + (n0 + lc.group) * pitch + k0 + 2 * lc.quad;
  b[0] = load_pair(p);
  b[1] = load_pair(p + 8);
}

template <InputType kType>
__device__ __forceinline__ void mma(float (&c)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  Operand<kType>::Mma::fma(c[0], c[1], c[2], c[3], a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], c[2], c[3]);
}

// acc[16 rows][8 * kTilesN cols] += A[row0 .. row0+15][k_begin .. k_end) x B[n][k]^T for a warp:
// A is [rows][pitch_a], B is stored [n][pitch_b]; k_end - k_begin is a multiple of 16.
template <InputType kType, int kTilesN, class Element>
__device__ __forceinline__ void warp_gemm(float (&acc)[kTilesN][4], const Element* a_tile, int pitch_a, int row0,
                                          const Element* b_tile, int pitch_b, int k_begin, int k_end, LaneCoords lc) {
  for (int k0 = k_begin; k0 < k_end; k0 += 16) {
    std::uint32_t a[4];
    load_a(a, a_tile, pitch_a, row0, k0, lc);
#pragma unroll
    for (int n = 0; n < kTilesN; ++n) {
      std::uint32_t b[2];
      load_b(b, b_tile, pitch_b, 8 * n, k0, lc);
      mma<kType>(acc[n], a, b);
    }
  }
}

template <int kTilesN>
__device__ __forceinline__ void zero(float (&acc)[kTilesN][4]) {
#pragma unroll
  for (int n = 0; n < kTilesN; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[n][i] = 0.0f;
}

}  // namespace fastinfer::gdn::kernels
