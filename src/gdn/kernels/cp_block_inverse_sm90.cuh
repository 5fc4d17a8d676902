#pragma once
// CP stage 1: per 64-token block and state head, Tinv = (I + strict_lower(diag(beta) K K^T))^-1
// (gate-free; docs/GDN_CP.md), and/or the gated T_g the prefill kernel's consumers use, as a
// rounded pair hi + lo. Two warps per head: K K^T on tensor cores, then each of the 64 threads
// solves one column by forward substitution entirely in registers (the column's
// earlier entries are the thread's own, so the solve needs no synchronisation).
#include "gdn/cp_launch.h"
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

// Two warps per state head, so every warp solves: with four (two idle during the solve) ncu showed
// 5 CTAs per SM, 17 % achieved occupancy and 8 cycles per issued instruction, 1.1 ms at 64x1k
// 16/32 (H200, session 4 batch 1); A0 reuses the K tile's shared memory (17.9 KB per head). At 103
// registers ncu showed 8 CTAs per SM (4 warps per scheduler); capped at 96 (16 bytes of spill) 10
// fit.
inline constexpr int kRowPad = 8;  // bf16 row padding: rows 272 B apart keep MMA fragment loads conflict-free
// A0 is stored transposed, a0t[j][i] = A0[i][j], rows 68 floats apart: the solve reads a row j as
// 16-byte vectors, and the MMA epilogue's transposed stores (lanes g: i, t: j = 2t) hit distinct banks.
inline constexpr int kA0Pitch = kC + 4;

// Column c of Tinv by forward substitution, entirely in registers (the column's earlier entries
// are the thread's own), rows [kFirst, kLast) with kFirst <= c: the entries above are zero, so the
// warp of columns 32-63 skips that half (496 instead of 2016 FMAs per thread); rows from kLast on
// are zero when the block has at most kLast tokens (beta = 0 there: A0's rows are zero, so the
// full solve leaves exactly +0 in them and e_c in a column c >= kLast), so a block of <= 32
// tokens solves 32 rows (the 8192 x 32 shape: every block). Right-looking: once x[j] is
// final it is subtracted from every later row, so the dependent chain is one FMA per step (63)
// instead of the 2016 of row-by-row dot products (each CTA's lifetime was its first warp's chain:
// ncu, session 4 batch 1); the same FMAs in the same order per x[i], so the same bits. Then the
// column into block_inverse (all 64 rows) and/or block_t_gated (the rows of 16x16 blocks on or
// below the diagonal: the prefill kernel reads only those).
template <class In, int kFirst, int kLast = kC>
__device__ __forceinline__ void solve_and_store_column(const CpStageParams& p, const float (&a0t)[kC][kA0Pitch],
                                                       const float* gates, const float* beta, std::int64_t row, int c,
                                                       bool store_inverse) {
  using E = typename In::T;
  float x[kC];
#pragma unroll
  for (int i = 0; i < kC; ++i) x[i] = i >= kFirst && i == c ? 1.f : 0.f;
#pragma unroll
  for (int j = kFirst; j < kLast - 1; ++j)
#pragma unroll
    for (int i = j + 1; i < kLast; ++i) x[i] = fmaf(-a0t[j][i], x[j], x[i]);
  if (store_inverse) {
    float* out = p.block_inverse + row * kC * kC;
#pragma unroll
    for (int i = 0; i < kC; ++i)
      if (!p.lower_inverse_blocks || i / 16 >= c / 16) out[i * kC + c] = x[i];
  }
  if (p.block_t_gated != nullptr) {
    // T_g[i][c] = Tinv[i][c] beta_c e^{G_i - G_c} (i >= c, else 0), rounded hi + lo: what the
    // prefill kernel's consumers read (prefill_fast_t_gated.cuh computes the same per chunk).
    E* hi = static_cast<E*>(p.block_t_gated) + row * 2 * kC * kC;
    E* lo = hi + kC * kC;
    const float beta_c = beta[c], g_c = gates[c];
#pragma unroll
    for (int i = kFirst; i < kC; ++i) {
      if (i / 16 >= c / 16) {
        const float value = i >= c ? x[i] * beta_c * __expf(gates[i] - g_c) : 0.f;
        const E rounded = In::from_float(value);
        hi[i * kC + c] = rounded;
        lo[i * kC + c] = In::from_float(value - In::to_float(rounded));
      }
    }
  }
}

// kHeads state heads per CTA (64 threads each) that read the same k head (GVA with Hsab a
// multiple of 2 Hk): K is loaded, normalised and multiplied once for both, A0 = diag(beta_h) K K^T
// per head (the per-head work is the solve; the K side was ~1/3 of a CTA's instructions).
template <CpInputType kInput, int kHeads>
__global__ void __launch_bounds__(kC * kHeads, 10 / kHeads) block_inverse_kernel(const CpStageParams p) {
  using In = Input<kInput>;
  using E = typename In::T;
  constexpr int kTileBytes = sizeof(E) * kC * (kD + kRowPad);
  static_assert(sizeof(float) * kC * kA0Pitch <= kTileBytes);
  // K rows in tile 0, then A0 of head r (transposed) in tile r once every warp has read K.
  __shared__ alignas(16) unsigned char tiles[kHeads][kTileBytes];
  auto& k_rows = *reinterpret_cast<E(*)[kC][kD + kRowPad]>(tiles[0]);
  __shared__ float gates[kHeads][kC], beta[kHeads][kC];

  const int block = blockIdx.x, head0 = blockIdx.y * kHeads, n = blockIdx.z;
  const std::int64_t bos = seq_offset(p, n), eos = seq_offset(p, n + 1);
  const std::int64_t t0 = bos + static_cast<std::int64_t>(block) * kC;
  if (t0 >= eos) return;
  const int len = static_cast<int>((eos - t0 < kC ? eos - t0 : kC));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // This thread's head (gates, solve) and token / column.
  const int r = threadIdx.x / kC, tok = threadIdx.x % kC;

  const E* k_head =
      static_cast<const E*>(p.k) + static_cast<std::int64_t>(head0 * p.num_k_heads / p.num_state_heads) * p.k_stride_head;
  BlockRowsFetch<In, kC * kHeads / 32> k_fetch;
  k_fetch.fetch(k_head, p.k_stride_token, t0, len, warp, lane);
  // Gates of head head0 + r (as BlockGatesFetch, per head): G = running sum of clamped log alpha
  // (constant past len), beta (zero past len).
  float alpha = 1.f, b = 0.f;
  if (tok < len) {
    const std::int64_t token = t0 + tok;
    alpha = p.alpha ? __ldg(p.alpha + token * p.alpha_stride_token + head0 + r) : 1.f;
    b = p.beta ? __ldg(p.beta + token * p.beta_stride_token + head0 + r) : 1.f;
  }
  k_fetch.store(p.use_qk_l2norm, warp, lane, [&](int row, int col, float x) { k_rows[row][col] = In::from_float(x); });
  float la = fmaxf(__logf(alpha), kMinLogAlpha);
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, la, o);
    if (lane >= o) la += y;
  }
  gates[r][tok] = la;
  beta[r][tok] = b;
  __syncthreads();
  if (tok >= 32) gates[r][tok] += gates[r][31];
  __syncthreads();

  // K K^T on every warp: warp w computes row tiles w kMTiles .. (w + 1) kMTiles - 1 (16 rows each),
  // columns j < 16 (w + 1) kMTiles (every j < i of them). With two heads (four warps) each warp
  // takes one 16-row tile (the longest, warp 3: 8 column tiles) instead of warps 0-1 taking 32 rows
  // while warps 2-3 waited at the barrier (ncu, session 4 batch 5: barrier stall 1.27 cycles per
  // issued instruction; the longest warp had 16 MMAs per k-step, now 8).
  constexpr int kMmaWarps = 2 * kHeads, kMTiles = (kC / 16) / kMmaWarps;
  const int r0 = warp * 16 * kMTiles, col_tiles = 2 * kMTiles * (warp + 1);
  float acc[kMTiles][8][4] = {};
  // Rows at or past len are zero rows of K: a warp whose rows all lie there keeps zero accumulators.
  if (r0 < len) {
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      std::uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        const int row = r0 + mt * 16 + g, col = ks * 16 + 2 * t;
        a[mt][0] = lds_pair(&k_rows[row][col]);
        a[mt][1] = lds_pair(&k_rows[row + 8][col]);
        a[mt][2] = lds_pair(&k_rows[row][col + 8]);
        a[mt][3] = lds_pair(&k_rows[row + 8][col + 8]);
      }
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        if (nt < col_tiles) {
          const std::uint32_t b0 = lds_pair(&k_rows[nt * 8 + g][ks * 16 + 2 * t]);
          const std::uint32_t b1 = lds_pair(&k_rows[nt * 8 + g][ks * 16 + 2 * t + 8]);
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) In::mma(acc[mt][nt], a[mt], b0, b1);
        }
      }
    }
  }
  __syncthreads();  // K read: A0 overwrites it
  // The solve reads A0[i][j] for j < i only, so the tiles right of col_tiles stay unwritten.
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    auto& a0t = *reinterpret_cast<float(*)[kC][kA0Pitch]>(tiles[h]);
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
        if (nt < col_tiles) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int i = r0 + mt * 16 + g + (e / 2) * 8, j = nt * 8 + 2 * t + (e % 2);
            a0t[j][i] = j < i ? beta[h][i] * acc[mt][nt][e] : 0.f;
          }
        }
  }
  __syncthreads();

  const auto& a0t = *reinterpret_cast<const float(*)[kC][kA0Pitch]>(tiles[r]);
  const int c = tok;
  const std::int64_t row = (static_cast<std::int64_t>(n) * p.blocks_per_seq + block) * p.num_state_heads + head0 + r;
  // Warp-uniform: the second warp of each head starts at row 32; blocks of <= 32 tokens (CTA-
  // uniform) solve rows 0-31 only.
  const bool short_block = len <= kC / 2;
  // Stage 2 reads no Tinv of a sequence's last chunk when it skips that chunk's map
  // (CpStageParams::skip_last_chunk_inverse): 1/4 of the fp32 stores at 1x128k 16/32, 1/2 at 16/64
  // 1x64k (CTA-uniform).
  const bool store_inverse =
      p.block_inverse != nullptr &&
      !(p.skip_last_chunk_inverse &&
        bos + (static_cast<std::int64_t>(block) * kC / p.chunk_len + 1) * p.chunk_len >= eos);
  if (c < kC / 2) {
    if (short_block) {
      solve_and_store_column<In, 0, kC / 2>(p, a0t, gates[r], beta[r], row, c, store_inverse);
    } else {
      solve_and_store_column<In, 0>(p, a0t, gates[r], beta[r], row, c, store_inverse);
    }
  } else {
    if (short_block) {
      solve_and_store_column<In, kC / 2, kC / 2>(p, a0t, gates[r], beta[r], row, c, store_inverse);
    } else {
      solve_and_store_column<In, kC / 2>(p, a0t, gates[r], beta[r], row, c, store_inverse);
    }
  }
}

template <CpInputType kInput>
void launch_cp_block_inverse(const CpStageParams& params, cudaStream_t stream) {
  // Pairs of state heads share their k head when Hsab is a multiple of 2 Hk.
  const bool pairs = params.num_state_heads % (2 * params.num_k_heads) == 0;
  const int heads = pairs ? 2 : 1;
  const dim3 grid(params.blocks_per_seq, params.num_state_heads / heads, params.num_seqs);
  // First stage: a plain launch, so it never overlaps the previous call's readers of the workspace.
  if (pairs) {
    launch_stage(block_inverse_kernel<kInput, 2>, grid, dim3(2 * kC), 0, stream, false, params);
  } else {
    launch_stage(block_inverse_kernel<kInput, 1>, grid, dim3(kC), 0, stream, false, params);
  }
}

}  // namespace fastinfer::gdn::detail::cp

namespace fastinfer::gdn::detail {
template <CpInputType kInput>
void launch_cp_block_inverse(const CpStageParams& params, cudaStream_t stream) {
  cp::launch_cp_block_inverse<kInput>(params, stream);
}
}  // namespace fastinfer::gdn::detail
