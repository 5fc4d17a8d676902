#pragma once
// Small-M mm_bf16_fp4 kernel (weight streaming): each warp streams R 16-row weight tiles over its
// K slice through a cp.async ring in shared memory (several k64 chunks in flight), decodes e2m1 x e4m3 to bf16 in registers (small_m_decode.cuh) and
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

__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                               std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Asynchronous 16-byte global -> shared copy (L2 only); the source is read with a 256-byte L2
// prefetch because each warp streams its tiles' bytes contiguously.
__device__ __forceinline__ void cp_async16(unsigned smem_dst, const void* src) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(smem_dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* src) {
  cp_async16(static_cast<unsigned>(__cvta_generic_to_shared(smem_dst)), src);
}
// The same, writing zeros instead of reading when `valid` is false (nothing is read then).
__device__ __forceinline__ void cp_async16_zfill(unsigned smem_dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(smem_dst), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// One k64 chunk of a ring stage into the accumulators (the small-M and the persistent kernel):
// the lane's R 16-byte weight words and block scales, its activation fragments, then 4 k16 steps x
// R row tiles x T token tiles of mma. ScaleOffset / ActOffset: where the stage's scales and
// activations start.
template <int R, int T, int ScaleOffset, unsigned ActOffset>
__device__ __forceinline__ void mma_stage(const unsigned char* st, int lane, int g, int t, float (&acc)[R][T][4]) {
  uint4 wv[R];
  std::uint32_t s_g[R], s_g8[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    wv[r] = *reinterpret_cast<const uint4*>(st + r * 512 + lane * 16);
    // The lane's two scales (rows g, g+8 of its k16 block) hold for all four k16 steps.
    const std::uint32_t sv = *reinterpret_cast<const unsigned short*>(st + ScaleOffset + r * 64 + lane * 2);
    s_g[r] = scale_pair(sv, 0);
    s_g8[r] = scale_pair(sv, 1);
  }
  // Activation fragments: lane (g, t) owns k = chunk*64 + 16t .. 16t+15 of token g (the units it
  // copied itself): steps j = 0, 1 in unit 2t, steps 2, 3 in unit 2t+1 (zeros past M and K are in
  // shared memory already). 16-byte reads, XOR-swizzled by the row: conflict-free per quarter warp.
  const unsigned char* act = st + ActOffset;
  uint4 bq[T][2];
#pragma unroll
  for (int tt = 0; tt < T; ++tt)
#pragma unroll
    for (int c = 0; c < 2; ++c) bq[tt][c] = *reinterpret_cast<const uint4*>(act + (tt * 8 + g) * 128 + (((2 * t + c) ^ g) * 16));
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::uint32_t word = j == 0 ? wv[r].x : j == 1 ? wv[r].y : j == 2 ? wv[r].z : wv[r].w;
      std::uint32_t afrag[4];
      decode_word(word, s_g[r], s_g8[r], afrag);
#pragma unroll
      for (int tt = 0; tt < T; ++tt) {
        const uint4& b = bq[tt][j >> 1];
        mma_bf16_16816(acc[r][tt], afrag, (j & 1) ? b.z : b.x, (j & 1) ? b.w : b.y);
      }
    }
}

template <int R, int T, int W, bool Lean = false>
struct SmallMKernel {
  static constexpr int kThreads = W * 32;
  static constexpr int kRows = R * kTileRows;   // output rows (N) per CTA
  static constexpr int kTokens = T * 8;         // output columns (M) per CTA
  // Ring plan (small_m_params.h): kStages - 1 chunks in flight per warp while one is decoded.
  // Activation rows are stored as 16-byte units XOR-swizzled by the row (conflict-free reads).
  static constexpr int kWeightBytes = R * 512;
  static constexpr int kScaleBytes = R * 64;
  static constexpr int kStageBytes = small_m_stage_bytes(R, T);
  static constexpr int kStages = small_m_stages(R, T, W, Lean);
  static_assert(kStages >= 2, "small-M ring needs two stages");
  static constexpr int kSmemBytes = small_m_smem_bytes(R, T, W, Lean);
};

template <int R, int T, int W, bool Lean>
__global__ void __launch_bounds__(W * 32) small_m_kernel(SmallMParams p) {
  using K = SmallMKernel<R, T, W, Lean>;
  constexpr int S = K::kStages;
  extern __shared__ __align__(16) unsigned char smem[];
  float* partial = reinterpret_cast<float*>(smem);  // [W][kRows][kTokens], after the loop

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const unsigned cluster_size = cg::this_cluster().num_blocks();
  const unsigned cluster_rank = cg::this_cluster().block_rank();
  const int row_group = blockIdx.x / cluster_size;     // which kRows rows of N
  const int m0 = blockIdx.y * K::kTokens;
  const int split = cluster_rank * W + warp, splits = cluster_size * W;
  const int kc_begin = static_cast<int>(static_cast<long long>(p.kc_count) * split / splits);
  const int kc_end = static_cast<int>(static_cast<long long>(p.kc_count) * (split + 1) / splits);
  const int n_chunks = kc_end - kc_begin;

  const int nt0 = row_group * R;
  unsigned char* ring = smem + warp * S * K::kStageBytes;

  // Per-warp sources at chunk 0 of this warp's slice: the R tiles of a chunk are one contiguous
  // run (R * 512 code bytes, R * 64 scale bytes); chunk i adds i * kTileGroup tiles. The session-2
  // loop rebuilt every 64-bit address from the tile index (~200 of its 523 instructions per chunk).
  static_assert(kTileGroup % R == 0, "a warp's row tiles must share one tile group");
  const long long tile0 = small_m_tile_index(nt0, kc_begin, p.kc_count);
  const unsigned char* w_src = static_cast<const unsigned char*>(p.w_tiles) + tile0 * 512 + lane * 16;
  const bool copies_scales = lane < 4 * R;  // R * 64 scale bytes, 16 per lane
  const unsigned char* s_src = static_cast<const unsigned char*>(p.w_scales) + tile0 * 64 + (copies_scales ? lane : 0) * 16;
  // Activation rows: lane (g, t) copies 16-byte units 2t, 2t+1 of token row g of each 8-token tile.
  // Rows past M are zeroed once in every stage and never copied; units past K are zero-filled.
  const unsigned char* a_src[T];
  bool a_valid[T];
#pragma unroll
  for (int tt = 0; tt < T; ++tt) {
    const int m = m0 + tt * 8 + g;
    a_valid[tt] = m < p.m;
    a_src[tt] = reinterpret_cast<const unsigned char*>(static_cast<const __nv_bfloat16*>(p.a) +
                                                       static_cast<long long>(a_valid[tt] ? m : 0) * p.lda +
                                                       static_cast<long long>(kc_begin) * kChunkK + 16 * t);
  }
  const int k_left0 = p.k - kc_begin * kChunkK - 16 * t;  // elements of K from this lane's first unit
  const unsigned ring_s = static_cast<unsigned>(__cvta_generic_to_shared(ring));
  constexpr unsigned kActOffset = K::kWeightBytes + K::kScaleBytes;
#pragma unroll
  for (int tt = 0; tt < T; ++tt)
    if (!a_valid[tt])
#pragma unroll
      for (int s = 0; s < S; ++s)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<uint4*>(ring + s * K::kStageBytes + kActOffset + (tt * 8 + g) * 128 + (((2 * t + h) ^ g) * 16)) =
              make_uint4(0, 0, 0, 0);

  // Chunk i of this warp's slice into the stage at shared offset `st`.
  auto issue_weights = [&](int i, unsigned st) {
    const unsigned char* w = w_src + static_cast<unsigned>(i) * (kTileGroup * 512u);
#pragma unroll
    for (int r = 0; r < R; ++r) cp_async16(st + r * 512 + lane * 16, w + r * 512);
    if (copies_scales) cp_async16(st + K::kWeightBytes + lane * 16, s_src + static_cast<unsigned>(i) * (kTileGroup * 64u));
  };
  auto issue_acts = [&](int i, unsigned st) {
#pragma unroll
    for (int tt = 0; tt < T; ++tt)
      if (a_valid[tt])
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int u = 2 * t + h;
          cp_async16_zfill(st + kActOffset + (tt * 8 + g) * 128 + ((u ^ g) * 16),
                           a_src[tt] + static_cast<unsigned>(i) * 128u + h * 16, k_left0 - i * kChunkK - 8 * h > 0);
        }
  };

  float acc[R][T][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][tt][i] = 0.0f;

  // The weights are constant inputs: with PDL the first stages' weight copies go out before
  // waiting for the producer of `a`. Group s holds at least everything of stage s.
#pragma unroll
  for (int s = 0; s < S - 1; ++s)
    if (s < n_chunks) issue_weights(s, ring_s + s * K::kStageBytes);
  asm volatile("griddepcontrol.wait;" ::: "memory");
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < n_chunks) issue_acts(s, ring_s + s * K::kStageBytes);
    cp_async_commit();
  }

  // Stage offsets (bytes into this warp's ring) of the chunk read now and of the one issued now.
  unsigned read_off = 0, issue_off = (S - 1) * K::kStageBytes;
  constexpr unsigned kRingBytes = S * K::kStageBytes;
  for (int i = 0; i < n_chunks; ++i) {
    cp_async_wait<S - 2>();
    __syncwarp();  // stage i visible to the whole warp; stage i - 1 read by every lane
    if (i + S - 1 < n_chunks) {
      issue_weights(i + S - 1, ring_s + issue_off);
      issue_acts(i + S - 1, ring_s + issue_off);
    }
    cp_async_commit();
    issue_off = issue_off + K::kStageBytes == kRingBytes ? 0 : issue_off + K::kStageBytes;

    const unsigned char* st = ring + read_off;
    read_off = read_off + K::kStageBytes == kRingBytes ? 0 : read_off + K::kStageBytes;
    mma_stage<R, T, K::kWeightBytes, kActOffset>(st, lane, g, t, acc);
  }
  cp_async_wait<0>();
  asm volatile("griddepcontrol.launch_dependents;");
  __syncthreads();  // every warp is done with its ring: the partial sums reuse it

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
