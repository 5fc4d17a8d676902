#pragma once
// CP stage 1: per 64-token block and state head, Tinv = (I + strict_lower(diag(beta) K K^T))^-1
// (gate-free; docs/GDN_CP.md), and/or the gated T_g the prefill kernel's consumers use, as a
// rounded pair hi + lo. Two warps per head: A0 = strict_lower(diag(beta) K K^T) on tensor cores,
// then the inverse blocked by 16: the four diagonal 16x16 inverses by forward substitution (one
// column per thread), the off-diagonal blocks as tensor-core products in 3xTF32 (fp32-accurate),
// then Tinv and T_g stored as 16-byte row segments.
#include "gdn/cp_launch.h"
#include "gdn/kernels/cp_common_sm90.cuh"
#include "runtime/once_per_device.h"

namespace fastinfer::gdn::detail::cp {

inline constexpr int kRowPad = 8;  // bf16 row padding: rows 272 B apart keep MMA fragment loads conflict-free
// One fp32 [64][68] tile per head: A0 below the diagonal, overwritten block by block by Tinv as the
// solve finishes with each A0 block. A pitch of 4 mod 32 banks keeps every fragment load and
// store of the solve conflict-free.
inline constexpr int kTilePitch = kC + 4;
using SolveTile = float[kC][kTilePitch];

// Round-to-nearest tf32 part of x and the fp32 remainder (the MMA reads its top 19 bits): the
// pair carries ~22 bits of x, so three products (big big, big small, small big) give fp32
// accuracy (3xTF32).
__device__ __forceinline__ void split_tf32(float x, std::uint32_t& big, std::uint32_t& small) {
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(big) : "f"(x));
  small = __float_as_uint(x - __uint_as_float(big));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The solve runs in the transposed domain (U = Tinv^T, upper triangular), where each product's
// result is the A operand of the next. The m16n8k8 operands of one k8 step take its k order
// permuted (logical k = t and t + 4 are the actual columns 2t and 2t + 1 of the step, the same for
// A and B, so the product is unchanged): then an m16n8 accumulator tile is, as it stands, the A
// operand of the next product's k8 step. Operands are read from the tile, which holds Tinv (not
// U) and A0: every load is one float2 or two floats on 32 distinct banks.
struct SplitA {
  std::uint32_t big[4], small[4];
  // From the accumulator tile c (rows g, g + 8; columns 2t, 2t + 1), times `sign`.
  __device__ __forceinline__ void from_tile(const float (&c)[4], float sign) {
    split_tf32(sign * c[0], big[0], small[0]);
    split_tf32(sign * c[2], big[1], small[1]);
    split_tf32(sign * c[1], big[2], small[2]);
    split_tf32(sign * c[3], big[3], small[3]);
  }
  // A[m][k] = m[k][m] (rows r0 + g, r0 + g + 8 of A; columns k0 + 2t, k0 + 2t + 1).
  __device__ __forceinline__ void load_transposed(const SolveTile& m, int r0, int k0, int g, int t) {
    from_tile({m[k0 + 2 * t][r0 + g], m[k0 + 2 * t + 1][r0 + g], m[k0 + 2 * t][r0 + g + 8], m[k0 + 2 * t + 1][r0 + g + 8]},
              1.f);
  }
};

struct SplitB {
  std::uint32_t big[2], small[2];
  // B[k][n] = m[n][k] (k rows k0 + 2t, k0 + 2t + 1; n column n0 + g).
  __device__ __forceinline__ void load_transposed(const SolveTile& m, int k0, int n0, int g, int t) {
    const float2 v = *reinterpret_cast<const float2*>(&m[n0 + g][k0 + 2 * t]);
    split_tf32(v.x, big[0], small[0]);
    split_tf32(v.y, big[1], small[1]);
  }
};

// d += a b in 3xTF32, the small terms first.
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const SplitA& a, const SplitB& b) {
  mma_tf32(d, a.small, b.big[0], b.big[1]);
  mma_tf32(d, a.big, b.small[0], b.small[1]);
  mma_tf32(d, a.big, b.big[0], b.big[1]);
}

// Accumulator tiles [nt] of U rows r0.., columns c0 + 8 nt.. stored as Tinv: m[c][r] = U[r][c].
template <int kTiles>
__device__ __forceinline__ void store_tiles_transposed(SolveTile& m, const float (&acc)[kTiles][4], int r0, int c0,
                                                       int g, int t) {
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    const int c = c0 + 8 * nt + 2 * t;
    m[c][r0 + g] = acc[nt][0];
    m[c + 1][r0 + g] = acc[nt][1];
    m[c][r0 + g + 8] = acc[nt][2];
    m[c + 1][r0 + g + 8] = acc[nt][3];
  }
}

// Phase 1 (lanes of one warp per pair of diagonal blocks): column c of (I + A0_bb)^-1 by forward
// substitution in registers, written over A0_bb (which only this warp reads), zeros above the
// diagonal included, so the block is a clean triangular operand.
__device__ __forceinline__ void invert_diagonal_block(SolveTile& m, int b, int c) {
  const int base = 16 * b;
  float x[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) x[i] = i == c ? 1.f : 0.f;
#pragma unroll
  for (int j = 0; j < 15; ++j)
#pragma unroll
    for (int i = j + 1; i < 16; ++i) x[i] = fmaf(-m[base + i][base + j], x[j], x[i]);
  __syncwarp();
#pragma unroll
  for (int i = 0; i < 16; ++i) m[base + i][base + c] = x[i];
}

// U_qq[k][n] (and U_hi's) is zero where the k8 step lies below the n8 tile (s > nt).
__device__ __forceinline__ bool upper_tile(int s, int nt) { return s <= nt; }

// Phase 2 (one warp): the 16x16 block below a diagonal pair, Tinv_qp = -Tinv_qq A0_qp Tinv_pp
// (q = p + 1), as U_pq = -(U_pp A0_qp^T) U_qq, written over A0_qp (which only this warp reads).
__device__ __forceinline__ void invert_block_pair(SolveTile& m, int p, int g, int t) {
  const int rp = 16 * p, rq = rp + 16;
  float y[2][4] = {};
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    SplitA a;
    a.load_transposed(m, rp, rp + 8 * s, g, t);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      SplitB b;
      b.load_transposed(m, rp + 8 * s, rq + 8 * nt, g, t);
      mma_3xtf32(y[nt], a, b);
    }
  }
  float z[2][4] = {};
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    SplitA a;
    a.from_tile(y[s], -1.f);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      if (!upper_tile(s, nt)) continue;
      SplitB b;
      b.load_transposed(m, rq + 8 * s, rq + 8 * nt, g, t);
      mma_3xtf32(z[nt], a, b);
    }
  }
  __syncwarp();
  store_tiles_transposed(m, z, rp, rq, g, t);
}

// Phase 3 (warp w of the head): columns 16 w.. of the 32x32 block below the two diagonal halves,
// Tinv[32:64][0:32] = -Tinv_hi A0[32:64][0:32] Tinv_lo, as rows 16 w.. of U[0:32][32:64] =
// -(U_lo A0[32:64][0:32]^T) U_hi, written over that A0 block once both warps have read it
// (a CTA barrier: call from every thread). U_lo's row block 1 is zero left of column 16.
__device__ __forceinline__ void invert_lower_half(SolveTile& m, int w, int g, int t) {
  float y[4][4] = {};
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    if (s < 2 * w) continue;
    SplitA a;
    a.load_transposed(m, 16 * w, 8 * s, g, t);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      SplitB b;
      b.load_transposed(m, 8 * s, 32 + 8 * nt, g, t);
      mma_3xtf32(y[nt], a, b);
    }
  }
  float z[4][4] = {};
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    SplitA a;
    a.from_tile(y[s], -1.f);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      if (!upper_tile(s, nt)) continue;
      SplitB b;
      b.load_transposed(m, 32 + 8 * s, 32 + 8 * nt, g, t);
      mma_3xtf32(z[nt], a, b);
    }
  }
  __syncthreads();
  store_tiles_transposed(m, z, 16 * w, 32, g, t);
}

inline constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Tinv, complete in the tile, into block_inverse and/or block_t_gated (the 16x16 blocks on or below
// the diagonal: stage 2 and the prefill kernel read only them) as 8-column groups (16-byte
// vectors): the 320 groups of those blocks, row by row, five per thread of the head, so a warp's
// stores cover whole row segments (block row R has 2 R + 2 groups per row, 16 (R + 1) R groups
// before it; every boundary is a multiple of 32, so each warp's iteration lies in one block row).
// CpStageParams::block_map_tiles, 8-column group (i, c0) of the three T tiles of stage 2's wgmma
// kernel: T = Tinv diag(beta) in fp16 and T diag(exp(gL - G)) as hi + lo in the input type, the
// same fp32 operations in the same order as that kernel's T build (cp_chunk_maps_sm90.cuh), so
// its maps come out bit-identical; at core-matrix row (i / 8) * 64 + (c0 / 8) * 8 + i % 8.
// ratio[c] = exp(gL - G_c), one __expf per column (the value stage 2 computed per column).
template <class In>
__device__ __forceinline__ void store_map_tiles(void* tiles, const float (&x)[8], const float* ratio, const float* beta,
                                                int i, int c0) {
  using E = typename In::T;
  using Op = Input<CpInputType::kFloat16>;
  const float4 r0 = *reinterpret_cast<const float4*>(ratio + c0), r1 = *reinterpret_cast<const float4*>(ratio + c0 + 4);
  const float4 b0 = *reinterpret_cast<const float4*>(beta + c0), b1 = *reinterpret_cast<const float4*>(beta + c0 + 4);
  const float r_c[8] = {r0.x, r0.y, r0.z, r0.w, r1.x, r1.y, r1.z, r1.w};
  const float b_c[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
  std::uint32_t tk[4], th[4], tl[4];
#pragma unroll
  for (int e = 0; e < 8; e += 2) {
    float t_beta[2], t_gated[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      t_beta[u] = x[e + u] * b_c[e + u];
      t_gated[u] = t_beta[u] * r_c[e + u];
    }
    tk[e / 2] = Op::pack(t_beta[0], t_beta[1]);
    th[e / 2] = In::pack(t_gated[0], t_gated[1]);
    const E* rounded = reinterpret_cast<const E*>(&th[e / 2]);
    tl[e / 2] = In::pack(t_gated[0] - In::to_float(rounded[0]), t_gated[1] - In::to_float(rounded[1]));
  }
  uint4* const out = static_cast<uint4*>(tiles);
  const int q = (i / 8) * 64 + (c0 / 8) * 8 + i % 8;
  out[q] = make_uint4(tk[0], tk[1], tk[2], tk[3]);
  out[512 + q] = make_uint4(th[0], th[1], th[2], th[3]);
  out[1024 + q] = make_uint4(tl[0], tl[1], tl[2], tl[3]);
}

// CpStageParams::block_k_tiles: the block's K rows as normalised and rounded to the input type
// (k_rows), in fp16 (exact: stage 2 rounds the same way), core-matrix order.
template <class In, class Rows>
__device__ __forceinline__ void store_k_tile(uint4* out, const Rows& k_rows, int thread, int threads) {
  for (int q = thread; q < kC * kD / 8; q += threads) {
    const int r = (q / 128) * 8 + q % 8, c = ((q / 8) % 16) * 8;
    const uint4 raw = *reinterpret_cast<const uint4*>(&k_rows[r][c]);
    const typename In::T* e = reinterpret_cast<const typename In::T*>(&raw);
    std::uint32_t h[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) h[j] = Input<CpInputType::kFloat16>::pack(In::to_float(e[2 * j]), In::to_float(e[2 * j + 1]));
    out[q] = make_uint4(h[0], h[1], h[2], h[3]);
  }
}

template <class In>
__device__ __forceinline__ void store_blocks(const CpStageParams& p, const SolveTile& m, const float* gates,
                                             const float* beta, const float* ratio, std::int64_t row, int thread,
                                             bool store_inverse, bool store_tiles) {
  using E = typename In::T;
  E* const hi = static_cast<E*>(p.block_t_gated) + row * 2 * kC * kC;
  E* const lo = hi + kC * kC;
  float* const out = p.block_inverse + row * kC * kC;
#pragma unroll
  for (int k = 0; k < 5; ++k) {
    const int f = 64 * k + thread;
    const int R = f < 32 ? 0 : f < 96 ? 1 : f < 192 ? 2 : 3;
    const int local = f - 16 * R * (R + 1), per_row = 2 * R + 2;
    const int i = 16 * R + local / per_row, c0 = 8 * (local % per_row);
    const float4 x0 = *reinterpret_cast<const float4*>(&m[i][c0]);
    const float4 x1 = *reinterpret_cast<const float4*>(&m[i][c0 + 4]);
    const float x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
    if (store_inverse) {
      *reinterpret_cast<float4*>(out + i * kC + c0) = x0;
      *reinterpret_cast<float4*>(out + i * kC + c0 + 4) = x1;
    }
    if (store_tiles) store_map_tiles<In>(static_cast<uint4*>(p.block_map_tiles) + row * 3 * 512, x, ratio, beta, i, c0);
    if (p.block_t_gated != nullptr) {
      // T_g[i][c] = Tinv[i][c] beta_c e^{G_i - G_c} (i >= c, else 0), rounded hi + lo: what the
      // prefill kernel's consumers read (prefill_fast_t_gated.cuh computes the same per chunk).
      // Branch-free (above the diagonal the exponential may overflow: selected away), the
      // exponential by ex2.approx.ftz (results below 2^-126 flush to zero).
      const float g_i = gates[i];
      const float4 gc0 = *reinterpret_cast<const float4*>(gates + c0), gc1 = *reinterpret_cast<const float4*>(gates + c0 + 4);
      const float4 bc0 = *reinterpret_cast<const float4*>(beta + c0), bc1 = *reinterpret_cast<const float4*>(beta + c0 + 4);
      const float g_c[8] = {gc0.x, gc0.y, gc0.z, gc0.w, gc1.x, gc1.y, gc1.z, gc1.w};
      const float b_c[8] = {bc0.x, bc0.y, bc0.z, bc0.w, bc1.x, bc1.y, bc1.z, bc1.w};
      std::uint32_t h[4], l[4];
#pragma unroll
      for (int e = 0; e < 8; e += 2) {
        float v[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const float gated = x[e + u] * b_c[e + u] * exp2_ftz((g_i - g_c[e + u]) * kLog2e);
          v[u] = i >= c0 + e + u ? gated : 0.f;
        }
        h[e / 2] = In::pack(v[0], v[1]);
        const E* rounded = reinterpret_cast<const E*>(&h[e / 2]);
        l[e / 2] = In::pack(v[0] - In::to_float(rounded[0]), v[1] - In::to_float(rounded[1]));
      }
      *reinterpret_cast<uint4*>(hi + i * kC + c0) = make_uint4(h[0], h[1], h[2], h[3]);
      *reinterpret_cast<uint4*>(lo + i * kC + c0) = make_uint4(l[0], l[1], l[2], l[3]);
    }
  }
  // Without lower_inverse_blocks (benchmarks only) the blocks above the diagonal too, zeros.
  if (store_inverse && !p.lower_inverse_blocks) {
    for (int f = thread; f < kC * kC / 8; f += 2 * 32) {
      const int i = f / 8, c0 = 8 * (f % 8);
      if (c0 / 16 > i / 16) {
        *reinterpret_cast<float4*>(out + i * kC + c0) = make_float4(0.f, 0.f, 0.f, 0.f);
        *reinterpret_cast<float4*>(out + i * kC + c0 + 4) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  }
}

// kHeads state heads per CTA (64 threads each) that read the same k head (GVA with Hsab a
// multiple of kHeads Hk): K is loaded, normalised and multiplied once for all, A0 = diag(beta_h)
// K K^T per head. Resident per SM: 10 one-head CTAs (96 registers: their K K^T holds 64
// accumulators), 6 two-head ones (35.8 KB of shared memory, 80 registers; the column solve this
// replaced ran 5 at 96), 3 four-head ones (70 KB). Four heads rather than two pairs where Hsab is
// a multiple of 4 Hk: H200 (pst1 batch 2) 16/64 64x1k 0.780 -> 0.769 ms, CP 1x64k 0.924 -> 0.833.
template <int kHeads>
inline constexpr int kBlocksPerSm = kHeads == 4 ? 3 : kHeads == 2 ? 6 : 10;
template <CpInputType kInput>
inline constexpr int kTileBytes = sizeof(typename Input<kInput>::T) * kC * (kD + kRowPad);

template <CpInputType kInput, int kHeads>
__global__ void __launch_bounds__(kC * kHeads, kBlocksPerSm<kHeads>) block_inverse_kernel(const CpStageParams p) {
  using In = Input<kInput>;
  using E = typename In::T;
  static_assert(sizeof(SolveTile) <= kTileBytes<kInput>);
  // kHeads tiles of dynamic shared memory: K rows in tile 0, then the solve tile of head r in
  // tile r once every warp has read K.
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  const auto tile = [&](int h) { return dynamic_smem + h * kTileBytes<kInput>; };
  auto& k_rows = *reinterpret_cast<E(*)[kC][kD + kRowPad]>(tile(0));
  __shared__ alignas(16) float gates[kHeads][kC], beta[kHeads][kC];
  __shared__ alignas(16) float ratio[kHeads][kC];  // exp(gL - G_c) for stage 2's ready tiles

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
  k_fetch.store4(p.use_qk_l2norm, warp, lane, [&](int row, int col, const float (&x)[4]) {
    *reinterpret_cast<uint2*>(&k_rows[row][col]) = make_uint2(In::pack(x[0], x[1]), In::pack(x[2], x[3]));
  });
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
  // Stage 2 maps no block of a sequence's last chunk when it skips that chunk's map
  // (CpStageParams::skip_last_chunk_inverse; CTA-uniform).
  const bool mapped =
      !(p.skip_last_chunk_inverse && bos + (static_cast<std::int64_t>(block) * kC / p.chunk_len + 1) * p.chunk_len >= eos);
  // Stage 2's K tile, once per k head (the CTA of its first state head).
  if (p.block_k_tiles != nullptr && mapped) {
    const int hk = head0 * p.num_k_heads / p.num_state_heads;
    if (head0 == (hk * p.num_state_heads + p.num_k_heads - 1) / p.num_k_heads)
      store_k_tile<In>(static_cast<uint4*>(p.block_k_tiles) +
                           ((static_cast<std::int64_t>(n) * p.blocks_per_seq + block) * p.num_k_heads + hk) * (kC * kD / 8),
                       k_rows, threadIdx.x, kC * kHeads);
  }
  __syncthreads();

  // K K^T on every warp, the row tiles i and their column tiles j < i split between them: with
  // two or four warps (one or two heads), warp w takes row tiles w kMTiles .. (w + 1) kMTiles - 1
  // whole; with eight, row tile w / 2 and half of its column tiles. (Warps 0-1 taking 32 rows
  // while warps 2-3 waited at the barrier cost 1.27 stall cycles per issued instruction: ncu,
  // session 4 batch 5.)
  constexpr int kMmaWarps = 2 * kHeads, kMTiles = kMmaWarps <= 4 ? 4 / kMmaWarps : 1;
  int r0 = warp * 16 * kMTiles, n_first = 0, n_last = 2 * kMTiles * (warp + 1);
  if constexpr (kMmaWarps == 8) {
    const int half = warp / 2 + 1;  // half of the 2 (warp / 2 + 1) column tiles left of row tile warp / 2
    r0 = 16 * (warp / 2);
    n_first = (warp % 2) * half;
    n_last = n_first + half;
  }
  const auto computes = [&](int nt) { return nt >= n_first && nt < n_last; };
  float acc[kMTiles][8][4] = {};
  // Rows at or past len are zero rows of K: a warp whose rows all lie there keeps zero accumulators.
  if (r0 < len) {
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      // Fragments by ldmatrix (rows 272 B apart: conflict-free), a quarter of the shared loads
      // of per-pair loads.
      std::uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        const E* a_row = &k_rows[r0 + mt * 16 + lane % 16][ks * 16 + (lane / 16) * 8];
        cute::SM75_U32x4_LDSM_N::copy(*reinterpret_cast<const cute::uint128_t*>(a_row), a[mt][0], a[mt][1], a[mt][2],
                                      a[mt][3]);
      }
#pragma unroll
      for (int nt = 0; nt < 8; nt += 2) {
        if (computes(nt) || computes(nt + 1)) {
          std::uint32_t b[4];
          load_b_pair(&k_rows[nt * 8][ks * 16], kD + kRowPad, lane, b);
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
            if (computes(nt)) In::mma(acc[mt][nt], a[mt], b[0], b[1]);
            if (computes(nt + 1)) In::mma(acc[mt][nt + 1], a[mt], b[2], b[3]);
          }
        }
      }
    }
  }
  // Stage 2's ready tiles: exp(gL - G_c) per column (gates final since the barrier above; read by
  // store_blocks after the solve's barriers).
  if (p.block_map_tiles != nullptr && mapped) ratio[r][tok] = __expf(gates[r][kC - 1] - gates[r][tok]);
  __syncthreads();  // K read: A0 overwrites it
  // A0[i][j] = beta_i (K K^T)[i][j] below the diagonal (the solve reads nothing above it).
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    auto& a0 = *reinterpret_cast<SolveTile*>(tile(h));
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
        if (computes(nt)) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int i = r0 + mt * 16 + g + (e / 2) * 8, j = nt * 8 + 2 * t + (e % 2);
            if (j < i) a0[i][j] = beta[h][i] * acc[mt][nt][e];
          }
        }
  }
  __syncthreads();

  // The inverse, blocked by 16 (Tinv of a block diagonal pair is [[T_pp, 0], [-T_qq A0_qp T_pp,
  // T_qq]], and likewise for the two halves), on this head's two warps: diagonal blocks 2 w and
  // 2 w + 1, the block between them, then columns 16 w.. of the lower-left 32x32 block.
  auto& m = *reinterpret_cast<SolveTile*>(tile(r));
  const int head_warp = warp % 2;
  invert_diagonal_block(m, tok / 16, tok % 16);
  __syncwarp();
  invert_block_pair(m, 2 * head_warp, g, t);
  __syncthreads();
  // Blocks of <= 32 tokens (CTA-uniform): rows 32-63 of A0 are zero, and so is Tinv's lower-left
  // block, which A0's zeros already fill.
  if (len > kC / 2) invert_lower_half(m, head_warp, g, t);
  __syncthreads();

  const std::int64_t row = (static_cast<std::int64_t>(n) * p.blocks_per_seq + block) * p.num_state_heads + head0 + r;
  // Stage 2 reads no Tinv of a sequence's last chunk when it skips that chunk's map
  // (CpStageParams::skip_last_chunk_inverse): 1/4 of the fp32 stores at 1x128k 16/32, 1/2 at 16/64
  // 1x64k (CTA-uniform).
  const bool store_inverse = p.block_inverse != nullptr && mapped;
  const bool store_tiles = p.block_map_tiles != nullptr && mapped;
  if (store_tiles && tok == 0) p.block_gate_last[row] = gates[r][kC - 1];
  store_blocks<In>(p, m, gates[r], beta[r], ratio[r], row, tok, store_inverse, store_tiles);
}

template <CpInputType kInput, int kHeads>
void launch_block_inverse_heads(const CpStageParams& params, cudaStream_t stream) {
  constexpr std::size_t smem = kHeads * kTileBytes<kInput>;
  if constexpr (smem > 48 * 1024) {
    // Above the default 48 KB of dynamic shared memory: opt in once per device, not per call.
    static OncePerDevice once;
    int device = 0;
    FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
    once(device, [] {
      FASTINFER_CUDA_CHECK(
          cudaFuncSetAttribute(block_inverse_kernel<kInput, kHeads>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    });
  }
  const dim3 grid(params.blocks_per_seq, params.num_state_heads / kHeads, params.num_seqs);
  // First stage: a plain launch, so it never overlaps the previous call's readers of the workspace.
  launch_stage(block_inverse_kernel<kInput, kHeads>, grid, dim3(kC * kHeads), smem, stream, false, params);
}

template <CpInputType kInput>
void launch_cp_block_inverse(const CpStageParams& params, cudaStream_t stream) {
  // Groups of four or two state heads share their k head when Hsab is a multiple of 4 Hk or 2 Hk.
  if (params.num_state_heads % (4 * params.num_k_heads) == 0) {
    launch_block_inverse_heads<kInput, 4>(params, stream);
  } else if (params.num_state_heads % (2 * params.num_k_heads) == 0) {
    launch_block_inverse_heads<kInput, 2>(params, stream);
  } else {
    launch_block_inverse_heads<kInput, 1>(params, stream);
  }
}

}  // namespace fastinfer::gdn::detail::cp

namespace fastinfer::gdn::detail {
template <CpInputType kInput>
void launch_cp_block_inverse(const CpStageParams& params, cudaStream_t stream) {
  cp::launch_cp_block_inverse<kInput>(params, stream);
}
}  // namespace fastinfer::gdn::detail
