#pragma once
// CP stage 1: per 64-token block and state head, Tinv = (I + strict_lower(diag(beta) K K^T))^-1
// (gate-free; docs/GDN_CP.md). K K^T on tensor cores, then 64 threads each solve one column by
// forward substitution entirely in registers (the column's earlier entries are the thread's own,
// so the solve needs no synchronisation).
#include "gdn/cp_launch.h"
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

inline constexpr int kInverseThreads = 128;
inline constexpr int kRowPad = 8;  // bf16 row padding: rows 272 B apart keep MMA fragment loads conflict-free

template <CpInputType kInput>
__global__ void __launch_bounds__(kInverseThreads) block_inverse_kernel(const CpStageParams p) {
  using In = Input<kInput>;
  using E = typename In::T;
  __shared__ alignas(16) E k_rows[kC][kD + kRowPad];
  __shared__ alignas(16) float a0[kC][kC];
  __shared__ float gates[kC], beta[kC];

  const int block = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  const std::int64_t bos = seq_offset(p, n), eos = seq_offset(p, n + 1);
  const std::int64_t t0 = bos + static_cast<std::int64_t>(block) * kC;
  if (t0 >= eos) return;
  const int len = static_cast<int>((eos - t0 < kC ? eos - t0 : kC));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  const E* k_head = static_cast<const E*>(p.k) + static_cast<std::int64_t>(h * p.num_k_heads / p.num_state_heads) * p.k_stride_head;
  BlockRowsFetch<In, kInverseThreads / 32> k_fetch;
  BlockGatesFetch gate_fetch;
  k_fetch.fetch(k_head, p.k_stride_token, t0, len, warp, lane);
  gate_fetch.fetch(p, t0, len, h);
  k_fetch.store(p.use_qk_l2norm, warp, lane, [&](int r, int c, float x) { k_rows[r][c] = In::from_float(x); });
  gate_fetch.finish(gates, beta);  // synchronises

  // K K^T: warp (w / 2, w % 2) computes the 32x32 tile at rows 32*(w/2), columns 32*(w%2).
  const int r0 = (warp / 2) * 32, c0 = (warp % 2) * 32;
  float acc[2][4][4] = {};
#pragma unroll
  for (int ks = 0; ks < kD / 16; ++ks) {
    std::uint32_t a[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      const int row = r0 + mt * 16 + g, col = ks * 16 + 2 * t;
      a[mt][0] = lds_pair(&k_rows[row][col]);
      a[mt][1] = lds_pair(&k_rows[row + 8][col]);
      a[mt][2] = lds_pair(&k_rows[row][col + 8]);
      a[mt][3] = lds_pair(&k_rows[row + 8][col + 8]);
    }
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const std::uint32_t b0 = lds_pair(&k_rows[c0 + nt * 8 + g][ks * 16 + 2 * t]);
      const std::uint32_t b1 = lds_pair(&k_rows[c0 + nt * 8 + g][ks * 16 + 2 * t + 8]);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) In::mma(acc[mt][nt], a[mt], b0, b1);
    }
  }
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = r0 + mt * 16 + g + (e / 2) * 8, j = c0 + nt * 8 + 2 * t + (e % 2);
        a0[i][j] = j < i ? beta[i] * acc[mt][nt][e] : 0.f;
      }
  __syncthreads();

  if (threadIdx.x < kC) {
    const int c = threadIdx.x;
    float x[kC];
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      float s = i == c ? 1.f : 0.f;
#pragma unroll
      for (int j = 0; j < i; ++j) s = fmaf(-a0[i][j], x[j], s);
      x[i] = s;
    }
    float* out = p.block_inverse +
                 ((static_cast<std::int64_t>(n) * p.blocks_per_seq + block) * p.num_state_heads + h) * kC * kC;
#pragma unroll
    for (int i = 0; i < kC; ++i) out[i * kC + c] = x[i];
  }
}

template <CpInputType kInput>
void launch_cp_block_inverse(const CpStageParams& params, cudaStream_t stream) {
  const dim3 grid(params.blocks_per_seq, params.num_state_heads, params.num_seqs);
  // First stage: a plain launch, so it never overlaps the previous call's readers of the workspace.
  launch_stage(block_inverse_kernel<kInput>, grid, dim3(kInverseThreads), 0, stream, false, params);
}

}  // namespace fastinfer::gdn::detail::cp

namespace fastinfer::gdn::detail {
template <CpInputType kInput>
void launch_cp_block_inverse(const CpStageParams& params, cudaStream_t stream) {
  cp::launch_cp_block_inverse<kInput>(params, stream);
}
}  // namespace fastinfer::gdn::detail
