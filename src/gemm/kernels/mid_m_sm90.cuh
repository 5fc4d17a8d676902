#pragma once
// Mid-M mm_bf16_fp4 kernel (M ~ 32 .. 1024): NVFP4 decode fused into wgmma, the bf16 weight is
// never materialised. Swap-AB: the weight is wgmma's A operand, decoded in registers straight
// from the small-M tile layout (a warp's 16-row x k64 tile is exactly its four m64nNk16 A
// fragments, with the k permutation described in small_m_params.h), and TN tokens of activations
// are the B operand in shared memory (canonical K-major layout without swizzle; the copy applies
// the same k permutation, so the sum is unchanged).
// CTA: 2 warpgroups = 128 rows of N (one 16-row tile per warp) x TN tokens; a cluster of C CTAs
// splits K and reduces through distributed shared memory in rank order (deterministic).
// Pipeline: a ring of k64 stages filled with cp.async by all threads; each warp decodes its tile of
// stage i while the wgmmas of stage i - 1 run (A fragments double-buffered).
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cute/arch/mma_sm90_gmma.hpp>
#include <type_traits>
#include <utility>

#include "gemm/kernels/small_m_decode.cuh"
#include "gemm/kernels/small_m_sm90.cuh"
#include "gemm/mid_m_params.h"

namespace fastinfer::gemm::detail {

template <int TN>
struct MidMWgmma;
template <>
struct MidMWgmma<64> {
  using Op = cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct MidMWgmma<128> {
  using Op = cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};

template <class Op, int... I>
__device__ __forceinline__ void wgmma_rs(const std::uint32_t (&a)[4], std::uint64_t desc, float (&d)[sizeof...(I)],
                                         std::integer_sequence<int, I...>) {
  Op::fma(a[0], a[1], a[2], a[3], desc, d[I]..., cute::SM90::GMMA::ScaleOut::One);
}

// Shared-memory matrix descriptor, K-major, no swizzle: core matrices of 8 rows x 16 bytes
// (128 contiguous bytes); `lbo` = bytes between the two core matrices of a k16 step, `sbo` =
// bytes between 8-row groups.
__device__ __forceinline__ std::uint64_t kmajor_desc(const void* smem, std::uint32_t lbo, std::uint32_t sbo) {
  const std::uint32_t addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  return static_cast<std::uint64_t>((addr >> 4) & 0x3FFF) | (static_cast<std::uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3FFF) << 32);
}

// 4-byte asynchronous copy; src_bytes = 0 writes zeros (k beyond K).
__device__ __forceinline__ void cp_async4(void* smem_dst, const void* src, int src_bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

template <int TN>
__global__ void __launch_bounds__(kMidMWarps * 32, 2) mid_m_kernel(SmallMParams p) {
  constexpr int S = mid_m_stages(TN);
  constexpr int kStage = mid_m_stage_bytes(TN);
  constexpr int kAct = mid_m_act_bytes(TN);
  constexpr int kPitch = mid_m_partial_pitch(TN);
  using Op = typename MidMWgmma<TN>::Op;
  extern __shared__ __align__(128) unsigned char smem[];

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned cluster_size = cluster.num_blocks();
  const unsigned cluster_rank = cluster.block_rank();
  // Grid (token groups, row groups x C), clusters along y: the token groups of one row group are
  // adjacent in launch order, so the weight tiles they share are re-read from L2, not DRAM.
  const int row_group = blockIdx.y / cluster_size;
  const int m0 = blockIdx.x * TN;
  const int kc_begin = static_cast<int>(static_cast<long long>(p.kc_count) * cluster_rank / cluster_size);
  const int kc_end = static_cast<int>(static_cast<long long>(p.kc_count) * (cluster_rank + 1) / cluster_size);
  const int n_chunks = kc_end - kc_begin;
  // Each CTA starts at a different chunk of its slice (fixed rotation: runs stay bitwise equal), so
  // CTAs do not sweep power-of-two strided addresses in lockstep (DRAM channel camping).
  const int rot = n_chunks > 0 ? static_cast<int>((row_group * 7u + blockIdx.x * 3u) % n_chunks) : 0;
  auto chunk_of = [&](int i) {
    int j = i + rot;
    if (j >= n_chunks) j -= n_chunks;
    return kc_begin + j;
  };
  const int row_tiles = (p.n + 63) / 64 * 4;  // tiles the repack wrote (N padded to 64 rows)
  const int tile_row = row_group * kMidMWarps + warp;
  const bool tile_ok = tile_row < row_tiles;

  const unsigned char* tiles = static_cast<const unsigned char*>(p.w_tiles);
  const unsigned char* scales = static_cast<const unsigned char*>(p.w_scales);
  const __nv_bfloat16* a = static_cast<const __nv_bfloat16*>(p.a);

  auto issue_weights = [&](int i) {
    if (!tile_ok) return;
    unsigned char* st = smem + (i % S) * kStage + kAct;
    const long long tile = small_m_tile_index(tile_row, chunk_of(i), p.kc_count);
    cp_async16(st + warp * 512 + lane * 16, tiles + tile * 512 + lane * 16);
    if (lane < 4) cp_async16(st + kMidMWarps * 512 + warp * 64 + lane * 16, scales + tile * 64 + lane * 16);
  };
  // Activation pair `lane` (k = chunk*64 + 2*lane, +1) of token n: the weight tiles give lane
  // quad t = lane / 8 the physical k 16t + 4j .. +3 in k16 step j, as logical slots (2t, 2t+1) and
  // (2t+8, 2t+9); so pair P goes to step (P % 8) / 2, core-matrix column P & 1, word P / 8.
  const int pair_k = 2 * lane;
  const int pair_off = ((lane % 8) >> 1) * (TN * 32) + (lane & 1) * 128 + (lane / 8) * 4;
  auto issue_acts = [&](int i) {
    unsigned char* act = smem + (i % S) * kStage;
    const int k = chunk_of(i) * kChunkK + pair_k;
    const int bytes = k < p.k ? 4 : 0;
#pragma unroll
    for (int s = 0; s < TN / 8; ++s) {
      const int m = m0 + 8 * s + warp;  // token 8s + warp: core-matrix row group s, row `warp`
      if (m < p.m)
        cp_async4(act + pair_off + s * 256 + warp * 16, a + static_cast<long long>(m) * p.lda + (bytes ? k : 0), bytes);
    }
  };

  float acc[TN / 2];
#pragma unroll
  for (int i = 0; i < TN / 2; ++i) acc[i] = 0.0f;
  std::uint32_t afrag[2][4][4];

  // Weights first (constant inputs, before the PDL wait), then the activations.
#pragma unroll
  for (int s = 0; s < S - 2; ++s)
    if (s < n_chunks) issue_weights(s);
  asm volatile("griddepcontrol.wait;" ::: "memory");
#pragma unroll
  for (int s = 0; s < S - 2; ++s) {
    if (s < n_chunks) issue_acts(s);
    cp_async_commit();
  }

  // Step i: stage i has landed; stage i - 1's wgmmas may still run (they hold afrag[(i - 1) & 1]);
  // stage i - 2's are retired, so its slot ((i + S - 2) % S) is refilled.
  auto step = [&](int i, auto buf_constant) {
    constexpr int b = decltype(buf_constant)::value;
    cp_async_wait<S - 3>();
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // cp.async data -> wgmma (async proxy)
    __syncthreads();
    if (i + S - 2 < n_chunks) {
      issue_weights(i + S - 2);
      issue_acts(i + S - 2);
    }
    cp_async_commit();
    const unsigned char* st = smem + (i % S) * kStage;
    uint4 wv = make_uint4(0, 0, 0, 0);
    std::uint32_t sv = 0;
    if (tile_ok) {
      wv = *reinterpret_cast<const uint4*>(st + kAct + warp * 512 + lane * 16);
      sv = *reinterpret_cast<const unsigned short*>(st + kAct + kMidMWarps * 512 + warp * 64 + lane * 2);
    }
    // The lane's two scales (rows g, g+8 of its k16 block) hold for all four k16 steps.
    const std::uint32_t s_g = scale_pair(sv, 0), s_g8 = scale_pair(sv, 1);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t word = j == 0 ? wv.x : j == 1 ? wv.y : j == 2 ? wv.z : wv.w;
      decode_word(word, s_g, s_g8, afrag[b][j]);
    }
#pragma unroll
    for (int e = 0; e < TN / 2; ++e) cute::warpgroup_fence_operand(acc[e]);
    cute::warpgroup_arrive();
#pragma unroll
    for (int j = 0; j < 4; ++j)
      wgmma_rs<Op>(afrag[b][j], kmajor_desc(st + j * (TN * 32), 128, 256), acc, std::make_integer_sequence<int, TN / 2>{});
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<1>();  // stage i - 1 retired: its A fragments and smem slot are free
#pragma unroll
    for (int e = 0; e < TN / 2; ++e) cute::warpgroup_fence_operand(acc[e]);
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) cute::warpgroup_fence_operand(afrag[b ^ 1][j][q]);
  };
  int i = 0;
  for (; i + 1 < n_chunks; i += 2) {
    step(i, std::integral_constant<int, 0>{});
    step(i + 1, std::integral_constant<int, 1>{});
  }
  if (i < n_chunks) step(i, std::integral_constant<int, 0>{});
  cute::warpgroup_wait<0>();
#pragma unroll
  for (int e = 0; e < TN / 2; ++e) cute::warpgroup_fence_operand(acc[e]);
  cp_async_wait<0>();
  asm volatile("griddepcontrol.launch_dependents;");
  __syncthreads();  // the ring is free: partial sums reuse it

  // Accumulator fragment: acc[4c + h] = row 16*warp + g + 8*(h / 2), token 8c + 2t + (h % 2).
  float* partial = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int c = 0; c < TN / 8; ++c) {
    const int row = warp * kTileRows + g, col = 8 * c + 2 * t;
    *reinterpret_cast<float2*>(partial + row * kPitch + col) = make_float2(acc[4 * c], acc[4 * c + 1]);
    *reinterpret_cast<float2*>(partial + (row + 8) * kPitch + col) = make_float2(acc[4 * c + 2], acc[4 * c + 3]);
  }
  cluster.sync();
  const int n0 = row_group * kMidMRows;
  constexpr int kElems = kMidMRows * TN;
  for (int e = threadIdx.x * cluster_size + cluster_rank; e < kElems; e += kMidMWarps * 32 * cluster_size) {
    const int col = e / kMidMRows, row = e % kMidMRows;  // row fastest: stores along N coalesce
    const int n = n0 + row, m = m0 + col;
    if (n < p.n && m < p.m) {
      float s = 0.0f;
      for (unsigned c = 0; c < cluster_size; ++c) s += cluster.map_shared_rank(partial, c)[row * kPitch + col];
      const float v = s * p.alpha_scaled;
      const long long o = static_cast<long long>(m) * p.ldo + n;
      if (p.out_is_fp16) static_cast<__half*>(p.out)[o] = __float2half_rn(v);
      else static_cast<__nv_bfloat16*>(p.out)[o] = __float2bfloat16_rn(v);
    }
  }
  cluster.sync();  // peers may still read this CTA's shared memory
}

}  // namespace fastinfer::gemm::detail
