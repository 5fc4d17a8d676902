#pragma once
// The per-token math of the GDN decode kernels, shared by the register kernel (decode_sm90.cuh)
// and the pipelined one (decode_pipelined_sm90.cuh): how a thread's slice of a state row is laid
// out, q/k normalisation, and one token's update of the rows a thread holds in registers.
//
// Per token (rows are independent), with q and k normalised:
//   hk = H[row] . k,  hq = H[row] . q       (one reduce-scatter over the row's lanes for all rows)
//   u  = beta * (v[row] - alpha * hk)
//   H[row] = alpha * H[row] + u * k          (== alpha H (I - beta k k^T) + beta v k^T)
//   o[row] = scale * (alpha * hq + u * k.q)  (== scale * H_new[row] . q)
#include <cmath>

#include "gdn/decode_params.h"
#include "gdn/kernels/decode_vector_io.cuh"

namespace fastinfer::gdn::decode_sm90 {

// How one lane's columns of a row are laid out. kLanesPerRow trades registers (columns per lane,
// also the q and k registers) against shuffles (log2(kLanesPerRow) levels per reduction). One
// access of the kLanesPerRow lanes of a row covers whole 32-byte sectors (global memory) and all
// 32 banks once (shared memory): column of element (chunk c, i) = (c * kLanesPerRow + lane) * kChunkElems + i.
template <class State, int kLanesPerRow>
struct RowSlice {
  static constexpr int kChunkElems = 16 / int(sizeof(State));  // one 16-byte state access
  static constexpr int kChunks = kDecodeHeadDim / (kLanesPerRow * kChunkElems);
  static constexpr int kElems = kChunks * kChunkElems;  // columns per lane
  static_assert(kElems * kLanesPerRow == kDecodeHeadDim);

  __device__ static int column(int chunk, int lane_in_row) { return (chunk * kLanesPerRow + lane_in_row) * kChunkElems; }
};

// scale * x[0..kElems) into the lane's columns of `row`.
template <class T, class Slice, StorePolicy kPolicy = StorePolicy::kStreaming>
__device__ __forceinline__ void store_row_slice(T* row, int lane_in_row, const float* x, float scale) {
#pragma unroll
  for (int c = 0; c < Slice::kChunks; ++c) {
    float chunk[Slice::kChunkElems];
#pragma unroll
    for (int i = 0; i < Slice::kChunkElems; ++i) chunk[i] = scale * x[c * Slice::kChunkElems + i];
    store_floats<T, Slice::kChunkElems, kPolicy>(row + Slice::column(c, lane_in_row), chunk);
  }
}

template <class T, class Slice, LoadPolicy kPolicy>
__device__ __forceinline__ void load_row_slice(const T* row, int lane_in_row, float* x) {
#pragma unroll
  for (int c = 0; c < Slice::kChunks; ++c)
    load_floats<T, Slice::kChunkElems, kPolicy>(row + Slice::column(c, lane_in_row), x + c * Slice::kChunkElems);
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// One warp, one token: q and k hold 4 columns per lane (columns 4 lane .. 4 lane + 3); on return
// they are normalised (x * rsqrt(sum x^2 + 1e-6)) when `l2norm`, and k.q is returned to every lane.
__device__ __forceinline__ float normalise_qk(float (&q)[4], float (&k)[4], bool l2norm) {
  float q_scale = 1.0f, k_scale = 1.0f;
  if (l2norm) {
    float qq = 0.0f, kk = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) qq = fmaf(q[i], q[i], qq), kk = fmaf(k[i], k[i], kk);
    q_scale = rsqrtf(warp_sum(qq) + 1e-6f);
    k_scale = rsqrtf(warp_sum(kk) + 1e-6f);
  }
  float kq = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    q[i] *= q_scale;
    k[i] *= k_scale;
    kq = fmaf(k[i], q[i], kq);
  }
  return warp_sum(kq);
}

// The decode gates of one (sequence, token, head): alpha = exp(-exp(A_log) softplus(a + dt_bias))
// (softplus threshold 20) and beta = sigmoid(b); `neg_exp_A` is -exp(A_log).
__device__ __forceinline__ float2 decode_gates(float a, float b, float neg_exp_A, float dt_bias) {
  const float x = a + dt_bias;
  const float softplus = x > 20.0f ? x : log1pf(expf(x));
  return make_float2(expf(neg_exp_A * softplus), 1.0f / (1.0f + expf(-b)));
}

// Reduce-scatter over the kLanesPerRow lanes of a row: x[0..kCount) are per-lane partial sums; on
// return x[0] is the row total of value index lane_in_row / (kLanesPerRow / kCount). Takes
// kCount - 1 shuffles (plus one per level left once a single value remains) instead of
// kCount * log2(kLanesPerRow) for separate reductions.
template <int kOffset, int kCount>
__device__ __forceinline__ void reduce_scatter(float* x, int lane_in_row) {
  if constexpr (kOffset > 0) {
    if constexpr (kCount > 1) {
      const bool upper = (lane_in_row & kOffset) != 0;
#pragma unroll
      for (int i = 0; i < kCount / 2; ++i) {
        const float send = upper ? x[i] : x[i + kCount / 2];
        const float keep = upper ? x[i + kCount / 2] : x[i];
        x[i] = keep + __shfl_xor_sync(0xffffffffu, send, kOffset);
      }
      reduce_scatter<kOffset / 2, kCount / 2>(x, lane_in_row);
    } else {
      x[0] += __shfl_xor_sync(0xffffffffu, x[0], kOffset);
      reduce_scatter<kOffset / 2, 1>(x, lane_in_row);
    }
  }
}

// The decay is applied lazily: the state registers hold H / g, where g (`lazy`, uniform over the
// CTA, 1 at the start of a call) is the product of the alphas not yet multiplied in. Then
//   H_new = alpha H + u k^T   becomes   H_new / g' = H / g + (u / g') k^T,  g' = alpha g,
// one FMA per element and token instead of a multiply and an FMA (the dot products are scaled
// once per row instead). Stores multiply by g. When g' would fall below kMinLazyScale (registers
// growing like 1 / g'), the token applies g' to the registers instead and resets g to 1.
inline constexpr float kMinLazyScale = 0x1p-30f;

// The smallest g' token_step keeps lazy: kMinLazyScale, or +inf (every token applies its decay at
// once) when the caller asked for eager decay (DecodeParams::lazy_decay == false).
__device__ __forceinline__ float min_lazy_scale(const DecodeParams& p) { return p.lazy_decay ? kMinLazyScale : INFINITY; }

// One token for the kRowsPerThread rows a thread holds (`state`, columns laid out by Slice), every
// lane of the warp in lockstep. q, k: the normalised token in shared memory (128 floats each).
// v_of(r): v entry of the thread's row r. out(r, x) is called once per row, by one lane of it,
// with x = H_new[row] . q (the caller applies the scale).
template <class Slice, int kLanesPerRow, int kRowsPerThread, class VOf, class Out>
__device__ __forceinline__ void token_step(float (&state)[kRowsPerThread][Slice::kElems], float& lazy,
                                           float min_lazy, const float* q_smem, const float* k_smem, float alpha, float beta, float kq,
                                           int lane_in_row, VOf&& v_of, Out&& out) {
  constexpr int kElems = Slice::kElems;
  constexpr int kValues = 2 * kRowsPerThread;  // hk and hq per row
  static_assert(kValues <= kLanesPerRow, "one reduced value per lane (or fewer)");
  constexpr int kLanesPerValue = kLanesPerRow / kValues;
  const int row_lane0 = (threadIdx.x % 32) - lane_in_row;  // the row's first lane in the warp
  // After the reduce-scatter this lane holds value `owned`: hk of row owned (< R) or hq of row owned - R.
  const int owned = lane_in_row / kLanesPerValue;
  const float decay = alpha * lazy;  // g': alpha H . x = g' (H / g) . x

  float q[kElems], k[kElems];
#pragma unroll
  for (int c = 0; c < Slice::kChunks; ++c)
#pragma unroll
    for (int i = 0; i < Slice::kChunkElems; i += 4) {
      const int col = Slice::column(c, lane_in_row) + i;
      const float4 q4 = *reinterpret_cast<const float4*>(q_smem + col);
      const float4 k4 = *reinterpret_cast<const float4*>(k_smem + col);
      float* qd = &q[c * Slice::kChunkElems + i];
      float* kd = &k[c * Slice::kChunkElems + i];
      qd[0] = q4.x, qd[1] = q4.y, qd[2] = q4.z, qd[3] = q4.w;
      kd[0] = k4.x, kd[1] = k4.y, kd[2] = k4.z, kd[3] = k4.w;
    }

  float sums[kValues];  // hk of every row, then hq of every row
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    float hk = 0.0f, hq = 0.0f;
#pragma unroll
    for (int i = 0; i < kElems; ++i) {
      hk = fmaf(state[r][i], k[i], hk);
      hq = fmaf(state[r][i], q[i], hq);
    }
    sums[r] = hk;
    sums[kRowsPerThread + r] = hq;
  }
  reduce_scatter<kLanesPerRow / 2, kValues>(sums, lane_in_row);

  // u = beta (v - alpha hk) where hk lives, then shared with the row's lanes.
  float u_owned = 0.0f;
  if (owned < kRowsPerThread) u_owned = beta * (v_of(owned) - decay * sums[0]);
  float u[kRowsPerThread];
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) u[r] = __shfl_sync(0xffffffffu, u_owned, row_lane0 + r * kLanesPerValue);

  // Lazy: H_new / g' = H / g + (u / g') k^T. Eager (g' too small): the registers take g' first and
  // g' becomes 1, so the same FMA finishes both.
  float kept = decay;
  if (decay < min_lazy) {  // uniform over the CTA
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r)
#pragma unroll
      for (int i = 0; i < kElems; ++i) state[r][i] *= decay;
    kept = 1.0f;
  }
  const float inv_kept = __frcp_rn(kept);
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const float c = u[r] * inv_kept;
#pragma unroll
    for (int i = 0; i < kElems; ++i) state[r][i] = fmaf(c, k[i], state[r][i]);
  }
  lazy = kept;

  // H_new . q = alpha hq + u k.q, by the first lane holding hq of its row. Its u comes by one more
  // shuffle (picking u[owned - R] from registers would be a dynamic index: local memory).
  const int hq_row = owned >= kRowsPerThread ? owned - kRowsPerThread : 0;
  const float u_row = __shfl_sync(0xffffffffu, u_owned, row_lane0 + hq_row * kLanesPerValue);
  if (owned >= kRowsPerThread && lane_in_row % kLanesPerValue == 0) out(hq_row, fmaf(decay, sums[0], u_row * kq));
}

// The state after token t (lazy * state) into intermediate_states[seq, t, head] (fp32 or bf16),
// rows of the thread.
template <class Slice, int kRowsPerThread, class LocalRow>
__device__ __forceinline__ void store_intermediate(const DecodeParams& p, const float (&state)[kRowsPerThread][Slice::kElems],
                                                   float lazy, int seq, int t, int head_v, int row0, int lane_in_row,
                                                   LocalRow&& local_row) {
  constexpr std::int64_t kStateElems = std::int64_t{kDecodeHeadDim} * kDecodeHeadDim;
  const std::int64_t offset = ((std::int64_t{seq} * p.tokens + t) * p.heads_v + head_v) * kStateElems;
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int row = (row0 + local_row(r)) * kDecodeHeadDim;
    if (p.intermediate_is_bf16)
      store_row_slice<__nv_bfloat16, Slice>(static_cast<__nv_bfloat16*>(p.intermediate) + offset + row, lane_in_row, state[r], lazy);
    else
      store_row_slice<float, Slice>(static_cast<float*>(p.intermediate) + offset + row, lane_in_row, state[r], lazy);
  }
}

}  // namespace fastinfer::gdn::decode_sm90
