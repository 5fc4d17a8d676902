#pragma once
// Moving the 128x128 fp32 state between global memory (fp32, bf16 or fp16 storage) and the
// register fragments of the prefill kernel. Warp w owns state rows (V) 16w .. 16w+15 and all 128
// K columns as 16 accumulator tiles of 16x8 (see prefill_fragments.cuh for the lane mapping).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gdn/kernels/prefill_fragments.cuh"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels {

inline constexpr int kStateTiles = 16;  // 16 tiles of 8 columns = 128 K columns per warp
using StateFragment = float[kStateTiles][4];

__device__ __forceinline__ std::int64_t state_offset(std::int64_t slot, int head, int row, int col,
                                                     const StateTensorParams& s) {
  return slot * s.slot_stride + static_cast<std::int64_t>(head) * 128 * 128 + row * 128 + col;
}

// Element pair (col, col + 1) of row `row`.
__device__ __forceinline__ float2 load_state_pair(const StateTensorParams& s, std::int64_t offset) {
  switch (s.type) {
    case StateType::kFloat32: return *reinterpret_cast<const float2*>(static_cast<const float*>(s.data) + offset);
    case StateType::kBFloat16:
      return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(static_cast<const __nv_bfloat16*>(s.data) + offset));
    case StateType::kFloat16:
      return __half22float2(*reinterpret_cast<const __half2*>(static_cast<const __half*>(s.data) + offset));
  }
  return make_float2(0.0f, 0.0f);
}

__device__ __forceinline__ void store_state_pair(const StateTensorParams& s, std::int64_t offset, float lo, float hi) {
  switch (s.type) {
    case StateType::kFloat32: *reinterpret_cast<float2*>(static_cast<float*>(s.data) + offset) = make_float2(lo, hi); break;
    case StateType::kBFloat16:
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(s.data) + offset) = __floats2bfloat162_rn(lo, hi);
      break;
    case StateType::kFloat16:
      *reinterpret_cast<__half2*>(static_cast<__half*>(s.data) + offset) = __floats2half2_rn(lo, hi);
      break;
  }
}

__device__ __forceinline__ void load_state(StateFragment& state, const StateTensorParams& s, std::int64_t slot,
                                           int head, int warp, LaneCoords lc) {
#pragma unroll
  for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float2 v = load_state_pair(s, state_offset(slot, head, 16 * warp + lc.group + 8 * half, 8 * n + 2 * lc.quad, s));
      state[n][2 * half] = v.x;
      state[n][2 * half + 1] = v.y;
    }
}

__device__ __forceinline__ void store_state(const StateFragment& state, const StateTensorParams& s, std::int64_t slot,
                                            int head, int warp, LaneCoords lc) {
#pragma unroll
  for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      store_state_pair(s, state_offset(slot, head, 16 * warp + lc.group + 8 * half, 8 * n + 2 * lc.quad, s),
                       state[n][2 * half], state[n][2 * half + 1]);
}

// CP stage 4: the fp32 state entering segment `segment` from the packed [S, Hsab, 128, 128] table.
__device__ __forceinline__ void load_segment_state(StateFragment& state, const float* states, std::int64_t segment,
                                                   int head, int num_heads, int warp, LaneCoords lc) {
  const float* base = states + (segment * num_heads + head) * 128 * 128;
#pragma unroll
  for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float2 v = *reinterpret_cast<const float2*>(base + (16 * warp + lc.group + 8 * half) * 128 + 8 * n + 2 * lc.quad);
      state[n][2 * half] = v.x;
      state[n][2 * half + 1] = v.y;
    }
}

// The state rounded to the operand type into shared memory [V][pitch] (the B operand of K S^T).
template <InputType kType>
__device__ __forceinline__ void store_state_operand(const StateFragment& state, typename Operand<kType>::Element* tile,
                                                    int pitch, int warp, LaneCoords lc) {
  using Pair = typename Operand<kType>::Pair;
#pragma unroll
  for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = 16 * warp + lc.group + 8 * half, col = 8 * n + 2 * lc.quad;
      *reinterpret_cast<Pair*>(tile + row * pitch + col) = Operand<kType>::pack(state[n][2 * half], state[n][2 * half + 1]);
    }
}

}  // namespace fastinfer::gdn::kernels
