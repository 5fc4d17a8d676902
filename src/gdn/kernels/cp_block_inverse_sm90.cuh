#pragma once
// CP stage 1: per 64-token block and state head, Tinv = (I + strict_lower(diag(beta) K K^T))^-1
// (gate-free; docs/GDN_CP.md), fp32 out, [blocks, Hsab, 64, 64] row-major with zeros above the
// diagonal. Embarrassingly parallel, so the kernel is built for instruction throughput (the H200
// profile of the first versions: short-scoreboard stalls on shared loads, DRAM at 15-20 %):
//  - small CTAs (128 threads, ~19 KB shared memory, 125 registers), four per SM;
//  - K K^T on tensor cores, written transposed (column j of A contiguous, zeros on and above the
//    diagonal) into the space K occupied;
//  - right-looking forward substitution, two threads per column of Tinv (rows split by parity,
//    32 registers each): step j takes x_j from the partner by one shuffle and updates every later
//    row with independent FMAs whose A values come as 16-byte broadcast loads. A warp owns 16
//    columns and skips the steps before its first column (x_j = 0 there); the column group
//    rotates with the block index so the long first group is spread over the SM's schedulers.
//    ~1.1k FMAs for the longest warp instead of the left-looking solve's 2k dependent FMAs and 2k
//    scalar loads per thread;
//  - stores straight from registers (each 32-byte sector written whole).
#include "gdn/cp_launch.h"
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

inline constexpr int kInverseThreads = 128;
inline constexpr int kInverseCtasPerSm = 4;  // 125 registers, no spills (6 per SM: 756 bytes spilled at 80; 5: 1132 at 96); unmeasured
inline constexpr int kParityPitch = 36;      // rows of one parity: 32 floats + 4, so the two parities' 16-byte loads use different banks
inline constexpr int kColumnPitch = 2 * kParityPitch;

// K rows without padding; 16-byte pieces XOR-swizzled by row so the MMA fragment loads (8 rows x
// 4 words) hit 32 distinct banks.
__device__ inline int k_index(int row, int col) { return row * kD + (((col / 8) ^ (row % 8)) * 8) + col % 8; }

// A transposed and split by row parity: A[i][j] at a_t[j * kColumnPitch + (i % 2) * kParityPitch + i / 2].
__device__ inline int a_t_index(int i, int j) { return j * kColumnPitch + (i % 2) * kParityPitch + i / 2; }

template <class E>
union BlockInverseSmem {
  E k_rows[kC * kD];          // the block's K, live until K K^T is in registers
  float a_t[kC * kColumnPitch];  // then A = strict_lower(diag(beta) K K^T), transposed
};

template <CpInputType kInput>
__global__ void __launch_bounds__(kInverseThreads, kInverseCtasPerSm) block_inverse_kernel(const CpStageParams p) {
  using In = Input<kInput>;
  using E = typename In::T;
  __shared__ alignas(16) BlockInverseSmem<E> s;
  __shared__ float beta[kC];

  const int block = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  const std::int64_t bos = seq_offset(p, n), eos = seq_offset(p, n + 1);
  const std::int64_t t0 = bos + static_cast<std::int64_t>(block) * kC;
  if (t0 >= eos) return;
  const int len = static_cast<int>((eos - t0 < kC ? eos - t0 : kC));
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;

  const E* k_head = static_cast<const E*>(p.k) + static_cast<std::int64_t>(h * p.num_k_heads / p.num_state_heads) * p.k_stride_head;
  BlockRowsFetch<In, kInverseThreads / 32> k_fetch;
  k_fetch.fetch(k_head, p.k_stride_token, t0, len, warp, lane);
  if (tid < kC) beta[tid] = tid < len ? (p.beta ? __ldg(p.beta + (t0 + tid) * p.beta_stride_token + h) : 1.f) : 0.f;
  k_fetch.store(p.use_qk_l2norm, warp, lane, [&](int r, int c, float x) { s.k_rows[k_index(r, c)] = In::from_float(x); });
  __syncthreads();

  // K K^T: warp (w / 2, w % 2) computes the 32x32 tile at rows 32*(w/2), columns 32*(w%2) (the
  // upper-right tile is all above the diagonal: zeros without products).
  const int r0 = (warp / 2) * 32, c0 = (warp % 2) * 32;
  float acc[2][4][4] = {};
  if (c0 <= r0) {
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      std::uint32_t a[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const int row = r0 + mt * 16 + g, col = ks * 16 + 2 * t;
        a[mt][0] = lds_pair(&s.k_rows[k_index(row, col)]);
        a[mt][1] = lds_pair(&s.k_rows[k_index(row + 8, col)]);
        a[mt][2] = lds_pair(&s.k_rows[k_index(row, col + 8)]);
        a[mt][3] = lds_pair(&s.k_rows[k_index(row + 8, col + 8)]);
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int row = c0 + nt * 8 + g, col = ks * 16 + 2 * t;
        const std::uint32_t b0 = lds_pair(&s.k_rows[k_index(row, col)]);
        const std::uint32_t b1 = lds_pair(&s.k_rows[k_index(row, col + 8)]);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) In::mma(acc[mt][nt], a[mt], b0, b1);
      }
    }
  }
  __syncthreads();  // K is consumed: A overwrites it
  // Every element of A is written (zeros on and above the diagonal: the solve multiplies by them).
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = r0 + mt * 16 + g + (e / 2) * 8, j = c0 + nt * 8 + 2 * t + (e % 2);
        s.a_t[a_t_index(i, j)] = j < i ? beta[i] * acc[mt][nt][e] : 0.f;
      }
  __syncthreads();

  // Thread (column c, parity par) holds x[i] for the rows i = 2 r + par of column c in x[r].
  // Rotated by every grid index: the non-CP prefill launches grid (1, Hsab, rows).
  const int group = (warp + block + h + n) % 4, c = group * 16 + lane % 16, par = lane / 16;
  float x[kC / 2];
#pragma unroll
  for (int r = 0; r < kC / 2; ++r) x[r] = 2 * r + par == c ? 1.f : 0.f;
  const float* a_mine = s.a_t + par * kParityPitch;
#pragma unroll
  for (int j = 0; j < kC - 1; ++j) {
    if (j < group * 16) continue;  // x_j = 0 for every column of this warp
    const float xj = __shfl_sync(0xffffffffu, x[j / 2], (lane % 16) + 16 * (j % 2));
    // Rows 2r + par > j need r >= j / 2 (rows at or above j meet zeros of A); whole float4s.
#pragma unroll
    for (int r4 = (j / 2) / 4; r4 < kC / 8; ++r4) {
      const float4 a = *reinterpret_cast<const float4*>(a_mine + j * kColumnPitch + 4 * r4);
      x[4 * r4 + 0] = fmaf(-a.x, xj, x[4 * r4 + 0]);
      x[4 * r4 + 1] = fmaf(-a.y, xj, x[4 * r4 + 1]);
      x[4 * r4 + 2] = fmaf(-a.z, xj, x[4 * r4 + 2]);
      x[4 * r4 + 3] = fmaf(-a.w, xj, x[4 * r4 + 3]);
    }
  }

  float* out = p.block_inverse + ((static_cast<std::int64_t>(n) * p.blocks_per_seq + block) * p.num_state_heads + h) * kC * kC;
#pragma unroll
  for (int r = 0; r < kC / 2; ++r) out[(2 * r + par) * kC + c] = x[r];
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
