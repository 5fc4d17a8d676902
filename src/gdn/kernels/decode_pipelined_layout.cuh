#pragma once
// The pipelined decode kernel's shared-memory layout and work items (decode_pipelined_sm90.cuh):
// the stage ring, the configuration of a tactic, and which tile a CTA's i-th item is.
#include <algorithm>
#include <cstdint>

#include "gdn/decode_launch.h"
#include "gdn/decode_params.h"
#include "gdn/kernels/decode_sm90.cuh"

namespace fastinfer::gdn::decode_sm90 {

inline constexpr int kPipelinedMaxTokens = kDecodePipelinedMaxTokens;
// Producer lanes that arrive on a stage's `full` barrier per item: one per token a stage can hold
// (lane t writes token t's gates; lane 0 also the slots and the expected bytes).
inline constexpr int kProducerArrivals = kPipelinedMaxTokens;
// Hopper: 228 KB of shared memory per SM, of which 1 KB per CTA is reserved by the system.
inline constexpr int kSmemPerSm = 228 * 1024;
inline constexpr int kSmemReservedPerCta = 1024;

// One stage of the ring: a state tile as it lies in the pool, the raw q, k and v (the tile's rows)
// of every token, the gates and the slots of the item.
template <class Act, class State, int kTileRows>
struct alignas(16) PipelineStage {
  State state[kTileRows * kDecodeHeadDim];
  Act q[kPipelinedMaxTokens][kDecodeHeadDim];
  Act k[kPipelinedMaxTokens][kDecodeHeadDim];
  Act v[kPipelinedMaxTokens][kTileRows];
  float alpha[kPipelinedMaxTokens], beta[kPipelinedMaxTokens];
  int in_slot;   // -1: padding (nothing was loaded)
  int out_slot;  // as given: may be -1
  int item;      // dynamic work order only: the item in the stage, -1 once the items have run out
};

// The shared memory of a pipelined decode CTA: a ring of state stages next to the per-CTA token
// buffers, with a full/empty mbarrier pair per stage. As many stages as fit when kCtasPerSm CTAs
// share an SM, at most 8 (3 already keep one tile in the consumers, one storing and one loading).
template <class Stage, class Tokens, int kCtasPerSm>
struct StageRing {
  static constexpr int kFixedBytes = int(sizeof(Tokens)) + 2 * 8 * 8 + 16;  // + barriers (<= 8 stages) + alignment
  static constexpr int kStages =
      std::min(8, ((kSmemPerSm / kCtasPerSm - kSmemReservedPerCta) - kFixedBytes) / int(sizeof(Stage)));
  static_assert(kStages >= 3, "the ring needs a stage in work, one storing and one loading");

  struct Smem {
    Stage stage[kStages];
    Tokens tokens;
    std::uint64_t full[kStages], empty[kStages];
  };
  static constexpr int kSmemBytes = int(sizeof(Smem));
  static_assert(kSmemBytes + kSmemReservedPerCta <= kSmemPerSm / kCtasPerSm);
};

template <class Act, class State, int kLanesPerRow, int kRowsPerThread, int kConsumerWarps, int kCtasPerSm,
          bool kDynamic = false>
struct PipelinedConfig {
  static constexpr bool kDynamicItems = kDynamic;
  static constexpr int kConsumerWarpCount = kConsumerWarps;
  static constexpr int kConsumerThreads = kConsumerWarps * 32;
  static constexpr int kThreads = kConsumerThreads + 32;  // + the producer warp
  static constexpr int kGroups = kConsumerThreads / kLanesPerRow;  // rows per access wave
  static constexpr int kTileRows = kGroups * kRowsPerThread;
  static_assert(kDecodeHeadDim % kTileRows == 0, "tiles split a state evenly");
  static_assert(kTileRows % 8 == 0, "a tile's v run is a multiple of 16 bytes");
  static constexpr int kTilesPerState = kDecodeHeadDim / kTileRows;
  static constexpr int kItemsPerStep = 1;  // nth_item: one tile per step
  // Items whose slots and gate inputs the producer loads ahead (ProducerMeta). Two, from H200
  // session 6 (docs/GDN_DECODE.md; each job also ran the one-ahead order of session 5): bf16
  // pool, T = 1, B = 256/512 0.1535-0.1546 / 0.2945-0.2978 ms against 0.1563-0.1565 /
  // 0.2990-0.2991 (and 4-5% on another machine); fp32 T = 4 B = 32 0.0496-0.0497 against
  // 0.0505-0.0516, B = 512 0.6004-0.6012 against 0.5992-0.6001.
  static constexpr int kProducerPrefetch = 2;
  static constexpr int kTileBytes = kTileRows * kDecodeHeadDim * int(sizeof(State));
  using Stage = PipelineStage<Act, State, kTileRows>;

  // Consumer-side shared data that is not staged: the normalised tokens of the item in work.
  struct Tokens {
    float q[kPipelinedMaxTokens][kDecodeHeadDim];
    float k[kPipelinedMaxTokens][kDecodeHeadDim];
    float kq[kPipelinedMaxTokens];
  };
  using Ring = StageRing<Stage, Tokens, kCtasPerSm>;
  static constexpr int kStages = Ring::kStages;
  using Smem = typename Ring::Smem;
  static constexpr int kSmemBytes = Ring::kSmemBytes;

  // Producer lane `lane`: the bulk copies of a tile into a stage (the tile as it lies in the pool).
  __device__ static void load_state(Stage& st, const State* tile, std::uint64_t* full, int lane) {
    if (lane == 0) bulk_load(st.state, tile, kTileBytes, full);
  }
};

struct ItemCoords {
  int seq, head_v, row0;
};

template <class Cfg>
__device__ __forceinline__ ItemCoords item_coords(const DecodeParams& p, int item) {
  const int seq_head = item / Cfg::kTilesPerState;
  return {seq_head / p.heads_v, seq_head % p.heads_v, (item % Cfg::kTilesPerState) * Cfg::kTileRows};
}

// The item of a CTA's i-th step: steps of Cfg::kItemsPerStep consecutive items (tiles of one state
// back to back when it is kTilesPerState), the CTAs' steps interleaved. Increasing in i.
template <class Cfg>
__device__ __forceinline__ int nth_item(int i) {
  constexpr int kStep = Cfg::kItemsPerStep;
  return kStep * (blockIdx.x + (i / kStep) * gridDim.x) + i % kStep;
}

// Whether the consumers of item `at` need the stage's raw q and k: with whole states per step
// (Cfg::kItemsPerStep == kTilesPerState > 1) only the state's first tile prepares the tokens.
template <class Cfg>
__device__ __forceinline__ bool item_prepares_tokens(const ItemCoords& at) {
  return Cfg::kItemsPerStep == 1 || at.row0 == 0;
}


}  // namespace fastinfer::gdn::decode_sm90
