#pragma once
// GDN decode / MTP kernel (sm_90a). Memory-bound: every (sequence, state head) state of
// 128 x 128 is read once and written once per call, whatever the number of draft tokens T.
//
// Work split. A CTA owns a block of V rows (all 128 K columns) of one (sequence, head) state.
// Each row belongs to a group of kLanesPerRow consecutive lanes; a lane holds kElems columns of
// it in fp32 registers, laid out so that one warp-wide access covers whole 32-byte sectors
// (column of element (chunk c, i) = (c * kLanesPerRow + lane_in_row) * kChunkElems + i). Rows of a
// thread are `groups` apart so that all rows of the block are touched by each access wave.
//
// Per token (rows are independent), with q and k normalised:
//   hk = H[row] . k,  hq = H[row] . q       (one reduce-scatter over the row's lanes for all rows)
//   u  = beta * (v[row] - alpha * hk)
//   H[row] = alpha * H[row] + u * k          (== alpha H (I - beta k k^T) + beta v k^T)
//   o[row] = scale * (alpha * hq + u * k.q)  (== scale * H_new[row] . q)
// The state stays in registers across the T tokens, so T = 4 moves the bytes of T = 1. What is
// per token and not per row (normalised q and k, k.q, gates, v of the CTA's rows) is computed once
// per CTA into shared memory, for up to kStageTokens tokens at a time, while the state loads are
// in flight.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fastinfer/context.h"
#include "fastinfer/dtype.h"
#include "gdn/decode_params.h"
#include "gdn/kernels/decode_vector_io.cuh"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn::decode_sm90 {

inline constexpr int kMaxThreads = 256;  // the largest tactic: 8 warps

// How one lane's columns of a row are laid out. kLanesPerRow trades registers (columns per lane,
// also the q and k registers) against shuffles (log2(kLanesPerRow) levels per reduction).
template <class State, int kLanesPerRow>
struct RowSlice {
  static constexpr int kChunkElems = 16 / int(sizeof(State));  // one 16-byte state access
  static constexpr int kChunks = kDecodeHeadDim / (kLanesPerRow * kChunkElems);
  static constexpr int kElems = kChunks * kChunkElems;  // columns per lane
  static_assert(kElems * kLanesPerRow == kDecodeHeadDim);

  __device__ static int column(int chunk, int lane_in_row) { return (chunk * kLanesPerRow + lane_in_row) * kChunkElems; }
};

template <class T, class Slice>
__device__ __forceinline__ void store_row_slice(T* row, int lane_in_row, const float* x) {
#pragma unroll
  for (int c = 0; c < Slice::kChunks; ++c)
    store_floats<T, Slice::kChunkElems>(row + Slice::column(c, lane_in_row), x + c * Slice::kChunkElems);
}

// Tokens whose q, k, v and gates are staged in shared memory at a time (any T is processed in
// stages). 8 covers every MTP depth in use with 12.4 KB of shared memory per CTA.
inline constexpr int kStageTokens = 8;

// Per-token data shared by every thread of a CTA, computed once per CTA: normalised q and k, the
// v entries of the CTA's rows, and the token's gates and k.q.
struct StageSmem {
  float q[kStageTokens][kDecodeHeadDim];
  float k[kStageTokens][kDecodeHeadDim];
  float v[kStageTokens][kDecodeHeadDim];  // indexed by row - first row of the CTA
  float alpha[kStageTokens], beta[kStageTokens], kq[kStageTokens];
};

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

template <class Act>
__device__ __forceinline__ Act* token_row(const TokenTensor& t, int seq, int token, int head) {
  return static_cast<Act*>(t.data) + seq * t.stride_b + token * t.stride_t + head * t.stride_h;
}

// Fills `smem` for tokens [t0, t0 + count): one warp per token normalises q and k (4 columns per
// lane), forms k.q and the gates; all threads fetch v for the CTA's rows.
template <class Act>
__device__ void stage_tokens(const DecodeParams& p, StageSmem& smem, int seq, int head_qk, int head_v, int t0,
                             int count, int cta_row0, int rows_per_cta, float neg_exp_A, float dt_bias) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int j = warp; j < count; j += warps) {
    float q[4], k[4];
    load_floats<Act, 4, LoadPolicy::kReadOnly>(token_row<const Act>(p.q, seq, t0 + j, head_qk) + 4 * lane, q);
    load_floats<Act, 4, LoadPolicy::kReadOnly>(token_row<const Act>(p.k, seq, t0 + j, head_qk) + 4 * lane, k);
    float q_scale = 1.0f, k_scale = 1.0f;
    if (p.use_qk_l2norm) {  // x * rsqrt(sum x^2 + 1e-6)
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
    kq = warp_sum(kq);
    *reinterpret_cast<float4*>(&smem.q[j][4 * lane]) = make_float4(q[0], q[1], q[2], q[3]);
    *reinterpret_cast<float4*>(&smem.k[j][4 * lane]) = make_float4(k[0], k[1], k[2], k[3]);
    if (lane == 0) {
      const GateTensor& a = p.a;
      const GateTensor& b = p.b;
      const float x = load_gate_scalar(a.data, seq * a.stride_b + (t0 + j) * a.stride_t + head_v * a.stride_h, a.type) + dt_bias;
      const float softplus = x > 20.0f ? x : log1pf(expf(x));  // threshold 20
      const float b_val = load_gate_scalar(b.data, seq * b.stride_b + (t0 + j) * b.stride_t + head_v * b.stride_h, b.type);
      smem.alpha[j] = expf(neg_exp_A * softplus);
      smem.beta[j] = 1.0f / (1.0f + expf(-b_val));
      smem.kq[j] = kq;
    }
  }
  for (int e = threadIdx.x; e < count * rows_per_cta; e += blockDim.x) {
    const int j = e / rows_per_cta, r = e % rows_per_cta;
    smem.v[j][r] = to_float(token_row<const Act>(p.v, seq, t0 + j, head_v)[cta_row0 + r]);
  }
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

template <class Act, class State, int kLanesPerRow, int kRowsPerThread>
__global__ void __launch_bounds__(kMaxThreads) gdn_decode_kernel(const __grid_constant__ DecodeParams p) {
  using Slice = RowSlice<State, kLanesPerRow>;
  constexpr int kElems = Slice::kElems;
  constexpr int kValues = 2 * kRowsPerThread;  // hk and hq per row
  static_assert(kValues <= kLanesPerRow, "one reduced value per lane (or fewer)");
  constexpr int kLanesPerValue = kLanesPerRow / kValues;
  constexpr std::int64_t kStateElems = std::int64_t{kDecodeHeadDim} * kDecodeHeadDim;
  __shared__ StageSmem smem;

  const int groups = blockDim.x / kLanesPerRow;  // rows per access wave
  const int rows_per_cta = groups * kRowsPerThread;
  const int vblocks = kDecodeHeadDim / rows_per_cta;
  const int vblock = blockIdx.x % vblocks;
  const int seq_head = blockIdx.x / vblocks;
  const int head_v = seq_head % p.heads_v;
  const int seq = seq_head / p.heads_v;
  const int head_qk = head_v / (p.heads_v / p.heads_qk);
  const int lane_in_row = threadIdx.x % kLanesPerRow;
  const int row_lane0 = (threadIdx.x % 32) - lane_in_row;  // the row's first lane in the warp
  const int cta_row0 = vblock * rows_per_cta;
  // Row r of this thread, relative to cta_row0.
  auto local_row = [&](int r) { return threadIdx.x / kLanesPerRow + r * groups; };
  // After the reduce-scatter this lane holds value `owned`: hk of row owned (< R) or hq of row owned - R.
  const int owned = lane_in_row / kLanesPerValue;

  const int in_slot = p.initial_indices[seq * p.initial_indices_stride];
  const int out_slot = p.output_indices[seq * p.output_indices_stride];
  if (in_slot < 0 || in_slot >= p.pool_size) {  // padding (or an index outside the pool)
    for (int t = 0; t < p.tokens; ++t) {
      Act* out = token_row<Act>(p.output, seq, t, head_v);
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
        if (lane_in_row == r % kLanesPerRow) out[cta_row0 + local_row(r)] = from_float<Act>(0.0f);
    }
    return;
  }

  // Issue every state load of the block first: kRowsPerThread * kElems values in flight per thread.
  const State* in_state = static_cast<const State*>(p.state) + (std::int64_t{in_slot} * p.heads_v + head_v) * kStateElems;
  float state[kRowsPerThread][kElems];
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const State* row = in_state + (cta_row0 + local_row(r)) * kDecodeHeadDim;
#pragma unroll
    for (int c = 0; c < Slice::kChunks; ++c)
      load_floats<State, Slice::kChunkElems, LoadPolicy::kStreaming>(row + Slice::column(c, lane_in_row),
                                                                      &state[r][c * Slice::kChunkElems]);
  }

  const float neg_exp_A = -expf(load_gate_scalar(p.A_log.data, head_v * p.A_log.stride, p.A_log.type));
  const float dt_bias = load_gate_scalar(p.dt_bias.data, head_v * p.dt_bias.stride, p.dt_bias.type);

  for (int t0 = 0; t0 < p.tokens; t0 += kStageTokens) {
    const int count = min(kStageTokens, p.tokens - t0);
    if (t0 > 0) __syncthreads();  // the previous stage's reads are done
    stage_tokens<Act>(p, smem, seq, head_qk, head_v, t0, count, cta_row0, rows_per_cta, neg_exp_A, dt_bias);
    __syncthreads();

    for (int j = 0; j < count; ++j) {
      const int t = t0 + j;
      const float alpha = smem.alpha[j], beta = smem.beta[j];
      float q[kElems], k[kElems];
#pragma unroll
      for (int c = 0; c < Slice::kChunks; ++c)
#pragma unroll
        for (int i = 0; i < Slice::kChunkElems; i += 4) {
          const int col = Slice::column(c, lane_in_row) + i;
          const float4 q4 = *reinterpret_cast<const float4*>(&smem.q[j][col]);
          const float4 k4 = *reinterpret_cast<const float4*>(&smem.k[j][col]);
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
      if (owned < kRowsPerThread) u_owned = beta * (smem.v[j][local_row(owned)] - alpha * sums[0]);
      float u[kRowsPerThread];
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
        u[r] = __shfl_sync(0xffffffffu, u_owned, row_lane0 + r * kLanesPerValue);

#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
#pragma unroll
        for (int i = 0; i < kElems; ++i) state[r][i] = fmaf(u[r], k[i], alpha * state[r][i]);

      // o = scale (alpha hq + u k.q), written by the first lane holding hq of its row.
      if (owned >= kRowsPerThread && lane_in_row % kLanesPerValue == 0) {
        float u_row = 0.0f;
#pragma unroll
        for (int r = 0; r < kRowsPerThread; ++r)
          if (owned - kRowsPerThread == r) u_row = u[r];
        token_row<Act>(p.output, seq, t, head_v)[cta_row0 + local_row(owned - kRowsPerThread)] =
            from_float<Act>(p.scale * fmaf(alpha, sums[0], u_row * smem.kq[j]));
      }

      if (p.intermediate != nullptr) {
        const std::int64_t offset = ((std::int64_t{seq} * p.tokens + t) * p.heads_v + head_v) * kStateElems;
#pragma unroll
        for (int r = 0; r < kRowsPerThread; ++r) {
          const int row = (cta_row0 + local_row(r)) * kDecodeHeadDim;
          if (p.intermediate_is_bf16)
            store_row_slice<__nv_bfloat16, Slice>(static_cast<__nv_bfloat16*>(p.intermediate) + offset + row, lane_in_row, state[r]);
          else
            store_row_slice<float, Slice>(static_cast<float*>(p.intermediate) + offset + row, lane_in_row, state[r]);
        }
      }
    }
  }

  if (!p.update_state || out_slot < 0 || out_slot >= p.pool_size) return;
  State* out_state = static_cast<State*>(p.state) + (std::int64_t{out_slot} * p.heads_v + head_v) * kStateElems;
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r)
    store_row_slice<State, Slice>(out_state + (cta_row0 + local_row(r)) * kDecodeHeadDim, lane_in_row, state[r]);
}

template <DType kDType>
struct CudaType;
template <>
struct CudaType<DType::kFloat32> { using type = float; };
template <>
struct CudaType<DType::kBFloat16> { using type = __nv_bfloat16; };
template <>
struct CudaType<DType::kFloat16> { using type = __half; };

}  // namespace fastinfer::gdn::decode_sm90

namespace fastinfer::gdn {

template <DType kAct, DType kState, int kLanesPerRow, int kRowsPerThread>
void launch_decode_sm90(const DecodeParams& params, int warps, Stream stream) {
  using Act = typename decode_sm90::CudaType<kAct>::type;
  using State = typename decode_sm90::CudaType<kState>::type;
  const int threads = warps * 32;
  const int rows_per_cta = threads / kLanesPerRow * kRowsPerThread;
  const int vblocks = kDecodeHeadDim / rows_per_cta;
  const long long ctas = static_cast<long long>(params.batch) * params.heads_v * vblocks;
  decode_sm90::gdn_decode_kernel<Act, State, kLanesPerRow, kRowsPerThread>
      <<<static_cast<unsigned>(ctas), threads, 0, stream>>>(params);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gdn
