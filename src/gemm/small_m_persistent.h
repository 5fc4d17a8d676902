#pragma once
// Plain-struct boundary of the persistent small-M kernel (kernels/small_m_persistent_sm90.cuh).
// No CUDA headers.
//
// Work list: the weight is streamed as one linear list of "group chunks" x = rg * kc_count + kc
// (row group rg = 4 row tiles = 64 rows of N, k chunk kc of 64). With R = 4 = kTileGroup, chunk x
// sits at byte x * 2048 of the tiles and x * 256 of the scales (small_m_tile_index), so the list
// is the weight's storage order. The grid is a whole number of CTAs per SM; warp w of the grid
// (w = blockIdx.x * W + warp, nw warps) streams x in [floor(total * w / nw), floor(total * (w + 1) / nw)):
// equal shares within one chunk, no tail wave. A row group touched by one warp is written
// directly; otherwise each contributor j writes its partial sums to slot (rg, j) of the workspace,
// counts itself on the row group's counter, and the last to arrive sums the slots in order
// j = 0, 1, ... (bitwise deterministic) and resets the counter to 0 for the next call or graph replay.
#include <cstddef>
#include <cstdint>

#include "gemm/small_m_params.h"

namespace fastinfer::gemm::detail {

inline constexpr int kPersistRowTiles = 4;                       // R: one tile group per chunk
inline constexpr int kPersistRows = kPersistRowTiles * kTileRows;  // 64 rows of N per row group
// Fewer chunks per warp than this leave the ring unfilled; the grid shrinks instead (unmeasured).
inline constexpr long long kPersistMinChunksPerWarp = 4;

// Floats of one contributor's slot: the C fragments of 4 row tiles x T token tiles as the 32 lanes
// hold them (float4 per lane and tile pair).
constexpr int persistent_slot_floats(int token_tiles) { return kPersistRowTiles * token_tiles * 32 * 4; }

struct SmallMPersistentParams {
  SmallMParams base;
  float* partials = nullptr;     // [row_groups][slots_per_group][persistent_slot_floats(T)], contents undefined on entry
  unsigned* counters = nullptr;  // [row_groups], zero on entry and on exit
  int row_groups = 0;
  int slots_per_group = 0;       // most warps that can share one row group
  long long total = 0;           // row_groups * kc_count
  int warps_total = 0;           // nw <= total (every warp gets at least one chunk)
};

// One compiled persistent kernel: T 8-token tiles, W warps per CTA, S ring stages per warp.
struct PersistentShape {
  int token_tiles;  // T
  int warps;        // W
  int stages;       // S
};

// Launch geometry and workspace of one call, computed the same way on every call (no state).
struct PersistentPlan {
  int ctas = 0;
  int warps_total = 0;
  int row_groups = 0;
  int slots_per_group = 0;
  long long total = 0;
  std::size_t partial_bytes = 0;
  std::size_t counter_bytes = 0;
};

inline PersistentPlan persistent_plan(long long n, long long k, int token_tiles, int warps, int ctas_per_sm, int sm_count) {
  PersistentPlan plan;
  const long long kc_count = (k + kChunkK - 1) / kChunkK;
  plan.row_groups = static_cast<int>((n + kPersistRows - 1) / kPersistRows);
  plan.total = plan.row_groups * kc_count;
  long long ctas = static_cast<long long>(ctas_per_sm) * sm_count;
  const long long by_min_chunks = (plan.total + warps * kPersistMinChunksPerWarp - 1) / (warps * kPersistMinChunksPerWarp);
  if (ctas > by_min_chunks) ctas = by_min_chunks;
  if (ctas > plan.total / warps) ctas = plan.total / warps;  // nw <= total: no empty warp
  plan.ctas = static_cast<int>(ctas);
  plan.warps_total = plan.ctas * warps;
  if (plan.ctas < 1) return plan;
  // A row group of kc_count chunks meets at most ceil((kc_count - 1) / shortest share) + 1 warps.
  const long long shortest = plan.total / plan.warps_total;
  plan.slots_per_group = static_cast<int>((kc_count - 1 + shortest - 1) / shortest + 1);
  plan.partial_bytes =
      static_cast<std::size_t>(plan.row_groups) * plan.slots_per_group * persistent_slot_floats(token_tiles) * sizeof(float);
  plan.counter_bytes = static_cast<std::size_t>(plan.row_groups) * sizeof(unsigned);
  return plan;
}

// Launches the kernel of `shape` on `ctas` CTAs; false when that shape is not compiled.
bool launch_small_m_persistent(const SmallMPersistentParams& p, const PersistentShape& shape, int ctas, int device,
                               bool enable_pdl, void* stream);
// CTAs of a compiled shape resident per SM (occupancy calculator; 0 if not compiled). One-time use.
int small_m_persistent_blocks_per_sm(const PersistentShape& shape, int device);
bool small_m_persistent_compiled(const PersistentShape& shape);

}  // namespace fastinfer::gemm::detail

namespace fastinfer::gemm::detail {
// The compiled (W, S) pairs (instantiations/small_m_persistent_t*.cu), for T = 1, 2 and 4: the three
// best of the session-4 H200 sweeps (docs/GEMM.md; also measured and dropped: 4 x 8, 8 x 4, 4 x 2,
// and cp.async.bulk weight fetch). More bytes in flight per SM made it slower, not faster.
inline constexpr int kPersistentShapes[][2] = {{4, 4}, {8, 3}, {8, 2}};
}  // namespace fastinfer::gemm::detail
