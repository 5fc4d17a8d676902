#pragma once
// CP stage 2 on ready tiles (CpOptions::ready_tiles; docs/GDN_CP.md, session 8): the wgmma kernel
// of cp_chunk_maps_sm90.cuh without its per-block operand build. Stage 1 already holds every input
// of that build (the normalised K, Tinv, beta and the gates), so it writes the results: the T tiles
// (T = Tinv diag(beta) in fp16, T diag(exp(gL - G)) as hi + lo), the fp16 K tile and gL
// (CpStageParams::block_map_tiles, block_k_tiles, block_gate_last), in wgmma core-matrix order.
// Per 64-token block this kernel then only copies (cp.async, 16-byte pieces straight into the
// core-matrix tiles; V as before) and runs the two wgmma phases: no K load / normalisation, gate
// scan, Tinv staging or T build, and two CTA barriers instead of five. The arithmetic of the
// products and the composition is block_products_wgmma / compose_rows_wgmma unchanged, and the
// operands are the same bits, so the maps equal the wgmma kernel's bit for bit (GPU test
// ReadyTileChunkMapsGiveTheSameBits).
// kPrefetch: block b + 1's copies are issued after block b's products (the T and V tiles are free
// then; K alternates between two tiles, since the composition of block b still reads its K).
#include "gdn/kernels/cp_chunk_maps_wgmma_sm90.cuh"
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

inline constexpr int kReadyMapThreads = 512;  // four warpgroups of 64 rows of [M; B], as the wgmma kernel

template <class E>
struct ChunkMapsReadySmem {
  CoreTile<kD> k[2];    // K (fp16) of block b in k[b % 2] with prefetch, else k[0]
  CoreTile<kD> a;       // A = T K, fp16
  CoreTile<kD> v;       // V, E
  CoreTile<kC> t_k;     // T = Tinv diag(beta), fp16
  CoreTile<kC> t_v[2];  // T diag(exp(gL - G)), hi and lo, E
  alignas(16) float ud_t[kD][kC + 8];  // Ud transposed (block_products_wgmma)
};

// Whether 16-byte row q of a 64 x 64 tile in core-matrix order lies in a 16x16 block above the
// diagonal (never written by stage 1, zero in T).
__device__ inline bool upper_core_row(int q) {
  const int r = (q / 64) * 8 + q % 8, c = ((q / 8) % 8) * 8;
  return c / 16 > r / 16;
}
// Byte offset in a CoreTile of the 16-byte row q of the compact core-matrix order (one 16-byte pad
// per core matrix of 8 rows: CoreTile's 144-byte column blocks).
__device__ inline int core_row_offset(int q) { return (q + q / 8) * 16; }

template <CpInputType kInput, bool kPrefetch>
__global__ void __launch_bounds__(kReadyMapThreads, 1) chunk_maps_ready_kernel(const CpStageParams p) {
  constexpr int kThreads = kReadyMapThreads, kWarps = kThreads / 32;
  using In = Input<kInput>;
  using E = typename In::T;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto& s = *reinterpret_cast<ChunkMapsReadySmem<E>*>(smem_raw);

  const int piece = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  const int piece_len = p.chunk_len / p.map_splits, chunk = piece / p.map_splits;
  wait_for_previous_stage();
  const std::int64_t bos = seq_offset(p, n), eos = seq_offset(p, n + 1);
  const std::int64_t c0 = bos + static_cast<std::int64_t>(piece) * piece_len;
  if (c0 >= eos) return;
  const bool last = bos + static_cast<std::int64_t>(chunk + 1) * p.chunk_len >= eos;
  if (last && p.final_states == nullptr) return;  // only the final state needs the last chunk's map
  const std::int64_t chunk_end = min(c0 + piece_len, eos);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const bool rows_of_b = warp >= kWarps / 2;
  const int row0 = (warp % (kWarps / 2)) * 16;
  float acc[16][4];  // M = I, B = 0 (layout as chunk_maps_kernel)
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row0 + g + (e / 2) * 8, c = nt * 8 + 2 * t + (e % 2);
      acc[nt][e] = (!rows_of_b && r == c) ? 1.f : 0.f;
    }
  float held[2] = {1.f, 1.f};

  const int hk = h * p.num_k_heads / p.num_state_heads, hv = h * p.num_v_heads / p.num_state_heads;
  const E* v_head = static_cast<const E*>(p.v) + static_cast<std::int64_t>(hv) * p.v_stride_head;
  const std::int64_t block0 = static_cast<std::int64_t>(n) * p.blocks_per_seq + static_cast<std::int64_t>(piece) * (piece_len / kC);

  // The T tiles' 16x16 blocks above the diagonal: zero, never copied (visible after the first
  // block's barrier).
  for (int q = threadIdx.x; q < 3 * 512; q += kThreads) {
    if (!upper_core_row(q % 512)) continue;
    unsigned char* tile = q < 512 ? s.t_k.bytes : s.t_v[q / 512 - 1].bytes;
    *reinterpret_cast<uint4*>(tile + core_row_offset(q % 512)) = make_uint4(0u, 0u, 0u, 0u);
  }

  auto issue_block_copies = [&](int blk, int k_buf) {
    // The copy addresses are recomputed per block: hoisted out of the block loop they stay live
    // through the composition (ptxas spilled ~100 bytes more).
    int tid = threadIdx.x;
    asm volatile("" : "+r"(tid));
    const std::int64_t brow = block0 + blk;
    const std::int64_t t0 = c0 + static_cast<std::int64_t>(blk) * kC;
    const int len = static_cast<int>(chunk_end - t0 < kC ? chunk_end - t0 : kC);
    const cute::uint128_t* tiles =
        static_cast<const cute::uint128_t*>(p.block_map_tiles) + (brow * p.num_state_heads + h) * 3 * 512;
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      const int q = tid + i * kThreads, qq = q % 512;
      unsigned char* tile = i == 0 ? s.t_k.bytes : s.t_v[i - 1].bytes;  // kThreads == 512: tile i
      if (!upper_core_row(qq))
        cute::SM80_CP_ASYNC_CACHEALWAYS<cute::uint128_t>::copy(tiles[q], *reinterpret_cast<cute::uint128_t*>(tile + core_row_offset(qq)));
    }
    const cute::uint128_t* k_tile =
        static_cast<const cute::uint128_t*>(p.block_k_tiles) + (brow * p.num_k_heads + hk) * (kC * kD / 8);
#pragma unroll
    for (int i = 0; i < kC * kD / 8 / kThreads; ++i) {
      const int q = tid + i * kThreads;
      cute::SM80_CP_ASYNC_CACHEALWAYS<cute::uint128_t>::copy(
          k_tile[q], *reinterpret_cast<cute::uint128_t*>(s.k[k_buf].bytes + core_row_offset(q)));
    }
    // V rows in 8-byte pieces (the alignment validate_cp guarantees), rows past len zero-filled.
#pragma unroll
    for (int i = 0; i < kC * kD / 4 / kThreads; ++i) {
      const int q = tid + i * kThreads, r = q / (kD / 4), c = (q % (kD / 4)) * 4;
      cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<std::uint64_t>::copy(
          *reinterpret_cast<const std::uint64_t*>(v_head + (t0 + (r < len ? r : 0)) * p.v_stride_token + c),
          *s.v.template at<std::uint64_t>(r, c), r < len);
    }
    cute::cp_async_fence();
  };

  if constexpr (kPrefetch) issue_block_copies(0, 0);
  for (int blk = 0; c0 + static_cast<std::int64_t>(blk) * kC < chunk_end; ++blk) {
    const int k_buf = kPrefetch ? blk % 2 : 0;
    const float g_last = __ldg(p.block_gate_last + (block0 + blk) * p.num_state_heads + h);
    if constexpr (!kPrefetch) {
      __syncthreads();  // the previous block's tiles are no longer read
      issue_block_copies(blk, 0);
    }
    cute::cp_async_wait<0>();
    fence_proxy_async_shared();  // the copied tiles are read by wgmma after the barrier
    __syncthreads();
    block_products_wgmma<In>(s, s.k[k_buf], warp, lane);
    fence_proxy_async_shared();  // the A tile is read by wgmma after the barrier
    __syncthreads();
    // T and V are consumed: load the next block behind this one's composition (its K into the
    // other buffer; the composition of block b - 1 read it before the barrier above).
    if constexpr (kPrefetch)
      if (c0 + static_cast<std::int64_t>(blk + 1) * kC < chunk_end) issue_block_copies(blk + 1, k_buf ^ 1);
    compose_rows_wgmma(s, s.k[k_buf], acc, held, __expf(g_last), rows_of_b, row0, lane);
  }

  const std::int64_t map_row = static_cast<std::int64_t>(n) * p.chunks_per_seq * p.map_splits + piece;
  float* out = (rows_of_b ? p.map_b : p.map_m) + (map_row * p.num_state_heads + h) * kD * kD;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = row0 + g + half * 8, c = nt * 8 + 2 * t;
      *reinterpret_cast<float2*>(out + r * kD + c) = make_float2(acc[nt][2 * half] * held[half], acc[nt][2 * half + 1] * held[half]);
    }
}

}  // namespace fastinfer::gdn::detail::cp
