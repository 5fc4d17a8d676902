#pragma once
// The warp-specialised GDN prefill kernel (docs/GDN_PREFILL_FAST.md). A persistent CTA of 12 warps
// walks work items (sequence, state head) item = blockIdx.x, + gridDim.x, ... and their 64-token
// chunks:
//   warps 0-7  (consumers) hold the 128x128 fp32 state in registers, warp w rows 16w .. 16w+15,
//              and run the state-dependent products of chunk c (prefill_fast_consumer.cuh);
//   warps 8-11 (producer)  prepare chunk c+1 meanwhile: loads, gates, A0, P, T (solved, or a
//              precomputed Tinv or T_g loaded), T_g (prefill_fast_producer.cuh), into the other of
//              two shared-memory stages.
// Stage s hand-off: full[s] (128 producer arrivals) and empty[s] (256 consumer arrivals)
// mbarriers; both roles count chunks identically, so the n-th use of stage n % 2 waits for
// parity (n / 2) & 1.
#include <cuda_runtime.h>

#include <cstdint>

#include "gdn/kernels/prefill_fast_consumer.cuh"
#include "gdn/kernels/prefill_fast_consumer_wgmma.cuh"
#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"
#include "gdn/kernels/prefill_fast_producer.cuh"
#include "gdn/kernels/prefill_fast_wgmma.cuh"
#include "gdn/kernels/prefill_fast_profile.cuh"
#include "gdn/kernels/prefill_state_io.cuh"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels::fast {

__device__ __forceinline__ std::int64_t read_offset(const void* offsets, bool is_int64, int i) {
  return is_int64 ? static_cast<const std::int64_t*>(offsets)[i] : static_cast<const std::int32_t*>(offsets)[i];
}

// The token range of a work item (row, head): row is a sequence, or with the context-parallel
// segment hooks one segment of sequence `seq` (the chunked kernel's SegmentSpan, commit 9298e8d).
// Empty (or invalid offsets) means: skip, touch nothing. seq_begin is where checkpoints count from.
struct WorkItem {
  int seq = 0, head = 0;
  std::int64_t row = 0, bos = 0, eos = 0, seq_begin = 0;
  bool ends_sequence = true;
  __device__ __forceinline__ static std::int64_t rows(const PrefillParams& p) {
    return p.segment_offsets != nullptr ? p.num_segments : p.num_seqs;
  }
  __device__ __forceinline__ static WorkItem of(const PrefillParams& p, std::int64_t item) {
    WorkItem w;
    w.row = item / p.num_state_heads;
    w.head = static_cast<int>(item % p.num_state_heads);
    const int row = static_cast<int>(w.row);
    if (p.segment_offsets == nullptr) {
      w.seq = row;
      w.bos = w.seq_begin = read_offset(p.cu_seqlens, p.offsets_are_int64, row);
      w.eos = read_offset(p.cu_seqlens, p.offsets_are_int64, row + 1);
      return w;
    }
    w.seq = p.segment_sequence[row];
    w.bos = w.seq_begin = read_offset(p.segment_offsets, p.offsets_are_int64, row);
    w.eos = read_offset(p.segment_offsets, p.offsets_are_int64, row + 1);
    w.ends_sequence = false;
    if (w.seq < 0 || w.seq >= p.num_seqs) {  // not a sequence: empty
      w.eos = w.bos;
      return w;
    }
    w.seq_begin = read_offset(p.cu_seqlens, p.offsets_are_int64, w.seq);
    w.ends_sequence = w.eos == read_offset(p.cu_seqlens, p.offsets_are_int64, w.seq + 1);
    return w;
  }
  __device__ __forceinline__ bool empty(const PrefillParams& p) const { return bos < 0 || eos <= bos || eos > p.total_tokens; }
  __device__ __forceinline__ int chunk_len(std::int64_t token0) const {
    return static_cast<int>(eos - token0 < FastConfig::kChunk ? eos - token0 : FastConfig::kChunk);
  }
};

// The head of `heads` (q, k or v heads) that state head `head` reads: its coordinate in the tensor
// map, 0 where the head stride is 0 (every head the same rows; the launch maps one head then).
__device__ __forceinline__ int input_head(int head, int heads, const PrefillParams& p, std::int64_t stride_head) {
  return stride_head == 0 ? 0 : head * heads / p.num_state_heads;
}

// The producer's walk over this CTA's chunks (the consumers walk the same sequence with loops).
// The item's input heads are computed once per item (three integer divisions per chunk were ~9 %
// of the producer's stall samples: H200 ncu, session 8).
struct ChunkCursor {
  std::int64_t item, num_items, token0 = 0;
  WorkItem w;
  int q_head = 0, k_head = 0, v_head = 0;
  bool valid = false;
  __device__ __forceinline__ ChunkCursor(const PrefillParams& p, std::int64_t items) : item(blockIdx.x), num_items(items) {
    seek(p);
  }
  __device__ __forceinline__ void seek(const PrefillParams& p) {
    for (valid = false; item < num_items; item += gridDim.x) {
      w = WorkItem::of(p, item);
      if (!w.empty(p)) {
        token0 = w.bos;
        q_head = input_head(w.head, p.num_q_heads, p, p.q_stride_head);
        k_head = input_head(w.head, p.num_k_heads, p, p.k_stride_head);
        v_head = input_head(w.head, p.num_v_heads, p, p.v_stride_head);
        valid = true;
        return;
      }
    }
  }
  __device__ __forceinline__ void advance(const PrefillParams& p) {
    token0 += FastConfig::kChunk;
    if (token0 >= w.eos) {
      item += gridDim.x;
      seek(p);
    }
  }
};

// The row of the chunk at token0 of item w in the precomputed T tables (the row rule of
// PrefillParams::chunk_inverse); false for a chunk of a CP segment past the plan (it solves).
__device__ __forceinline__ bool precomputed_row_of(const PrefillParams& p, const WorkItem& w, std::int64_t token0,
                                                   std::int64_t& row) {
  const std::int64_t chunk = (token0 - w.bos) / FastConfig::kChunk;
  if (p.segment_offsets != nullptr) {
    if (chunk >= p.chunk_inverse_segment_blocks) return false;
    row = w.row * p.chunk_inverse_segment_blocks + chunk;
  } else {
    row = w.bos / FastConfig::kChunk + w.row + chunk;
  }
  return true;
}

// The precomputed Tinv of the chunk at token0 of item w, or nullptr. Producer and consumers both
// ask (the consumers build T_g where it is loaded).
__device__ __forceinline__ const float* chunk_inverse_of(const PrefillParams& p, const WorkItem& w, std::int64_t token0) {
  if (p.chunk_inverse == nullptr) return nullptr;
  std::int64_t row;
  if (!precomputed_row_of(p, w, token0, row)) return nullptr;
  return p.chunk_inverse + (row * p.num_state_heads + w.head) * (FastConfig::kChunk * FastConfig::kChunk);
}

// The precomputed T_g hi + lo of the chunk at token0 of item w (PrefillParams::chunk_t_gated), or
// nullptr.
template <class Element>
__device__ __forceinline__ const Element* chunk_t_gated_of(const PrefillParams& p, const WorkItem& w, std::int64_t token0) {
  if (p.chunk_t_gated == nullptr) return nullptr;
  std::int64_t row;
  if (!precomputed_row_of(p, w, token0, row)) return nullptr;
  return static_cast<const Element*>(p.chunk_t_gated) + (row * p.num_state_heads + w.head) * (2 * FastConfig::kChunk * FastConfig::kChunk);
}

// How the consumers get a chunk ready: T_g precomputed (they compute P), Tinv loaded (they build
// T_g and compute P), or everything done by the producer (it solved T).
template <TSource kSource>
__device__ __forceinline__ ConsumerPrep consumer_prep_of(const PrefillParams& p, const WorkItem& w, std::int64_t token0) {
  if constexpr (kSource == TSource::kTGated) return ConsumerPrep::kP;
  if constexpr (kSource == TSource::kSolve) return ConsumerPrep::kNone;
  if constexpr (kSource == TSource::kTGatedOrSolve)  // the element type does not matter for the row
    return chunk_t_gated_of<std::uint16_t>(p, w, token0) != nullptr ? ConsumerPrep::kP : ConsumerPrep::kNone;
  return chunk_inverse_of(p, w, token0) != nullptr ? ConsumerPrep::kTGatedAndP : ConsumerPrep::kNone;
}

template <class Element, TSource kSource>
__device__ __forceinline__ ChunkSource chunk_source(const PrefillParams& p, const ChunkCursor& c) {
  const std::int64_t t0 = c.token0;
  return ChunkSource{c.q_head, c.k_head, c.v_head, t0, c.w.chunk_len(t0), c.w.head,
                     kSource == TSource::kInverseOrSolve ? chunk_inverse_of(p, c.w, t0) : nullptr,
                     kSource == TSource::kTGated || kSource == TSource::kTGatedOrSolve ? chunk_t_gated_of<Element>(p, c.w, t0)
                                                                                       : nullptr};
}

// Whether the producer of kSource's kernel loaded the chunk's T (else it solves it).
template <TSource kSource>
__device__ __forceinline__ bool loads_t(const ChunkSource& source) {
  if constexpr (kSource == TSource::kTGated) return true;
  if constexpr (kSource == TSource::kSolve) return false;
  return source.loaded();
}

// The loads of chunk n + 1 are issued (into the other stage, once the consumers released it)
// between A0/P and the inverse of chunk n, so their latency hides behind the solve.
template <InputType kType, TSource kSource>
__device__ __forceinline__ void run_producer(const PrefillParams& p, const FastTensorMaps& maps, unsigned char* smem,
                             std::uint64_t* full, std::uint64_t* empty, std::uint64_t* loaded,
                             std::int64_t num_items, unsigned long long* profile) {
  using Element = typename Operand<kType>::Element;
  constexpr std::uint32_t kStages = FastConfig::kStages;
  const int ptid = threadIdx.x - FastConfig::kConsumerThreads;
  PhaseTimer timer(profile, ptid == 0);
  ChunkCursor cur(p, num_items);
  if (!cur.valid) return;
  const ChunkSource first = chunk_source<Element, kSource>(p, cur);
  bool loaded_inverse = loads_t<kSource>(first);
  issue_tile_loads<Element>(smem, first, p, maps, &loaded[0], ptid);
  std::uint32_t n = 0;
  for (; cur.valid; ++n) {
    unsigned char* stage = smem + (n % kStages) * FastSmem::kStageBytes;
    // A compile-time constant where the instantiation fixes it (else the T_g-loaded producer
    // carried the dead solve code, which cost registers).
    const bool t_loaded = kSource == TSource::kTGated || (kSource != TSource::kSolve && loaded_inverse);
    timer.tick(kProducerOther);
    prepare_chunk<kType>(p, cur.w.chunk_len(cur.token0), t_loaded, stage, smem, &loaded[n % kStages], (n / kStages) & 1,
                         ptid, timer);
    // With T loaded nothing is left to finish: hand the stage over before waiting for a free one
    // (H200, session 3 batch 3: arriving only after the next loads were issued made the consumers
    // wait ~6.6k cycles per chunk for the producer's empty-wait + issue).
    if (t_loaded) {
      finish_chunk<kType>(true, stage, smem, ptid, timer);
      fence_proxy_async_shared();  // the stage's k, v zeroing, L2 norm and T_g (cp.async) are read by wgmma
      mbarrier_arrive(&full[n % kStages]);
    }
    ChunkCursor next = cur;
    next.advance(p);
    bool next_loaded_inverse = false;
    if (next.valid) {
      const std::uint32_t m = n + 1;
      if (m >= kStages) mbarrier_wait(&empty[m % kStages], (m / kStages + 1) & 1);
      timer.tick(kProducerWait);
      const ChunkSource source = chunk_source<Element, kSource>(p, next);
      next_loaded_inverse = loads_t<kSource>(source);
      issue_tile_loads<Element>(smem + (m % kStages) * FastSmem::kStageBytes, source, p, maps, &loaded[m % kStages], ptid);
    }
    timer.tick(kProducerIssue);
    if (!t_loaded) {
      finish_chunk<kType>(false, stage, smem, ptid, timer);
      fence_proxy_async_shared();  // and T_g, P written here
      mbarrier_arrive(&full[n % kStages]);
    }
    timer.count(kProducerChunks);
    cur = next;
    loaded_inverse = next_loaded_inverse;
  }
}

template <InputType kType, TSource kSource>
__device__ __forceinline__ void run_consumer(const PrefillParams& p, const FastTensorMaps& maps, unsigned char* smem,
                             std::uint64_t* full, std::uint64_t* empty, std::int64_t num_items,
                             unsigned long long* profile) {
  using Element = typename Operand<kType>::Element;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const LaneCoords lc;
  PhaseTimer timer(profile, threadIdx.x == 0);
  std::uint32_t chunk_count = 0;
  for (std::int64_t item = blockIdx.x; item < num_items; item += gridDim.x) {
    const WorkItem w = WorkItem::of(p, item);
    if (w.empty(p)) continue;
    const std::int64_t slot = p.state_indices ? p.state_indices[w.seq] : w.seq;
    StateFragment state;
    if (p.segment_offsets != nullptr) {  // a CP segment starts from its fixed-up state
      load_segment_state(state, p.segment_states, w.row, w.head, p.num_state_heads, warp, lc);
    } else if (p.initial_state.data != nullptr && slot >= 0 && slot < p.initial_state.num_slots) {
      load_state(state, p.initial_state, slot, w.head, warp, lc);
    } else {
      zero(state);
    }
    Element* out_head = static_cast<Element*>(p.output) + static_cast<std::int64_t>(w.head) * p.out_stride_head;
    for (std::int64_t token0 = w.bos; token0 < w.eos; token0 += FastConfig::kChunk, ++chunk_count) {
      const int s = chunk_count % FastConfig::kStages;
      timer.tick(kConsumerOther);
      mbarrier_wait(&full[s], (chunk_count / FastConfig::kStages) & 1);
      timer.tick(kConsumerWait);
      const int len = w.chunk_len(token0);
      const ChunkOutput out{out_head + token0 * p.out_stride_token, p.out_stride_token, len, p.scale,
                            maps.output_by_tma != 0 ? &maps.o : nullptr, w.head, static_cast<int>(token0)};
      const ConsumerPrep prep = consumer_prep_of<kSource>(p, w, token0);
      if constexpr (FastConfig::wgmma_consumers(kSource)) {
        start_parts(smem + FastSmem::kPartClock);
        consume_chunk_wgmma<kType, FastConfig::warpgroup_p(kSource)>(state, smem + s * FastSmem::kStageBytes, smem, out, prep, warp, lane);
      } else {
        consume_chunk<kType>(state, smem + s * FastSmem::kStageBytes, smem, out, prep, warp, lane);
      }
      timer.tick(kConsumerCompute);
      timer.count(kConsumerChunks);
      mbarrier_arrive(&empty[s]);
      const std::int64_t done = token0 + len - w.seq_begin;  // checkpoints count from the sequence start
      if (p.checkpoint_every > 0 && done % p.checkpoint_every == 0) {
        const std::int64_t first = read_offset(p.checkpoint_starts, p.offsets_are_int64, w.seq);
        const std::int64_t end = read_offset(p.checkpoint_starts, p.offsets_are_int64, w.seq + 1);
        const std::int64_t row = first + done / p.checkpoint_every - 1;
        if (row >= 0 && row < end && row < p.checkpoints.num_slots) store_state(state, p.checkpoints, row, w.head, warp, lc);
      }
    }
    if (w.ends_sequence && p.output_state.data != nullptr && slot >= 0 && slot < p.output_state.num_slots)
      store_state(state, p.output_state, slot, w.head, warp, lc);
  }
}

// The 16x16 blocks above the diagonal of both stages' T_g hi, lo and P tiles, zeroed once: the
// consumers' wgmma products run full n64 steps over those tiles, and nothing writes these blocks
// later (T_g and P are written or loaded on and below the diagonal only, or as whole tiles with
// zeros above it: write_t_gated).
__device__ __forceinline__ void zero_upper_blocks(unsigned char* smem, int tid) {
  constexpr int kVectors = 64 * 8;  // 16-byte vectors of a [64][64] tile
  constexpr int kTiles = 4, kTileOffsets[kTiles] = {FastSmem::kTGated, FastSmem::kTGatedLo, FastSmem::kP, FastSmem::kP1};
  for (int i = tid; i < FastConfig::kStages * kTiles * kVectors; i += FastConfig::kThreads) {
    const int tile = i / kVectors, row = i % kVectors / 8, col = 8 * (i % 8);
    if (col / 16 > row / 16) {
      auto* base = reinterpret_cast<std::uint16_t*>(smem + tile / kTiles * FastSmem::kStageBytes + kTileOffsets[tile % kTiles]);
      *reinterpret_cast<uint4*>(base + swizzled_c(row, col)) = make_uint4(0, 0, 0, 0);
    }
  }
}

// kSource: where this instantiation's chunks get T (the launch picks it from the params); each
// leaves out the code of the others (the solve, the consumers' T_g build).
template <InputType kType, TSource kSource>
__global__ void __launch_bounds__(FastConfig::kThreads, 1) gdn_prefill_fast_kernel(const PrefillParams p,
                                                                                       unsigned long long* profile,
                                                                                       const __grid_constant__ FastTensorMaps maps) {
  // A programmatic dependent launch (CP stage 4) may start before the kernel that writes its
  // inputs has finished; this waits for it (a no-op for an ordinary launch).
  asm volatile("griddepcontrol.wait;" ::: "memory");
  extern __shared__ __align__(1024) unsigned char smem[];
  // The 128-byte swizzle of the wgmma tiles assumes 1024-byte aligned stages.
  if (threadIdx.x == 0 && (smem_address(smem) & 1023) != 0) __trap();
  auto* full = reinterpret_cast<std::uint64_t*>(smem + FastSmem::kBarriers);
  auto* empty = full + FastConfig::kStages;
  auto* loaded = empty + FastConfig::kStages;  // the TMA loads of a stage (one expect_tx arrival)
  if (threadIdx.x == 0) {
    for (int s = 0; s < FastConfig::kStages; ++s) {
      mbarrier_init(&full[s], FastConfig::kProducerThreads);
      mbarrier_init(&empty[s], FastConfig::kConsumerThreads);
      mbarrier_init(&loaded[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the async proxy (TMA)
    if constexpr (kPartProfile)
      reinterpret_cast<PartClock*>(smem + FastSmem::kPartClock)->profile = blockIdx.x == 0 ? profile : nullptr;
  }
  if constexpr (FastConfig::wgmma_consumers(kSource)) {
    zero_upper_blocks(smem, threadIdx.x);
    fence_proxy_async_shared();  // the zeros are read by wgmma
  }
  __syncthreads();
  const std::int64_t num_items = WorkItem::rows(p) * p.num_state_heads;
  // The role as a warp-uniform value (a shuffle), so the compiler sees the consumers' wgmma on a
  // non-divergent path (else ptxas serialises them: C7520).
  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
  if (warpgroup >= FastConfig::kConsumerThreads / 128) {
    if constexpr (FastConfig::wgmma_consumers(kSource))
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(FastConfig::kProducerRegisters));
    run_producer<kType, kSource>(p, maps, smem, full, empty, loaded, num_items, profile);
  } else {
    if constexpr (FastConfig::wgmma_consumers(kSource))
      asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(FastConfig::kConsumerRegisters));
    run_consumer<kType, kSource>(p, maps, smem, full, empty, num_items, profile);
  }
}

}  // namespace fastinfer::gdn::kernels::fast
