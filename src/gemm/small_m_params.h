#pragma once
// Plain-struct boundary of the small-M (weight-streaming) mm_bf16_fp4 kernels. No CUDA headers.
//
// Tiled weight layout (built once by the repack kernel, see small_m_repack.cu): the weight is cut
// into 16-row x 64-k tiles, one per (row tile nt, k chunk kc), stored in groups of 4 row tiles:
// group nt / 4 major, then kc, then nt % 4 (small_m_tile_index), so the R <= 4 tiles a warp streams
// per chunk are one contiguous run (one base pointer, immediate offsets):
//   w_tiles[small_m_tile_index(nt, kc) * 32 + lane] : 16 bytes = 4 words, word j for k16 step j.
// Lane (g = lane / 4, t = lane % 4) holds rows g and g+8 at k = kc*64 + 16t + 4j + {0..3} in word j:
// its mma.m16n8k16 A fragment of step j under the k permutation logical {2t, 2t+1, 2t+8, 2t+9} ->
// physical {16t + 4j .. +3} (activations are read with the same permutation, so the sum is
// unchanged). Lane quad t thus owns the tile's k16 block t: one pair of scales per lane and tile.
// Inside a word the nibbles sit where decode_word() finds them with rotations and masks (see
// kernels/small_m_decode.cuh). Scales of a tile: 32 x 2 bytes, w_scales[small_m_tile_index(nt, kc) * 32 + lane] =
// {s(g, 4kc + t), s(g+8, 4kc + t)}, re-encoded as (c << 3) | mantissa with sf = 2^(c - 9) * (1 + mantissa / 8)
// (subnormal e4m3 normalised), so one integer multiply-add turns a byte into a bf16 pair. Rows >= N
// and k >= K are zero codes with zero scales.
#include <cstdint>

#include "fastinfer/dtype.h"

namespace fastinfer::gemm::detail {

inline constexpr int kTileRows = 16;  // one mma M dimension
inline constexpr int kChunkK = 64;    // k per 16-byte lane load
// The kernels produce alpha * 2^-20 * sum: the decode keeps e2m1 * sf in bf16 as e2m1 * sf * 2^-20
// (exact, normal) and the epilogue multiplies by alpha * 2^20.
inline constexpr float kDecodeScaleInverse = 1048576.0f;

// Row tiles stored together per k chunk (N is padded to a multiple of 64 rows).
inline constexpr int kTileGroup = 4;
// Storage index of tile (nt, kc); 512 code bytes and 64 scale bytes per index.
constexpr long long small_m_tile_index(long long nt, long long kc, long long kc_count) {
  return ((nt / kTileGroup) * kc_count + kc) * kTileGroup + nt % kTileGroup;
}

struct SmallMParams {
  const void* w_tiles = nullptr;      // uint4 per lane, layout above
  const void* w_scales = nullptr;     // 2 bytes per (tile, lane)
  int kc_count = 0;                   // k chunks per row tile = ceil(K / 64)
  const void* a = nullptr;            // [M, K] bf16, row stride lda
  void* out = nullptr;                // [M, N], row stride ldo
  bool out_is_fp16 = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldo = 0;
  float alpha_scaled = 1.0f;          // alpha * kDecodeScaleInverse
};

// One compiled small-M kernel shape: R 16-row tiles per warp, T 8-token tiles, W warps per CTA
// (each warp a different K slice), plus the cluster size C (CTAs of one cluster split K further
// and reduce through distributed shared memory). Determinism: every reduction has a fixed order.
struct SmallMShape {
  int rows_tiles;    // R
  int token_tiles;   // T
  int warps;         // W
  int cluster;       // C (runtime launch attribute)
  bool lean_ring = false;  // fewer ring stages (small_m_lean_stages), so more warps fit on an SM
};

// Shared-memory plan of one (R, T, W) kernel, visible to the host heuristic. Each warp streams its
// K slice through a private ring of stages filled by cp.async: one stage = one k64 chunk of its R
// row tiles (512 B codes + 64 B scales each) and of its 8T activation rows (128 B each).
constexpr int small_m_stage_bytes(int rows_tiles, int token_tiles) {
  return rows_tiles * (512 + 64) + token_tiles * 8 * 128;
}
// Stages per warp: about 5 KB of weight in flight per warp (Little's law: ~32 KB per SM at
// 4.2 TB/s and ~1 us latency with 16 warps per SM; first estimate, unmeasured), capped so one CTA
// fits in 200 KB.
// Lean ring (compiled for T <= 2, a tactic option): 2-3 stages, about 7-13 KB per warp, so 4-8 CTAs
// of 4 warps fit on an SM (batch 1 of session 3: the deep ring of R = 4, T = 2 held 3 CTAs per SM,
// 1.13 waves on N = 28672). Which one wins is measured per cell (docs/GEMM.md).
constexpr int small_m_lean_stages(int rows_tiles, int token_tiles) { return rows_tiles == 4 && token_tiles == 1 ? 2 : 3; }
constexpr int small_m_stages(int rows_tiles, int token_tiles, int warps, bool lean = false) {
  if (lean) return small_m_lean_stages(rows_tiles, token_tiles);
  const int want = rows_tiles == 2 ? 6 : 4;
  const int cap = (200 * 1024) / (warps * small_m_stage_bytes(rows_tiles, token_tiles));
  return want < cap ? want : cap;
}
// The ring, reused after the K loop for the partial sums [W][16R][8T] fp32.
constexpr int small_m_smem_bytes(int rows_tiles, int token_tiles, int warps, bool lean = false) {
  const int ring = warps * small_m_stages(rows_tiles, token_tiles, warps, lean) * small_m_stage_bytes(rows_tiles, token_tiles);
  const int reduce = warps * rows_tiles * kTileRows * token_tiles * 8 * 4;
  return ring > reduce ? ring : reduce;
}

// Launches the kernel for `shape` (must be one of the compiled shapes: small_m_compiled()).
void launch_small_m(const SmallMParams& p, const SmallMShape& shape, int device, bool enable_pdl, void* stream);

// CTAs of a compiled shape resident per SM (occupancy calculator; 0 if not compiled). One-time
// use: the runner's heuristic tables (it sets the shared-memory opt-in of that kernel).
int small_m_blocks_per_sm(const SmallMShape& shape, int device);

// Whether (R, T, W) with that ring is compiled.
bool small_m_compiled(int rows_tiles, int token_tiles, int warps, bool lean_ring = false);

}  // namespace fastinfer::gemm::detail
