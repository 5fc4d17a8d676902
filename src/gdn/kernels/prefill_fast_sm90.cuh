#pragma once
// The warp-specialised GDN prefill kernel (docs/GDN_PREFILL_FAST.md). A persistent CTA of 12 warps
// walks work items (sequence, state head) item = blockIdx.x, + gridDim.x, ... and their 64-token
// chunks:
//   warps 0-7  (consumers) hold the 128x128 fp32 state in registers, warp w rows 16w .. 16w+15,
//              and run the state-dependent products of chunk c (prefill_fast_consumer.cuh);
//   warps 8-11 (producer)  prepare chunk c+1 meanwhile: loads, gates, A0, P, T, T_g
//              (prefill_fast_producer.cuh), into the other of two shared-memory stages.
// Stage s hand-off: full[s] (128 producer arrivals) and empty[s] (256 consumer arrivals)
// mbarriers; both roles count chunks identically, so the n-th use of stage n % 2 waits for
// parity (n / 2) & 1.
#include <cuda_runtime.h>

#include <cstdint>

#include "gdn/kernels/prefill_fast_consumer.cuh"
#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"
#include "gdn/kernels/prefill_fast_producer.cuh"
#include "gdn/kernels/prefill_state_io.cuh"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels::fast {

__device__ __forceinline__ std::int64_t read_offset(const void* offsets, bool is_int64, int i) {
  return is_int64 ? static_cast<const std::int64_t*>(offsets)[i] : static_cast<const std::int32_t*>(offsets)[i];
}

// The token range of a work item; empty (or invalid offsets) means: skip, touch nothing.
struct WorkItem {
  int seq, head;
  std::int64_t bos, eos;
  __device__ __forceinline__ WorkItem(const PrefillParams& p, std::int64_t item)
      : seq(static_cast<int>(item / p.num_state_heads)), head(static_cast<int>(item % p.num_state_heads)) {
    bos = read_offset(p.cu_seqlens, p.offsets_are_int64, seq);
    eos = read_offset(p.cu_seqlens, p.offsets_are_int64, seq + 1);
  }
  __device__ __forceinline__ bool empty(const PrefillParams& p) const { return bos < 0 || eos <= bos || eos > p.total_tokens; }
  __device__ __forceinline__ int chunk_len(std::int64_t token0) const {
    return static_cast<int>(eos - token0 < FastConfig::kChunk ? eos - token0 : FastConfig::kChunk);
  }
};

template <class Element>
__device__ __forceinline__ const Element* head_rows(const void* base, int head, int heads, const PrefillParams& p,
                                                    std::int64_t stride_head) {
  return static_cast<const Element*>(base) + static_cast<std::int64_t>(head) * heads / p.num_state_heads * stride_head;
}

template <InputType kType>
__device__ void run_producer(const PrefillParams& p, unsigned char* smem, std::uint64_t* full, std::uint64_t* empty,
                             std::int64_t num_items) {
  using Element = typename Operand<kType>::Element;
  const int ptid = threadIdx.x - FastConfig::kConsumerThreads;
  std::uint32_t chunk_count = 0;
  for (std::int64_t item = blockIdx.x; item < num_items; item += gridDim.x) {
    const WorkItem w(p, item);
    if (w.empty(p)) continue;
    const Element* q = head_rows<Element>(p.q, w.head, p.num_q_heads, p, p.q_stride_head);
    const Element* k = head_rows<Element>(p.k, w.head, p.num_k_heads, p, p.k_stride_head);
    const Element* v = head_rows<Element>(p.v, w.head, p.num_v_heads, p, p.v_stride_head);
    for (std::int64_t token0 = w.bos; token0 < w.eos; token0 += FastConfig::kChunk, ++chunk_count) {
      const int s = chunk_count % FastConfig::kStages;
      if (chunk_count >= FastConfig::kStages) mbarrier_wait(&empty[s], (chunk_count / FastConfig::kStages + 1) & 1);
      const ChunkSource src{q + token0 * p.q_stride_token, k + token0 * p.k_stride_token, v + token0 * p.v_stride_token,
                            token0, w.chunk_len(token0), w.head};
      produce_chunk<kType>(p, src, smem + s * FastSmem::kStageBytes, smem, ptid);
      mbarrier_arrive(&full[s]);
    }
  }
}

template <InputType kType>
__device__ void run_consumer(const PrefillParams& p, unsigned char* smem, std::uint64_t* full, std::uint64_t* empty,
                             std::int64_t num_items) {
  using Element = typename Operand<kType>::Element;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const LaneCoords lc;
  std::uint32_t chunk_count = 0;
  for (std::int64_t item = blockIdx.x; item < num_items; item += gridDim.x) {
    const WorkItem w(p, item);
    if (w.empty(p)) continue;
    const std::int64_t slot = p.state_indices ? p.state_indices[w.seq] : w.seq;
    StateFragment state;
    if (p.initial_state.data != nullptr && slot >= 0 && slot < p.initial_state.num_slots) {
      load_state(state, p.initial_state, slot, w.head, warp, lc);
    } else {
      zero(state);
    }
    Element* out_head = static_cast<Element*>(p.output) + static_cast<std::int64_t>(w.head) * p.out_stride_head;
    for (std::int64_t token0 = w.bos; token0 < w.eos; token0 += FastConfig::kChunk, ++chunk_count) {
      const int s = chunk_count % FastConfig::kStages;
      mbarrier_wait(&full[s], (chunk_count / FastConfig::kStages) & 1);
      const int len = w.chunk_len(token0);
      const ChunkOutput out{out_head + token0 * p.out_stride_token, p.out_stride_token, len, p.scale};
      consume_chunk<kType>(state, smem + s * FastSmem::kStageBytes, smem, out, warp, lane);
      mbarrier_arrive(&empty[s]);
      const std::int64_t done = token0 + len - w.bos;
      if (p.checkpoint_every > 0 && done % p.checkpoint_every == 0) {
        const std::int64_t first = read_offset(p.checkpoint_starts, p.offsets_are_int64, w.seq);
        const std::int64_t end = read_offset(p.checkpoint_starts, p.offsets_are_int64, w.seq + 1);
        const std::int64_t row = first + done / p.checkpoint_every - 1;
        if (row >= 0 && row < end && row < p.checkpoints.num_slots) store_state(state, p.checkpoints, row, w.head, warp, lc);
      }
    }
    if (p.output_state.data != nullptr && slot >= 0 && slot < p.output_state.num_slots)
      store_state(state, p.output_state, slot, w.head, warp, lc);
  }
}

template <InputType kType>
__global__ void __launch_bounds__(FastConfig::kThreads, 1) gdn_prefill_fast_kernel(const PrefillParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  auto* full = reinterpret_cast<std::uint64_t*>(smem + FastSmem::kBarriers);
  auto* empty = full + FastConfig::kStages;
  if (threadIdx.x == 0) {
    for (int s = 0; s < FastConfig::kStages; ++s) {
      mbarrier_init(&full[s], FastConfig::kProducerThreads);
      mbarrier_init(&empty[s], FastConfig::kConsumerThreads);
    }
  }
  __syncthreads();
  const std::int64_t num_items = static_cast<std::int64_t>(p.num_seqs) * p.num_state_heads;
  // Registers move from the producer warpgroup to the consumers (state + three fragments):
  // 128 x 104 + 256 x 200 <= 64K.
  if (threadIdx.x >= FastConfig::kConsumerThreads) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(FastConfig::kProducerRegisters));
    run_producer<kType>(p, smem, full, empty, num_items);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(FastConfig::kConsumerRegisters));
    run_consumer<kType>(p, smem, full, empty, num_items);
  }
}

}  // namespace fastinfer::gdn::kernels::fast
