#pragma once
// Pipelined GDN decode / MTP kernel (sm_90a): persistent CTAs that stream state tiles through a
// ring of shared-memory stages with bulk copies, so the bytes in flight per SM are bounded by
// shared memory (up to ~200 KB) instead of registers, and the per-token math of one tile overlaps
// the loads of the next ones and the store of the previous one.
//
// Tile: kTileRows consecutive V rows (all 128 K columns) of one (sequence, head) state, one
// contiguous run of the pool. Work item i of a CTA is tile blockIdx.x + i * gridDim.x (nth_item;
// a configuration with kItemsPerStep > 1 takes that many consecutive tiles per step).
// Warp roles:
//  - producer (the last warp): per item, waits for a free stage, forms the gates of every token
//    (lane t: token t) and issues bulk copies of the state tile and the raw q, k and v of every
//    token; one transaction barrier per stage (`full`) counts their bytes. The slot indices and
//    gate inputs of an item are loaded Cfg::kProducerPrefetch items ahead (ProducerMeta).
//  - consumers (kConsumerWarps warps): per item, wait for `full`, copy the tile into registers
//    (the register kernel's row layout), normalise q and k (one warp per token), run the T tokens
//    (decode_token_step.cuh), write outputs and intermediate states directly, put the final
//    state back into the stage and let one thread bulk-store it. That thread frees a stage
//    (`empty`) once its bulk store has read it, one item later, so it never waits for a store.
// Work order: item i of a CTA is tile blockIdx.x + i * gridDim.x (nth_item), or with kDynamic
// (session 7) that for the first Cfg::kProducerPrefetch items (session 8: p.static_steps, the
// claimed-tail tactics) and every later one claimed from a
// per-stream counter (decode_work_counter), so that SMs which stream faster take more items: with
// static items the SMs' finishing times spread over 4-17 us at B = 32-64 and 50 us at B = 256
// (fp32 pool, T = 4; H200 profile, docs/GDN_DECODE.md) while the call waits for the last one.
// Any number of tokens up to kPipelinedMaxTokens (the stage holds every token's q, k and v);
// the launcher runs longer MTP windows on the register kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "fastinfer/context.h"
#include "gdn/decode_launch.h"
#include "gdn/decode_params.h"
#include "gdn/kernels/decode_bulk_copy.cuh"
#include "gdn/kernels/decode_profile.cuh"
#include "gdn/kernels/decode_sm90.cuh"
#include "gdn/kernels/decode_token_step.cuh"
#include "gdn/kernels/decode_vector_io.cuh"
#include "runtime/cuda_check.h"
#include "runtime/once_per_device.h"

namespace fastinfer::gdn::decode_sm90 {

inline constexpr int kPipelinedMaxTokens = kDecodePipelinedMaxTokens;
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

// What the producer reads per item besides the tile: the slots, and (lane t: token t) the raw
// bits of the gate inputs. Loaded Cfg::kProducerPrefetch items ahead and converted only when the
// item is produced (a conversion right after the load would wait for it). Loaded one item ahead
// (session 5) the slot -> gates -> bulk copy chain of every item was a global round trip the
// producer waited on, which limited the bf16 pipelined kernel at T = 1 (5-stage ring, short items).
struct ProducerMeta {
  int in_slot = -1, out_slot = -1;
  std::uint32_t A_log = 0, dt_bias = 0, a = 0, b = 0;  // as stored (fp32 bits, or 16-bit values)
};

__device__ __forceinline__ std::uint32_t load_gate_bits(const void* base, std::int64_t offset, GateType type) {
  if (type == GateType::kFloat32) return __ldg(static_cast<const unsigned int*>(base) + offset);
  return __ldg(static_cast<const unsigned short*>(base) + offset);
}

__device__ __forceinline__ float gate_from_bits(std::uint32_t bits, GateType type) {
  switch (type) {
    case GateType::kFloat32: return __uint_as_float(bits);
    case GateType::kFloat16: return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    default: return __uint_as_float(bits << 16);  // bfloat16
  }
}

template <class Cfg>
__device__ __forceinline__ ProducerMeta load_producer_meta(const DecodeParams& p, int item, int items, int lane) {
  ProducerMeta m;
  if (item >= items) return m;
  const ItemCoords at = item_coords<Cfg>(p, item);
  m.in_slot = p.initial_indices[at.seq * p.initial_indices_stride];
  m.out_slot = p.output_indices[at.seq * p.output_indices_stride];
  if (lane < p.tokens) {
    m.A_log = load_gate_bits(p.A_log.data, at.head_v * p.A_log.stride, p.A_log.type);
    m.dt_bias = load_gate_bits(p.dt_bias.data, at.head_v * p.dt_bias.stride, p.dt_bias.type);
    m.a = load_gate_bits(p.a.data, at.seq * p.a.stride_b + lane * p.a.stride_t + at.head_v * p.a.stride_h, p.a.type);
    m.b = load_gate_bits(p.b.data, at.seq * p.b.stride_b + lane * p.b.stride_t + at.head_v * p.b.stride_h, p.b.type);
  }
  return m;
}

// The producer's work for the CTA's i-th item (`item`, metadata `m`): waits for the free stage,
// publishes gates and slots, issues the bulk copies.
template <class Cfg, class Act, class State, bool kProfile = false>
__device__ __forceinline__ void produce_item(const DecodeParams& p, typename Cfg::Smem& smem, int i, int item,
                                             const ProducerMeta& m, int lane) {
  constexpr std::int64_t kStateElems = std::int64_t{kDecodeHeadDim} * kDecodeHeadDim;
  const int s = i % Cfg::kStages;
  const ItemCoords at = item_coords<Cfg>(p, item);
  const int in_slot = m.in_slot, out_slot = m.out_slot;
  float2 gates = make_float2(0.0f, 0.0f);
  if (lane < p.tokens)
    gates = decode_gates(gate_from_bits(m.a, p.a.type), gate_from_bits(m.b, p.b.type),
                         -expf(gate_from_bits(m.A_log, p.A_log.type)), gate_from_bits(m.dt_bias, p.dt_bias.type));
  const bool valid = in_slot >= 0 && in_slot < p.pool_size;  // else padding (or outside the pool)
  if (i >= Cfg::kStages) mbarrier_wait(&smem.empty[s], (i / Cfg::kStages - 1) & 1);
  typename Cfg::Stage& st = smem.stage[s];
  if (valid && lane < p.tokens) {
    st.alpha[lane] = gates.x;
    st.beta[lane] = gates.y;
  }
  if (lane == 0) {
    st.in_slot = valid ? in_slot : -1;
    st.out_slot = out_slot;
    if constexpr (Cfg::kDynamicItems) st.item = item;
  }
  __syncwarp();  // the gate and slot writes happen before the arrival that publishes them
  if (!valid) {
    if (lane == 0) mbarrier_arrive(&smem.full[s]);
    return;
  }
  const bool with_qk = item_prepares_tokens<Cfg>(at);
  const std::uint32_t token_bytes = ((with_qk ? 2 * kDecodeHeadDim : 0) + Cfg::kTileRows) * sizeof(Act);
  if (lane == 0) mbarrier_arrive_expect_tx(&smem.full[s], Cfg::kTileBytes + p.tokens * token_bytes);
  const State* tile = static_cast<const State*>(p.state) + (std::int64_t{in_slot} * p.heads_v + at.head_v) * kStateElems +
                      at.row0 * kDecodeHeadDim;
  Cfg::load_state(st, tile, &smem.full[s], lane);  // the stage's state layout is the config's
  if (i == 0 && lane == 0) profile_stamp<kProfile>(p, kProfileFirstIssue);
  // Lane 3t + {0, 1, 2}: q, k, v of token t.
  if (lane < 3 * p.tokens) {
    const int t = lane / 3, which = lane % 3;
    const int head_qk = at.head_v / (p.heads_v / p.heads_qk);
    if (which == 0) {
      if (with_qk) bulk_load(st.q[t], token_row<const Act>(p.q, at.seq, t, head_qk), kDecodeHeadDim * sizeof(Act), &smem.full[s]);
    } else if (which == 1) {
      if (with_qk) bulk_load(st.k[t], token_row<const Act>(p.k, at.seq, t, head_qk), kDecodeHeadDim * sizeof(Act), &smem.full[s]);
    } else bulk_load(st.v[t], token_row<const Act>(p.v, at.seq, t, at.head_v) + at.row0, Cfg::kTileRows * sizeof(Act), &smem.full[s]);
  }
}

// Producer warp: fills stages ahead of the consumers. Item i + kPrefetch's metadata is loaded once
// item i is produced, into the registers item i's used (a static index: the loop is unrolled by
// the prefetch depth).
template <class Cfg, class Act, class State, bool kProfile = false>
__device__ void produce(const DecodeParams& p, typename Cfg::Smem& smem, int items) {
  constexpr int kPrefetch = Cfg::kProducerPrefetch;
  const int lane = threadIdx.x % 32;
  ProducerMeta meta[kPrefetch];
#pragma unroll
  for (int j = 0; j < kPrefetch; ++j) meta[j] = load_producer_meta<Cfg>(p, nth_item<Cfg>(j), items, lane);
  for (int i = 0;; i += kPrefetch) {
#pragma unroll
    for (int j = 0; j < kPrefetch; ++j) {
      const int item = nth_item<Cfg>(i + j);
      if (item >= items) return;
      produce_item<Cfg, Act, State, kProfile>(p, smem, i + j, item, meta[j], lane);
      meta[j] = load_producer_meta<Cfg>(p, nth_item<Cfg>(i + j + kPrefetch), items, lane);
    }
  }
}

// Dynamic work order (Cfg::kDynamicItems): the CTA's first p.static_steps steps (at least its
// first kProducerPrefetch items) are its static ones (nth_item: the same start as the static
// order), every later step is claimed from p.work_counter when the item kProducerPrefetch items
// earlier is produced; claims are increasing (all past the static items), so the first one past
// the end ends the CTA: the producer marks its stage `item = -1`. A claim is one step of
// Cfg::kItemsPerStep items (both tiles of a state in the tensor-core kernel's state-major order:
// the CTA runs them back to back). Session 7 claimed every step after the prefetched items;
// session 8's claimed-tail tactics take most of a CTA's share in the static order and claim only
// the tail, where the SMs' different rates would leave some idle: a claim is an atomic round trip
// in the producer's chain, which costs more than it saves for short items (bf16 pools, T = 1).
// (Claiming one step earlier, so that the atomic's round trip leaves the producer's path, measured
// 0.3-1% slower for fp32 pools and 4-12% slower for bf16 T = 1: H200, session 7 batch 3. Claims of
// quarter tiles, session 8: 1.1-2x slower, each still costing about an item's time.)
template <class Cfg, class Act, class State, bool kProfile = false>
__device__ void produce_dynamic(const DecodeParams& p, typename Cfg::Smem& smem, int items) {
  constexpr int kPrefetch = Cfg::kProducerPrefetch;
  constexpr int kStep = Cfg::kItemsPerStep;
  const int lane = threadIdx.x % 32;
  const int static_steps = max((kPrefetch + kStep - 1) / kStep, p.static_steps);
  const int static_items = static_steps * kStep;
  int step_first = 0;  // kStep > 1: the first item of the step claimed last
  auto claim = [&] {
    int claimed = 0;
    if (lane == 0) claimed = atomicAdd(p.work_counter, 1);
    return kStep * (static_steps * static_cast<int>(gridDim.x) + __shfl_sync(0xffffffffu, claimed, 0));
  };
  int next[kPrefetch];
  ProducerMeta meta[kPrefetch];
#pragma unroll
  for (int j = 0; j < kPrefetch; ++j) {
    next[j] = nth_item<Cfg>(j);
    meta[j] = load_producer_meta<Cfg>(p, next[j], items, lane);
  }
  for (int i = 0;; i += kPrefetch) {
#pragma unroll
    for (int j = 0; j < kPrefetch; ++j) {
      const int item = next[j];
      if (item >= items) {  // the end: one more stage, marked, for the consumers
        const int s = (i + j) % Cfg::kStages;
        if (i + j >= Cfg::kStages) mbarrier_wait(&smem.empty[s], ((i + j) / Cfg::kStages - 1) & 1);
        if (lane == 0) {
          smem.stage[s].item = -1;
          mbarrier_arrive(&smem.full[s]);
        }
        return;
      }
      produce_item<Cfg, Act, State, kProfile>(p, smem, i + j, item, meta[j], lane);
      const int n = i + j + kPrefetch;  // the CTA's item number
      if (n < static_items) next[j] = nth_item<Cfg>(n);
      else if (kStep > 1 && n % kStep != 0) next[j] = step_first + n % kStep;
      else next[j] = step_first = claim();
      meta[j] = load_producer_meta<Cfg>(p, next[j], items, lane);
    }
  }
}

// The end of a dynamic-order CTA (every thread calls it): once the CTA is done, so its producer has
// stopped claiming, the last CTA to finish leaves the counters zero for the next launch on this
// stream (kernel boundaries order the launches).
__device__ __forceinline__ void finish_dynamic_items(const DecodeParams& p) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(p.work_counter + 1, 1) == static_cast<int>(gridDim.x) - 1) {
      p.work_counter[0] = 0;
      p.work_counter[1] = 0;
    }
  }
}

// Consumer warps: run the tokens of each item on its tile.
template <class Cfg, class Act, class State, int kLanesPerRow, int kRowsPerThread, bool kProfile = false>
__device__ void consume(const DecodeParams& p, typename Cfg::Smem& smem, int items) {
  using Slice = RowSlice<State, kLanesPerRow>;
  constexpr std::int64_t kStateElems = std::int64_t{kDecodeHeadDim} * kDecodeHeadDim;
  const int tid = threadIdx.x;  // < kConsumerThreads
  const int warp = tid / 32, lane = tid % 32;
  const int lane_in_row = tid % kLanesPerRow;
  auto local_row = [&](int r) { return tid / kLanesPerRow + r * Cfg::kGroups; };  // row r of this thread in the tile
  typename Cfg::Tokens& tok = smem.tokens;

  int prev_stage = -1;  // the stage whose bulk store was issued one item ago (thread 0 only)
  int i = 0;
  for (int item = blockIdx.x; Cfg::kDynamicItems || item < items; item += gridDim.x, ++i) {
    const int s = i % Cfg::kStages;
    mbarrier_wait(&smem.full[s], (i / Cfg::kStages) & 1);
    if (i == 0 && tid == 0) profile_stamp<kProfile>(p, kProfileFirstData);
    typename Cfg::Stage& st = smem.stage[s];
    if constexpr (Cfg::kDynamicItems) {
      item = st.item;
      if (item < 0) break;  // uniform: every consumer reads the same stage
    }
    const ItemCoords at = item_coords<Cfg>(p, item);
    const int in_slot = st.in_slot, out_slot = st.out_slot;
    const bool store = in_slot >= 0 && p.update_state && out_slot >= 0 && out_slot < p.pool_size;

    if (in_slot < 0) {  // padding: zero output rows
      for (int e = tid; e < p.tokens * Cfg::kTileRows; e += Cfg::kConsumerThreads) {
        token_row<Act>(p.output, at.seq, e / Cfg::kTileRows, at.head_v)[at.row0 + e % Cfg::kTileRows] = from_float<Act>(0.0f);
      }
    } else {
      float state[kRowsPerThread][Slice::kElems];
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
        load_row_slice<State, Slice, LoadPolicy::kPlain>(st.state + local_row(r) * kDecodeHeadDim, lane_in_row, state[r]);

      for (int t = warp; t < p.tokens; t += Cfg::kConsumerWarpCount) {
        float q[4], k[4];
        load_floats<Act, 4, LoadPolicy::kPlain>(&st.q[t][4 * lane], q);
        load_floats<Act, 4, LoadPolicy::kPlain>(&st.k[t][4 * lane], k);
        const float kq = normalise_qk(q, k, p.use_qk_l2norm);
        *reinterpret_cast<float4*>(&tok.q[t][4 * lane]) = make_float4(q[0], q[1], q[2], q[3]);
        *reinterpret_cast<float4*>(&tok.k[t][4 * lane]) = make_float4(k[0], k[1], k[2], k[3]);
        if (lane == 0) tok.kq[t] = kq;
      }
      named_barrier_sync(1, Cfg::kConsumerThreads);

      float lazy = 1.0f;  // the state registers hold H / lazy (token_step)
      for (int t = 0; t < p.tokens; ++t) {
        Act* out = token_row<Act>(p.output, at.seq, t, at.head_v) + at.row0;
        token_step<Slice, kLanesPerRow, kRowsPerThread>(
            state, lazy, min_lazy_scale(p), tok.q[t], tok.k[t], st.alpha[t], st.beta[t], tok.kq[t], lane_in_row,
            [&](int r) { return to_float(st.v[t][local_row(r)]); },
            [&](int r, float hq) { out[local_row(r)] = from_float<Act>(p.scale * hq); });
        if (p.intermediate != nullptr)
          store_intermediate<Slice, kRowsPerThread>(p, state, lazy, at.seq, t, at.head_v, at.row0, lane_in_row, local_row);
      }

      if (store) {
#pragma unroll
        for (int r = 0; r < kRowsPerThread; ++r)
          store_row_slice<State, Slice, StorePolicy::kPlain>(st.state + local_row(r) * kDecodeHeadDim, lane_in_row, state[r],
                                                             lazy);
        fence_async_shared();  // the bulk store (async proxy) reads what this thread wrote
      }
    }
    // Every consumer is done with the stage and with `tok`; the tile in `st.state` is final.
    named_barrier_sync(1, Cfg::kConsumerThreads);

    if (tid == 0) {
      if (store) {
        State* tile = static_cast<State*>(p.state) + (std::int64_t{out_slot} * p.heads_v + at.head_v) * kStateElems +
                      at.row0 * kDecodeHeadDim;
        bulk_store(tile, st.state, Cfg::kTileBytes);
      }
      bulk_commit();
      bulk_wait_read<1>();  // the store of one item ago has read its stage
      if (prev_stage >= 0) mbarrier_arrive(&smem.empty[prev_stage]);
      prev_stage = s;
    }
  }
  if (tid == 0) {
    profile_stamp<kProfile>(p, kProfileLastDone);
    profile_items<kProfile>(p, i);
    bulk_wait_read<0>();  // shared memory must outlive the last store's reads
    profile_stamp<kProfile>(p, kProfileExit);
  }
}

template <class Act, class State, int kLanesPerRow, int kRowsPerThread, int kConsumerWarps, int kCtasPerSm, bool kProfile = false,
          bool kDynamic = false>
__global__ void __launch_bounds__(PipelinedConfig<Act, State, kLanesPerRow, kRowsPerThread, kConsumerWarps, kCtasPerSm>::kThreads,
                                  kCtasPerSm)
    gdn_decode_pipelined_kernel(const __grid_constant__ DecodeParams p) {
  using Cfg = PipelinedConfig<Act, State, kLanesPerRow, kRowsPerThread, kConsumerWarps, kCtasPerSm, kDynamic>;
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  auto& smem = *reinterpret_cast<typename Cfg::Smem*>(smem_bytes);
  if (threadIdx.x == 0) {
    profile_stamp<kProfile>(p, kProfileEntry);
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbarrier_init(&smem.full[s], 1);   // the producer's arrival (+ the copies' bytes)
      mbarrier_init(&smem.empty[s], 1);  // the storing consumer thread's arrival
    }
    mbarrier_init_fence();
  }
  __syncthreads();
  const int items = p.batch * p.heads_v * Cfg::kTilesPerState;
  if constexpr (kDynamic) {
    if (threadIdx.x >= Cfg::kConsumerThreads) produce_dynamic<Cfg, Act, State, kProfile>(p, smem, items);
    else consume<Cfg, Act, State, kLanesPerRow, kRowsPerThread, kProfile>(p, smem, items);
    finish_dynamic_items(p);
  } else {
    if (threadIdx.x >= Cfg::kConsumerThreads) produce<Cfg, Act, State, kProfile>(p, smem, items);
    else consume<Cfg, Act, State, kLanesPerRow, kRowsPerThread, kProfile>(p, smem, items);
  }
}

// The steps (Cfg::kItemsPerStep items) per CTA a dynamic-order launch takes in the static order
// before it claims (DecodeParams::static_steps): params.static_steps when set (benchmark sweeps),
// else `static_percent` % of the CTAs' even share (0: only the prefetched first items, session 7's order).
inline int dynamic_static_steps(const DecodeParams& params, long long steps, long long ctas, int static_percent) {
  if (params.static_steps > 0) return params.static_steps;
  return static_cast<int>(steps / std::max(1LL, ctas) * static_percent / 100);
}

// Launches a resident-CTA decode kernel (pipelined or tensor-core): one CTA per resident slot,
// at most one per step (Cfg::kItemsPerStep items). Opting in to > 48 KB of shared memory is per device: done on
// each device's first launch (OncePerDevice), with the resident CTAs per SM it gives (the same on
// every Hopper part), capped at the kCtasPerSm the configuration was sized for. Dynamic-order
// kernels: `static_percent` as in dynamic_static_steps.
template <class Cfg, auto kKernel, int kCtasPerSm>
void launch_resident(const DecodeParams& params, Stream stream, int static_percent = 0) {
  static OncePerDevice once;
  static std::atomic<int> resident_per_sm{1};  // written once per device, the same value on each
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  once(device, [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    int resident = 0;
    FASTINFER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kKernel, Cfg::kThreads, Cfg::kSmemBytes));
    resident_per_sm.store(std::max(1, std::min(resident, kCtasPerSm)), std::memory_order_relaxed);
  });
  const long long steps = static_cast<long long>(params.batch) * params.heads_v * Cfg::kTilesPerState / Cfg::kItemsPerStep;
  const long long ctas =
      std::min<long long>(steps, static_cast<long long>(resident_per_sm.load(std::memory_order_relaxed)) * params.sm_count);
  if constexpr (Cfg::kDynamicItems) {
    DecodeParams dynamic = params;
    dynamic.work_counter = decode_work_counter(device, stream);
    dynamic.static_steps = dynamic_static_steps(params, steps, ctas, static_percent);
    kKernel<<<static_cast<unsigned>(ctas), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(dynamic);
  } else {
    kKernel<<<static_cast<unsigned>(ctas), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params);
  }
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gdn::decode_sm90

namespace fastinfer::gdn {

template <DType kAct, DType kState, int kLanesPerRow, int kRowsPerThread, int kConsumerWarps, int kCtasPerSm, bool kDynamic,
          int kStaticPercent>
void launch_decode_pipelined_sm90(const DecodeParams& params, Stream stream) {
  if (params.tokens > decode_sm90::kPipelinedMaxTokens) {  // the stage holds at most 8 tokens
    launch_decode_sm90<kAct, kState, 8, 4>(params, 4, stream);
    return;
  }
  using Act = typename decode_sm90::CudaType<kAct>::type;
  using State = typename decode_sm90::CudaType<kState>::type;
  using Cfg = decode_sm90::PipelinedConfig<Act, State, kLanesPerRow, kRowsPerThread, kConsumerWarps, kCtasPerSm, kDynamic>;
  constexpr auto kernel = decode_sm90::gdn_decode_pipelined_kernel<Act, State, kLanesPerRow, kRowsPerThread, kConsumerWarps,
                                                                   kCtasPerSm, false, kDynamic>;
  decode_sm90::launch_resident<Cfg, kernel, kCtasPerSm>(params, stream, kStaticPercent);
}

}  // namespace fastinfer::gdn
