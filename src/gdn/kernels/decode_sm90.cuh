#pragma once
// GDN decode / MTP kernel (sm_90a). Memory-bound: every (sequence, state head) state of
// 128 x 128 is read once and written once per call, whatever the number of draft tokens T.
//
// Work split. A CTA owns a block of V rows (all 128 K columns) of one (sequence, head) state.
// Each row belongs to a group of kLanesPerRow consecutive lanes; a lane holds kElems columns of
// it in fp32 registers (RowSlice in decode_token_step.cuh, which also holds the per-token math).
// Rows of a thread are `groups` apart so that all rows of the block are touched by each access
// wave. All state loads of a thread are issued before any math. The state stays in registers
// across the T tokens, so T = 4 moves the bytes of T = 1. What is per token and not per row
// (normalised q and k, k.q, gates, v of the CTA's rows) is computed once per CTA into shared
// memory, for up to kStageTokens tokens at a time, while the state loads are in flight.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fastinfer/context.h"
#include "fastinfer/dtype.h"
#include "gdn/decode_params.h"
#include "gdn/kernels/decode_profile.cuh"
#include "gdn/kernels/decode_token_step.cuh"
#include "gdn/kernels/decode_vector_io.cuh"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn::decode_sm90 {

inline constexpr int kMaxThreads = 256;  // the largest tactic: 8 warps

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
    const float kq = normalise_qk(q, k, p.use_qk_l2norm);
    *reinterpret_cast<float4*>(&smem.q[j][4 * lane]) = make_float4(q[0], q[1], q[2], q[3]);
    *reinterpret_cast<float4*>(&smem.k[j][4 * lane]) = make_float4(k[0], k[1], k[2], k[3]);
    if (lane == 0) {
      const GateTensor& a = p.a;
      const GateTensor& b = p.b;
      const float2 gates = decode_gates(
          load_gate_scalar(a.data, seq * a.stride_b + (t0 + j) * a.stride_t + head_v * a.stride_h, a.type),
          load_gate_scalar(b.data, seq * b.stride_b + (t0 + j) * b.stride_t + head_v * b.stride_h, b.type), neg_exp_A,
          dt_bias);
      smem.alpha[j] = gates.x;
      smem.beta[j] = gates.y;
      smem.kq[j] = kq;
    }
  }
  for (int e = threadIdx.x; e < count * rows_per_cta; e += blockDim.x) {
    const int j = e / rows_per_cta, r = e % rows_per_cta;
    smem.v[j][r] = to_float(token_row<const Act>(p.v, seq, t0 + j, head_v)[cta_row0 + r]);
  }
}

// Padding (or a slot outside the pool): zero the output rows of the thread's rows for every token,
// one lane per row. The register and small-batch kernels.
template <class Act, int kLanesPerRow, int kRowsPerThread, class LocalRow>
__device__ __forceinline__ void zero_output_rows(const DecodeParams& p, int seq, int head_v, int cta_row0, int lane_in_row,
                                                 LocalRow&& local_row) {
  for (int t = 0; t < p.tokens; ++t) {
    Act* out = token_row<Act>(p.output, seq, t, head_v);
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r)
      if (lane_in_row == r % kLanesPerRow) out[cta_row0 + local_row(r)] = from_float<Act>(0.0f);
  }
}

template <class Act, class State, int kLanesPerRow, int kRowsPerThread, bool kProfile = false>
__global__ void __launch_bounds__(kMaxThreads, 1) gdn_decode_kernel(const __grid_constant__ DecodeParams p) {
  using Slice = RowSlice<State, kLanesPerRow>;
  constexpr int kElems = Slice::kElems;
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
  const int cta_row0 = vblock * rows_per_cta;
  // Row r of this thread, relative to cta_row0.
  auto local_row = [&](int r) { return threadIdx.x / kLanesPerRow + r * groups; };
  if (threadIdx.x == 0) profile_stamp<kProfile>(p, kProfileEntry);

  const int in_slot = p.initial_indices[seq * p.initial_indices_stride];
  const int out_slot = p.output_indices[seq * p.output_indices_stride];
  if (in_slot < 0 || in_slot >= p.pool_size) {  // padding (or an index outside the pool)
    zero_output_rows<Act, kLanesPerRow, kRowsPerThread>(p, seq, head_v, cta_row0, lane_in_row, local_row);
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

  float lazy = 1.0f;  // the state registers hold H / lazy (token_step)
  const float min_lazy = min_lazy_scale(p);
  for (int t0 = 0; t0 < p.tokens; t0 += kStageTokens) {
    const int count = min(kStageTokens, p.tokens - t0);
    if (t0 > 0) __syncthreads();  // the previous stage's reads are done
    stage_tokens<Act>(p, smem, seq, head_qk, head_v, t0, count, cta_row0, rows_per_cta, neg_exp_A, dt_bias);
    __syncthreads();

    for (int j = 0; j < count; ++j) {
      const int t = t0 + j;
      Act* out = token_row<Act>(p.output, seq, t, head_v) + cta_row0;
      token_step<Slice, kLanesPerRow, kRowsPerThread>(
          state, lazy, min_lazy, smem.q[j], smem.k[j], smem.alpha[j], smem.beta[j], smem.kq[j], lane_in_row,
          [&](int r) { return smem.v[j][local_row(r)]; },
          [&](int r, float hq) { out[local_row(r)] = from_float<Act>(p.scale * hq); });
      if (p.intermediate != nullptr)
        store_intermediate<Slice, kRowsPerThread>(p, state, lazy, seq, t, head_v, cta_row0, lane_in_row, local_row);
      if (t == 0 && threadIdx.x == 0) profile_stamp<kProfile>(p, kProfileFirstData);  // slot, state, token 0 done
    }
  }

  if (threadIdx.x == 0) profile_stamp<kProfile>(p, kProfileLastDone);
  if (!p.update_state || out_slot < 0 || out_slot >= p.pool_size) return;
  State* out_state = static_cast<State*>(p.state) + (std::int64_t{out_slot} * p.heads_v + head_v) * kStateElems;
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r)
    store_row_slice<State, Slice>(out_state + (cta_row0 + local_row(r)) * kDecodeHeadDim, lane_in_row, state[r], lazy);
  if (threadIdx.x == 0) profile_stamp<kProfile>(p, kProfileExit);  // stores issued (they drain after)
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
