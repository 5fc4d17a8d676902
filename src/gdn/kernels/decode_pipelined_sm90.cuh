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
//    state back into the stage and let one thread bulk-store it. A stage is free (`empty`) once
//    every consumer thread has arrived for it, one item later: thread 0 after its bulk store has
//    read the stage, so no thread waits for a store (session 9: every thread arrives for its own
//    accesses, which compute-sanitizer racecheck follows; thread 0 alone after the barrier was
//    the same order, reported as hazards).
// The producer warp is decode_pipelined_producer.cuh, the stages and items
// decode_pipelined_layout.cuh. PDL (session 9): a CTA sets up its barriers, lets the next kernel
// launch and waits for the previous grid before any global access (DecodeParams::programmatic_launch).
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
#include "gdn/kernels/decode_pipelined_layout.cuh"
#include "gdn/kernels/decode_pipelined_producer.cuh"
#include "gdn/kernels/decode_profile.cuh"
#include "gdn/kernels/decode_sm90.cuh"
#include "gdn/kernels/decode_token_step.cuh"
#include "gdn/kernels/decode_vector_io.cuh"
#include "runtime/cuda_check.h"
#include "runtime/once_per_device.h"

namespace fastinfer::gdn::decode_sm90 {

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

  int prev_stage = -1;  // the stage of one item ago (its bulk store was issued then)
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
    }
    // The stage of one item ago is free once every consumer thread has arrived (thread 0 after its
    // store has read it). Session 9: every thread arrives; thread 0 alone after the barrier is the
    // same order by the memory model, but racecheck credits a producer's wait only with the
    // accesses of the threads that arrived (docs/GDN_DECODE.md, docs/GEMM_LARGE_M.md).
    if (prev_stage >= 0) mbarrier_arrive(&smem.empty[prev_stage]);
    prev_stage = s;
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
      mbarrier_init(&smem.full[s], kProducerArrivals);        // producer lanes (+ the copies' bytes)
      mbarrier_init(&smem.empty[s], Cfg::kConsumerThreads);  // every consumer thread's arrival
    }
    mbarrier_init_fence();
  }
  // PDL (DecodeParams::programmatic_launch): the next kernel may be scheduled now (its CTAs take an
  // SM once this grid's CTA there has left); this grid's set-up above ran beside the previous kernel.
  allow_dependent_launch();
  __syncthreads();
  wait_for_previous_grid();  // inputs, slots, pool and counters may be the previous kernel's
  const int items = p.batch * p.heads_v * Cfg::kTilesPerState;
  constexpr int kStart = Cfg::kStages;  // DecodeParams::fill_ring_at_start
  if constexpr (kDynamic) {
    if (threadIdx.x < Cfg::kConsumerThreads) consume<Cfg, Act, State, kLanesPerRow, kRowsPerThread, kProfile>(p, smem, items);
    else if (p.fill_ring_at_start) produce_dynamic<Cfg, Act, State, kProfile, kStart>(p, smem, items);
    else produce_dynamic<Cfg, Act, State, kProfile>(p, smem, items);
    finish_dynamic_items(p);
  } else {
    if (threadIdx.x < Cfg::kConsumerThreads) consume<Cfg, Act, State, kLanesPerRow, kRowsPerThread, kProfile>(p, smem, items);
    else if (p.fill_ring_at_start) produce<Cfg, Act, State, kProfile, kStart>(p, smem, items);
    else produce<Cfg, Act, State, kProfile>(p, smem, items);
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
  DecodeParams launched = params;
  if constexpr (Cfg::kDynamicItems) {
    launched.work_counter = decode_work_counter(device, stream);
    launched.static_steps = dynamic_static_steps(params, steps, ctas, static_percent);
  }
  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(ctas));
  config.blockDim = dim3(Cfg::kThreads);
  config.dynamicSmemBytes = Cfg::kSmemBytes;
  config.stream = static_cast<cudaStream_t>(stream);
  config.attrs = &pdl;
  config.numAttrs = params.programmatic_launch ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, kKernel, launched));
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
  if constexpr (kStaticPercent > 0) {
    // The claimed-tail tactics fill the ring at the start (session 9; H200 batch 2, back to back with
    // PDL, without / with: bf16 T = 1 L8R4W8P1DT B = 32 / 64 / 256 0.0243 / 0.0421 / 0.1449 ->
    // 0.0238 / 0.0416 / 0.1443 ms, L16R4W16P1DT B = 256 0.1487 -> 0.1455; the static order lost
    // 0.5-2.4% with it (L8R4W8P1 B = 64 0.0421 -> 0.0431), fp32 pools were unchanged).
    DecodeParams filled = params;
    filled.fill_ring_at_start = true;
    decode_sm90::launch_resident<Cfg, kernel, kCtasPerSm>(filled, stream, kStaticPercent);
  } else {
    decode_sm90::launch_resident<Cfg, kernel, kCtasPerSm>(params, stream, kStaticPercent);
  }
}

}  // namespace fastinfer::gdn
