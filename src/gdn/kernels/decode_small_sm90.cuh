#pragma once
// GDN decode / MTP for small batches (a few states per SM): the register kernel's work split (a
// CTA owns a block of V rows of one (sequence, head) state, rows in fp32 registers, token_step
// per token) with a shorter chain of latencies per CTA, because at B <= 8 the time is one CTA's
// load -> compute -> store chain, not bandwidth:
//   - everything that does not depend on the pool slot (q, k and the gates of every token, the v
//     entries of the lane's row, A_log, dt_bias) is loaded before the slot is known, so those
//     loads overlap the slot -> state chain instead of following it;
//   - every warp normalises all T tokens itself (interleaved reductions) into its own
//     shared-memory copy: no CTA barrier, one __syncwarp; alpha and beta are formed per thread.
// Windows of up to kSmallMaxTokens tokens (the registers hold every token's raw q and k); longer
// ones run on the register kernel of the same shape.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fastinfer/context.h"
#include "gdn/decode_launch.h"
#include "gdn/decode_params.h"
#include "gdn/kernels/decode_sm90.cuh"
#include "gdn/kernels/decode_token_step.cuh"
#include "gdn/kernels/decode_vector_io.cuh"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn::decode_sm90 {

// One warp's normalised tokens (its private copy: no CTA barrier).
struct SmallWarpTokens {
  float q[kDecodeSmallMaxTokens][kDecodeHeadDim];
  float k[kDecodeSmallMaxTokens][kDecodeHeadDim];
};

template <class Act, class State, int kLanesPerRow, int kRowsPerThread>
__global__ void __launch_bounds__(kMaxThreads, 1) gdn_decode_small_kernel(const __grid_constant__ DecodeParams p) {
  using Slice = RowSlice<State, kLanesPerRow>;
  constexpr int kElems = Slice::kElems;
  constexpr int kTokens = kDecodeSmallMaxTokens;
  constexpr int kValues = 2 * kRowsPerThread;  // token_step's reduce-scatter: hk, hq per row
  constexpr int kLanesPerValue = kLanesPerRow / kValues;
  constexpr std::int64_t kStateElems = std::int64_t{kDecodeHeadDim} * kDecodeHeadDim;
  extern __shared__ __align__(16) unsigned char small_smem[];
  SmallWarpTokens& tok = reinterpret_cast<SmallWarpTokens*>(small_smem)[threadIdx.x / 32];

  const int groups = blockDim.x / kLanesPerRow;
  const int rows_per_cta = groups * kRowsPerThread;
  const int vblocks = kDecodeHeadDim / rows_per_cta;
  const int vblock = blockIdx.x % vblocks;
  const int seq_head = blockIdx.x / vblocks;
  const int head_v = seq_head % p.heads_v;
  const int seq = seq_head / p.heads_v;
  const int head_qk = head_v / (p.heads_v / p.heads_qk);
  const int lane = threadIdx.x % 32;
  const int lane_in_row = threadIdx.x % kLanesPerRow;
  const int cta_row0 = vblock * rows_per_cta;
  auto local_row = [&](int r) { return threadIdx.x / kLanesPerRow + r * groups; };
  const int T = p.tokens;  // <= kTokens (the launcher)

  // 1. The slots, then every slot-independent load, before anything waits on the slots.
  const int in_slot = p.initial_indices[seq * p.initial_indices_stride];
  const int out_slot = p.output_indices[seq * p.output_indices_stride];
  const float A_log = load_gate_scalar(p.A_log.data, head_v * p.A_log.stride, p.A_log.type);
  const float dt_bias = load_gate_scalar(p.dt_bias.data, head_v * p.dt_bias.stride, p.dt_bias.type);
  // token_step needs v only of the row whose hk this lane holds after its reduce-scatter.
  const int owned = lane_in_row / kLanesPerValue;
  const int v_row = cta_row0 + local_row(owned < kRowsPerThread ? owned : 0);
  float q[kTokens][4], k[kTokens][4], a[kTokens], b[kTokens], v[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < T) {
      load_floats<Act, 4, LoadPolicy::kReadOnly>(token_row<const Act>(p.q, seq, t, head_qk) + 4 * lane, q[t]);
      load_floats<Act, 4, LoadPolicy::kReadOnly>(token_row<const Act>(p.k, seq, t, head_qk) + 4 * lane, k[t]);
      a[t] = load_gate_scalar(p.a.data, seq * p.a.stride_b + t * p.a.stride_t + head_v * p.a.stride_h, p.a.type);
      b[t] = load_gate_scalar(p.b.data, seq * p.b.stride_b + t * p.b.stride_t + head_v * p.b.stride_h, p.b.type);
      v[t] = to_float(__ldg(token_row<const Act>(p.v, seq, t, head_v) + v_row));
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) q[t][i] = k[t][i] = 0.0f;
      a[t] = b[t] = v[t] = 0.0f;
    }
  }

  if (in_slot < 0 || in_slot >= p.pool_size) {  // padding (or an index outside the pool)
    zero_output_rows<Act, kLanesPerRow, kRowsPerThread>(p, seq, head_v, cta_row0, lane_in_row, local_row);
    return;
  }

  // 2. The state block (depends on the slot).
  const State* in_state = static_cast<const State*>(p.state) + (std::int64_t{in_slot} * p.heads_v + head_v) * kStateElems;
  float state[kRowsPerThread][kElems];
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r)
    load_row_slice<State, Slice, LoadPolicy::kStreaming>(in_state + (cta_row0 + local_row(r)) * kDecodeHeadDim,
                                                         lane_in_row, state[r]);

  // 3. While the state is in flight: gates per thread, q/k normalised per warp (all tokens' sums
  // reduced together), into the warp's copy.
  const float neg_exp_A = -expf(A_log);
  float alpha[kTokens], beta[kTokens], kq[kTokens];
  float sums[3 * kTokens];  // |q_t|^2, |k_t|^2, k_t.q_t
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    const float2 g = decode_gates(a[t], b[t], neg_exp_A, dt_bias);
    alpha[t] = g.x;
    beta[t] = g.y;
    sums[3 * t] = sums[3 * t + 1] = sums[3 * t + 2] = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sums[3 * t] = fmaf(q[t][i], q[t][i], sums[3 * t]);
      sums[3 * t + 1] = fmaf(k[t][i], k[t][i], sums[3 * t + 1]);
      sums[3 * t + 2] = fmaf(k[t][i], q[t][i], sums[3 * t + 2]);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
#pragma unroll
    for (int i = 0; i < 3 * kTokens; ++i) sums[i] += __shfl_xor_sync(0xffffffffu, sums[i], offset);
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    const float q_scale = p.use_qk_l2norm ? rsqrtf(sums[3 * t] + 1e-6f) : 1.0f;
    const float k_scale = p.use_qk_l2norm ? rsqrtf(sums[3 * t + 1] + 1e-6f) : 1.0f;
    kq[t] = sums[3 * t + 2] * q_scale * k_scale;
    *reinterpret_cast<float4*>(&tok.q[t][4 * lane]) =
        make_float4(q[t][0] * q_scale, q[t][1] * q_scale, q[t][2] * q_scale, q[t][3] * q_scale);
    *reinterpret_cast<float4*>(&tok.k[t][4 * lane]) =
        make_float4(k[t][0] * k_scale, k[t][1] * k_scale, k[t][2] * k_scale, k[t][3] * k_scale);
  }
  __syncwarp();

  // 4. The tokens, then the final state.
  float lazy = 1.0f;
  const float min_lazy = min_lazy_scale(p);
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t >= T) break;
    Act* out = token_row<Act>(p.output, seq, t, head_v) + cta_row0;
    token_step<Slice, kLanesPerRow, kRowsPerThread>(
        state, lazy, min_lazy, tok.q[t], tok.k[t], alpha[t], beta[t], kq[t], lane_in_row,
        [&](int) { return v[t]; },  // called for the owned row only
        [&](int r, float hq) { out[local_row(r)] = from_float<Act>(p.scale * hq); });
    if (p.intermediate != nullptr)
      store_intermediate<Slice, kRowsPerThread>(p, state, lazy, seq, t, head_v, cta_row0, lane_in_row, local_row);
  }

  if (!p.update_state || out_slot < 0 || out_slot >= p.pool_size) return;
  State* out_state = static_cast<State*>(p.state) + (std::int64_t{out_slot} * p.heads_v + head_v) * kStateElems;
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r)
    store_row_slice<State, Slice>(out_state + (cta_row0 + local_row(r)) * kDecodeHeadDim, lane_in_row, state[r], lazy);
}

}  // namespace fastinfer::gdn::decode_sm90

namespace fastinfer::gdn {

template <DType kAct, DType kState, int kLanesPerRow, int kRowsPerThread>
void launch_decode_small_sm90(const DecodeParams& params, int warps, Stream stream) {
  if (params.tokens > kDecodeSmallMaxTokens) {  // the registers hold at most kDecodeSmallMaxTokens tokens
    launch_decode_sm90<kAct, kState, kLanesPerRow, kRowsPerThread>(params, warps, stream);
    return;
  }
  using Act = typename decode_sm90::CudaType<kAct>::type;
  using State = typename decode_sm90::CudaType<kState>::type;
  const int threads = warps * 32;
  const int rows_per_cta = threads / kLanesPerRow * kRowsPerThread;
  const long long ctas = static_cast<long long>(params.batch) * params.heads_v * (kDecodeHeadDim / rows_per_cta);
  const std::size_t smem = sizeof(decode_sm90::SmallWarpTokens) * static_cast<std::size_t>(warps);  // <= 16 KB
  decode_sm90::gdn_decode_small_kernel<Act, State, kLanesPerRow, kRowsPerThread>
      <<<static_cast<unsigned>(ctas), threads, smem, stream>>>(params);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gdn
