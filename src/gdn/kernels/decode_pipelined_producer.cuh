#pragma once
// The producer warp of the pipelined decode kernel and of the tensor-core kernel
// (decode_pipelined_sm90.cuh, decode_chunked_sm90.cuh): per item it waits for a free stage,
// publishes the gates and slots and issues the bulk copies of the tile and the tokens; static and
// dynamic (claimed) work orders.
#include <cuda_fp16.h>

#include <cstdint>

#include "gdn/decode_params.h"
#include "gdn/kernels/decode_bulk_copy.cuh"
#include "gdn/kernels/decode_pipelined_layout.cuh"
#include "gdn/kernels/decode_profile.cuh"
#include "gdn/kernels/decode_token_step.cuh"

namespace fastinfer::gdn::decode_sm90 {

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
  // Lanes 0..kProducerArrivals-1 each publish their own writes with their own arrival on `full`
  // (session 9; before, lane 0 alone after __syncwarp: the same order by the memory model, but
  // racecheck credits a wait only with the accesses of the threads that arrived).
  if (!valid) {
    if (lane < kProducerArrivals) mbarrier_arrive(&smem.full[s]);
    return;
  }
  const bool with_qk = item_prepares_tokens<Cfg>(at);
  const std::uint32_t token_bytes = ((with_qk ? 2 * kDecodeHeadDim : 0) + Cfg::kTileRows) * sizeof(Act);
  if (lane == 0) mbarrier_arrive_expect_tx(&smem.full[s], Cfg::kTileBytes + p.tokens * token_bytes);
  else if (lane < kProducerArrivals) mbarrier_arrive(&smem.full[s]);
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
// the prefetch depth). kStart > 0 (session 9, DecodeParams::fill_ring_at_start): every stage is
// free at the start, so the first kStart items' metadata is loaded at once and their copies are
// issued as it arrives (kStart tiles in flight after one round trip instead of kPrefetch; the
// ring's later items are kPrefetch ahead as before).
template <class Cfg, class Act, class State, bool kProfile = false, int kStart = 0>
__device__ void produce(const DecodeParams& p, typename Cfg::Smem& smem, int items) {
  constexpr int kPrefetch = Cfg::kProducerPrefetch;
  const int lane = threadIdx.x % 32;
  if constexpr (kStart > 0) {
    ProducerMeta first[kStart];
#pragma unroll
    for (int j = 0; j < kStart; ++j) first[j] = load_producer_meta<Cfg>(p, nth_item<Cfg>(j), items, lane);
#pragma unroll
    for (int j = 0; j < kStart; ++j) {
      const int item = nth_item<Cfg>(j);
      if (item >= items) return;
      produce_item<Cfg, Act, State, kProfile>(p, smem, j, item, first[j], lane);
    }
  }
  ProducerMeta meta[kPrefetch];
#pragma unroll
  for (int j = 0; j < kPrefetch; ++j) meta[j] = load_producer_meta<Cfg>(p, nth_item<Cfg>(kStart + j), items, lane);
  for (int i = kStart;; i += kPrefetch) {
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
// first kProducerPrefetch items, and its first kStart) are its static ones (nth_item: the same start as the static
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
// kStart: as in produce (kItemsPerStep == 1 only).
template <class Cfg, class Act, class State, bool kProfile = false, int kStart = 0>
__device__ void produce_dynamic(const DecodeParams& p, typename Cfg::Smem& smem, int items) {
  constexpr int kPrefetch = Cfg::kProducerPrefetch;
  constexpr int kStep = Cfg::kItemsPerStep;
  static_assert(kStart == 0 || kStep == 1, "the start's items are single static items");
  const int lane = threadIdx.x % 32;
  const int static_steps = max(max(kStart, (kPrefetch + kStep - 1) / kStep), p.static_steps);
  const int static_items = static_steps * kStep;
  int step_first = 0;  // kStep > 1: the first item of the step claimed last
  auto claim = [&] {
    int claimed = 0;
    if (lane == 0) claimed = atomicAdd(p.work_counter, 1);
    return kStep * (static_steps * static_cast<int>(gridDim.x) + __shfl_sync(0xffffffffu, claimed, 0));
  };
  // The CTA's n-th item, in increasing n (claims are made in this order).
  auto nth = [&](int n) {
    if (n < static_items) return nth_item<Cfg>(n);
    if (kStep > 1 && n % kStep != 0) return step_first + n % kStep;
    return step_first = claim();
  };
  // The end: one more stage, marked, for the consumers.
  auto finish = [&](int i) {
    const int s = i % Cfg::kStages;
    if (i >= Cfg::kStages) mbarrier_wait(&smem.empty[s], (i / Cfg::kStages - 1) & 1);
    if (lane == 0) smem.stage[s].item = -1;
    if (lane < kProducerArrivals) mbarrier_arrive(&smem.full[s]);
  };
  if constexpr (kStart > 0) {
    ProducerMeta first[kStart];
#pragma unroll
    for (int j = 0; j < kStart; ++j) first[j] = load_producer_meta<Cfg>(p, nth_item<Cfg>(j), items, lane);
#pragma unroll
    for (int j = 0; j < kStart; ++j) {
      const int item = nth_item<Cfg>(j);
      if (item >= items) {
        finish(j);
        return;
      }
      produce_item<Cfg, Act, State, kProfile>(p, smem, j, item, first[j], lane);
    }
  }
  int next[kPrefetch];
  ProducerMeta meta[kPrefetch];
#pragma unroll
  for (int j = 0; j < kPrefetch; ++j) {
    next[j] = nth(kStart + j);
    meta[j] = load_producer_meta<Cfg>(p, next[j], items, lane);
  }
  for (int i = kStart;; i += kPrefetch) {
#pragma unroll
    for (int j = 0; j < kPrefetch; ++j) {
      const int item = next[j];
      if (item >= items) {
        finish(i + j);
        return;
      }
      produce_item<Cfg, Act, State, kProfile>(p, smem, i + j, item, meta[j], lane);
      next[j] = nth(i + j + kPrefetch);
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

}  // namespace fastinfer::gdn::decode_sm90
