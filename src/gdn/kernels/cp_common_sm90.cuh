#pragma once
// Shared pieces of the CP stage kernels: the input element types and their m16n8k16 tensor-core
// MMA (CuTe's SM80 atoms, which Hopper runs natively), sequence offsets, block loads, gates.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/copy_sm80.hpp>
#include <cute/arch/mma_sm80.hpp>

#include "gdn/cp_params.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn::detail::cp {

inline constexpr int kD = 128;  // head dim
inline constexpr int kC = 64;   // block length
inline constexpr float kMinLogAlpha = -80.0f;  // alpha < 1e-35 acts as 0 (as in the chunked form)

template <CpInputType>
struct Input;

template <>
struct Input<CpInputType::kBFloat16> {
  using T = __nv_bfloat16;
  __device__ static float to_float(T x) { return __bfloat162float(x); }
  __device__ static T from_float(float x) { return __float2bfloat16_rn(x); }
  __device__ static std::uint32_t pack(float lo, float hi) {
    __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&p);
  }
  // d += a * b for one 16x8x16 tile (fragments in the PTX m16n8k16 layout).
  __device__ static void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
    cute::SM80_16x8x16_F32BF16BF16F32_TN::fma(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b0, b1, d[0], d[1],
                                              d[2], d[3]);
  }
};

template <>
struct Input<CpInputType::kFloat16> {
  using T = __half;
  __device__ static float to_float(T x) { return __half2float(x); }
  __device__ static T from_float(float x) { return __float2half_rn(x); }
  __device__ static std::uint32_t pack(float lo, float hi) {
    __half2 p = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&p);
  }
  __device__ static void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
    cute::SM80_16x8x16_F32F16F16F32_TN::fma(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b0, b1, d[0], d[1],
                                            d[2], d[3]);
  }
};

// Two consecutive 16-bit elements from shared memory as one MMA register.
template <class T>
__device__ inline std::uint32_t lds_pair(const T* p) {
  return *reinterpret_cast<const std::uint32_t*>(p);
}

// B fragments of two adjacent n8 tiles of an m16n8k16 MMA whose B operand is stored row-major
// as [k][n] in shared memory (n contiguous): one ldmatrix.x4.trans. `b` must point at
// element [k0][n0]; row_stride in elements (rows 16-byte aligned). Returns {b0, b1} of tile n0
// in r[0], r[1] and of tile n0 + 8 in r[2], r[3].
template <class T>
__device__ inline void load_b_pair_trans(const T* b, int row_stride, int lane, std::uint32_t (&r)[4]) {
  const T* row = b + (lane % 16) * row_stride + (lane / 16) * 8;
  cute::SM75_U16x8_LDSM_T::copy(*reinterpret_cast<const cute::uint128_t*>(row), r[0], r[1], r[2], r[3]);
}

// B fragments of two adjacent n8 tiles of an m16n8k16 MMA whose B operand is stored as [n][k] in
// shared memory (k contiguous, i.e. B^T row-major): one ldmatrix.x4. `b` points at element
// [n0][k0]; returns {b0, b1} of tile n0 in r[0], r[1] and of tile n0 + 8 in r[2], r[3].
template <class T>
__device__ inline void load_b_pair(const T* b, int row_stride, int lane, std::uint32_t (&r)[4]) {
  const T* row = b + (lane % 8 + (lane / 16) * 8) * row_stride + ((lane / 8) % 2) * 8;
  cute::SM75_U32x4_LDSM_N::copy(*reinterpret_cast<const cute::uint128_t*>(row), r[0], r[1], r[2], r[3]);
}

// 2^(14 - floor(log2 x)) for x >= 0 (x's exponent bits; 0 and fp32 subnormals count as 2^-127),
// clamped to 2^+-100: multiplying a row whose largest |entry| is x by it puts that entry into
// [2^14, 2^15), below fp16's largest finite 65504. A power of two, so scaling is exact both ways.
// ref::gdn_cp_chunk_maps_mirror computes the same scale.
__device__ inline float fp16_row_scale(float max_abs) {
  const int biased = static_cast<int>((__float_as_uint(max_abs) >> 23) & 0xffu);
  const int e = max(-100, min(100, 141 - biased));  // 14 - (biased - 127)
  return __uint_as_float(static_cast<unsigned>(e + 127) << 23);
}
__device__ inline float inverse_pow2(float scale) {  // 1 / scale, exact for fp16_row_scale's values
  return __uint_as_float((254u << 23) - __float_as_uint(scale));
}

// Maximum over the 4 lanes of a quad (the lanes that hold one row of an MMA fragment).
__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

// The largest |entry| of rows g and g + 8 (g = lane / 4) of a 16-row tile held as 16 m16n8 fp32
// C tiles over 128 columns, over the quad that holds each row.
__device__ inline void tile_row_max(const float (&acc)[16][4], float (&row_max)[2]) {
  row_max[0] = row_max[1] = 0.f;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) row_max[e / 2] = fmaxf(row_max[e / 2], fabsf(acc[nt][e]));
  row_max[0] = quad_max(row_max[0]);
  row_max[1] = quad_max(row_max[1]);
}

// ldmatrix.x4.trans from per-lane row addresses (`lane_row`: the 16 bytes this lane supplies),
// for callers that address the tile element by element (k_at in cp_chunk_maps_sm90.cuh).
template <class T>
__device__ inline void ldsm_x4_trans(const T* lane_row, std::uint32_t (&r)[4]) {
  cute::SM75_U16x8_LDSM_T::copy(*reinterpret_cast<const cute::uint128_t*>(lane_row), r[0], r[1], r[2], r[3]);
}

__device__ inline std::uint32_t smem_address_of(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ inline std::int64_t seq_offset(const CpStageParams& p, int i) {
  return p.offsets_are_int64 ? static_cast<const std::int64_t*>(p.cu_seqlens)[i]
                             : static_cast<const std::int32_t*>(p.cu_seqlens)[i];
}

// Waits for the previous grid on the stream when launched as a programmatic dependent launch
// (a no-op otherwise).
__device__ inline void wait_for_previous_stage() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// Rows [t0, t0 + len) of one head of a [T, H, 128] input, fetched in two phases so that all
// global loads of a block are in flight together (one memory round trip per block instead of one
// per row): fetch() issues the loads into registers, store() converts, optionally L2-normalises
// (use_qk_l2norm: x * rsqrt(sum x^2 + 1e-6) in fp32) and hands each element to
// store(row, col, value). Warp w owns rows w, w + kWarps, ...; rows len..63 are zeros.
template <class In, int kWarps>
struct BlockRowsFetch {
  static constexpr int kRows = kC / kWarps;
  uint2 raw[kRows];

  __device__ void fetch(const typename In::T* base, std::int64_t stride_token, std::int64_t t0, int len, int warp,
                        int lane) {
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int r = warp + i * kWarps;
      raw[i] = r < len ? __ldg(reinterpret_cast<const uint2*>(base + (t0 + r) * stride_token + lane * 4))
                       : make_uint2(0u, 0u);
    }
  }

  // The same rows from a [64][128] shared-memory staging tile (rows >= len read as zeros).
  __device__ void fetch_shared(const typename In::T* tile, int len, int warp, int lane) {
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int r = warp + i * kWarps;
      raw[i] = r < len ? *reinterpret_cast<const uint2*>(tile + r * kD + lane * 4) : make_uint2(0u, 0u);
    }
  }

  // The lane's four elements of each row at once: store4(row, first column, x[4]).
  template <class Store4>
  __device__ void store4(bool normalise, int warp, int lane, Store4 store4) const {
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const typename In::T* e = reinterpret_cast<const typename In::T*>(&raw[i]);
      float x[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) x[j] = In::to_float(e[j]);
      if (normalise) {
        float sum = x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        const float inv = rsqrtf(sum + 1e-6f);
#pragma unroll
        for (int j = 0; j < 4; ++j) x[j] *= inv;
      }
      store4(warp + i * kWarps, lane * 4, x);
    }
  }

  // The rows as loaded (no conversion): store_raw(row, first column, the lane's 8 bytes).
  template <class StoreRaw>
  __device__ void store_raw(StoreRaw store_raw, int warp, int lane) const {
#pragma unroll
    for (int i = 0; i < kRows; ++i) store_raw(warp + i * kWarps, lane * 4, raw[i]);
  }

  // One element at a time: store(row, column, x).
  template <class Store>
  __device__ void store(bool normalise, int warp, int lane, Store store) const {
    store4(normalise, warp, lane, [&](int row, int col, const float (&x)[4]) {
#pragma unroll
      for (int j = 0; j < 4; ++j) store(row, col + j, x[j]);
    });
  }
};

// Per-token gates of one block, in the same two phases: g[t] = running sum of clamped log alpha
// (constant past len), beta[t] (zero past len). Needs blockDim.x >= 64; finish() ends with the
// block synchronised.
struct BlockGatesFetch {
  float alpha = 1.f, beta = 0.f;

  __device__ void fetch(const CpStageParams& p, std::int64_t t0, int len, int h) {
    const int t = threadIdx.x;
    if (t < kC && t < len) {
      const std::int64_t tok = t0 + t;
      alpha = p.alpha ? __ldg(p.alpha + tok * p.alpha_stride_token + h) : 1.f;
      beta = p.beta ? __ldg(p.beta + tok * p.beta_stride_token + h) : 1.f;
    }
  }

  __device__ void finish(float* g, float* beta_out) const {
    const int t = threadIdx.x;
    if (t < kC) {
      float la = fmaxf(__logf(alpha), kMinLogAlpha);
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const float y = __shfl_up_sync(0xffffffffu, la, o);
        if ((t & 31) >= o) la += y;
      }
      g[t] = la;
      beta_out[t] = beta;
    }
    __syncthreads();
    if (t >= 32 && t < kC) g[t] += g[31];
    __syncthreads();
  }
};

// Launches `kernel` on `stream`, as a programmatic dependent launch when `programmatic`.
template <class... Params, class... Args>
void launch_stage(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                  bool programmatic, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = programmatic ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace fastinfer::gdn::detail::cp
