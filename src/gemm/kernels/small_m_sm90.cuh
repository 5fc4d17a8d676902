#pragma once
// Small-M mm_bf16_fp4 kernel (weight streaming): each warp streams R 16-row weight tiles over its
// K slice with 16-byte loads, decodes e2m1 x e4m3 to bf16 in registers (small_m_decode.cuh) and
// runs mma.m16n8k16 with the weight as the A operand (rows = N) and up to 8T tokens as B.
// Split-K: W warps of a CTA and C CTAs of a cluster take consecutive K slices; partial sums meet
// in shared memory (warps, fixed order) and then distributed shared memory (cluster ranks, fixed
// order), so two runs give identical bits. No global scratch, no atomics.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm/kernels/small_m_decode.cuh"
#include "gemm/small_m_params.h"

namespace fastinfer::gemm::detail {

namespace cg = cooperative_groups;

// Streaming 16-byte weight load: read once, keep it out of L1 (activations live there).
__device__ __forceinline__ uint4 load_stream16(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ uint2 load_stream8(const uint2* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                               std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int R, int T, int W>
struct SmallMKernel {
  static constexpr int kThreads = W * 32;
  static constexpr int kRows = R * kTileRows;   // output rows (N) per CTA
  static constexpr int kTokens = T * 8;         // output columns (M) per CTA
  // k64 chunks loaded together per warp: bytes in flight vs registers held by activation fragments
  // (unmeasured; T > 2 keeps one chunk so 8T-token fragments fit).
  static constexpr int kChunksPerStep = T <= 2 ? 2 : 1;
  // Partial sums: [W][kRows][kTokens] fp32; warp 0's slice then holds the CTA's sum.
  static constexpr int kSmemBytes = W * kRows * kTokens * 4;
  static_assert(kSmemBytes <= 48 * 1024, "small-M reduction buffer must fit the default 48 KB (no opt-in)");
};

template <int R, int T, int W>
__global__ void __launch_bounds__(W * 32) small_m_kernel(SmallMParams p) {
  using K = SmallMKernel<R, T, W>;
  extern __shared__ float partial[];  // [W][kRows][kTokens]

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const unsigned cluster_size = cg::this_cluster().num_blocks();
  const unsigned cluster_rank = cg::this_cluster().block_rank();
  const int row_group = blockIdx.x / cluster_size;     // which kRows rows of N
  const int m0 = blockIdx.y * K::kTokens;
  const int split = cluster_rank * W + warp, splits = cluster_size * W;
  const int kc_begin = static_cast<int>(static_cast<long long>(p.kc_count) * split / splits);
  const int kc_end = static_cast<int>(static_cast<long long>(p.kc_count) * (split + 1) / splits);

  const uint4* tiles = static_cast<const uint4*>(p.w_tiles);
  const uint2* scales = static_cast<const uint2*>(p.w_scales);
  const int nt0 = row_group * R;

  // Activation rows this lane feeds as the B operand (token g of each 8-token tile).
  const __nv_bfloat16* a_rows[T];
  bool a_valid[T];
#pragma unroll
  for (int tt = 0; tt < T; ++tt) {
    const int m = m0 + tt * 8 + g;
    a_valid[tt] = m < p.m;
    a_rows[tt] = static_cast<const __nv_bfloat16*>(p.a) + static_cast<long long>(a_valid[tt] ? m : 0) * p.lda;
  }

  float acc[R][T][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][tt][i] = 0.0f;

  // The weights are constant inputs: with PDL the first loads go out before waiting for the
  // producer of `a`.
  bool waited = false;
  for (int kc = kc_begin; kc < kc_end; kc += K::kChunksPerStep) {
    uint4 wv[R][K::kChunksPerStep];
    uint2 sv[R][K::kChunksPerStep];
#pragma unroll
    for (int u = 0; u < K::kChunksPerStep; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const long long tile = static_cast<long long>(nt0 + r) * p.kc_count + kc + u;
        if (kc + u < kc_end) {
          wv[r][u] = load_stream16(tiles + tile * 32 + lane);
          sv[r][u] = load_stream8(scales + tile * 8 + g);
        } else {
          wv[r][u] = make_uint4(0, 0, 0, 0);
          sv[r][u] = make_uint2(0, 0);
        }
      }
    if (!waited) {
      asm volatile("griddepcontrol.wait;" ::: "memory");
      waited = true;
    }
    // Activation fragments of the whole step: token g, k = chunk*64 + 16j + 4t .. +3.
    uint2 bv[T][K::kChunksPerStep][4];
#pragma unroll
    for (int u = 0; u < K::kChunksPerStep; ++u)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int k = (kc + u) * kChunkK + 16 * j + 4 * t;
        const bool k_ok = (kc + u < kc_end) && k < p.k;
#pragma unroll
        for (int tt = 0; tt < T; ++tt)
          bv[tt][u][j] = (k_ok && a_valid[tt]) ? __ldg(reinterpret_cast<const uint2*>(a_rows[tt] + k)) : make_uint2(0, 0);
      }
#pragma unroll
    for (int u = 0; u < K::kChunksPerStep; ++u)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const std::uint32_t sword = j < 2 ? sv[r][u].x : sv[r][u].y;
          const std::uint32_t s_g = scale_pair(sword, (2 * j) % 4), s_g8 = scale_pair(sword, (2 * j + 1) % 4);
          const std::uint32_t word = j == 0 ? wv[r][u].x : j == 1 ? wv[r][u].y : j == 2 ? wv[r][u].z : wv[r][u].w;
          std::uint32_t afrag[4];
          decode_word(word, s_g, s_g8, afrag);
#pragma unroll
          for (int tt = 0; tt < T; ++tt) mma_bf16_16816(acc[r][tt], afrag, bv[tt][u][j].x, bv[tt][u][j].y);
        }
  }
  if (!waited) asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");

  // Warp partials -> shared memory. C fragment: c0,c1 = (row g, tokens 2t, 2t+1), c2,c3 = row g+8.
  float* mine = partial + warp * K::kRows * K::kTokens;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt) {
      const int row = r * kTileRows + g, col = tt * 8 + 2 * t;
      *reinterpret_cast<float2*>(mine + row * K::kTokens + col) = make_float2(acc[r][tt][0], acc[r][tt][1]);
      *reinterpret_cast<float2*>(mine + (row + 8) * K::kTokens + col) = make_float2(acc[r][tt][2], acc[r][tt][3]);
    }
  __syncthreads();
  constexpr int kElems = K::kRows * K::kTokens;
  for (int e = threadIdx.x; e < kElems; e += K::kThreads) {
    float s = partial[e];
#pragma unroll
    for (int w = 1; w < W; ++w) s += partial[w * kElems + e];
    partial[e] = s;
  }

  // Cluster ranks: rank r finishes elements e with e % C == r, summing ranks in order 0..C-1.
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int n0 = row_group * K::kRows;
  for (int e = threadIdx.x * cluster_size + cluster_rank; e < kElems; e += K::kThreads * cluster_size) {
    // e enumerates (token col, row) with the row fastest so stores along N coalesce.
    const int col = e / K::kRows, row = e % K::kRows;
    const int n = n0 + row, m = m0 + col;
    float s = 0.0f;
    for (unsigned c = 0; c < cluster_size; ++c) s += cluster.map_shared_rank(partial, c)[row * K::kTokens + col];
    if (n < p.n && m < p.m) {
      const float v = s * p.alpha_scaled;
      const long long o = static_cast<long long>(m) * p.ldo + n;
      if (p.out_is_fp16) static_cast<__half*>(p.out)[o] = __float2half_rn(v);
      else static_cast<__nv_bfloat16*>(p.out)[o] = __float2bfloat16_rn(v);
    }
  }
  cluster.sync();  // peers may still read this CTA's shared memory
}

}  // namespace fastinfer::gemm::detail
