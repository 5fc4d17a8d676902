#pragma once
// CP stage 3: the serial fix-up over the map pieces of each (sequence, head) (the chunks, or
// map_splits pieces of each),
//     H_q = H_{q-1} M_q + B_q,   H_0 = initial state (packed, pool slot, or zero),
// writing the state entering every chunk (fp32) for stage 4. Rows of H evolve independently, so
// each (sequence, head) is split across kFixupRowGroups CTAs of kFixupRows rows; each step is an
// fp32 (32 x 128) x (128 x 128) product with M_q streamed from L2 (the row groups share it).
// Stage 3 also writes the segment table stage 4 reads (segment = one CP chunk).
#include "gdn/cp_launch.h"
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

// 4 CTAs of 32 rows per (sequence, head): every CTA streams all of M_q per step, so the 16 CTAs
// of 8 rows before moved 16 x 64 KB per (sequence, head) and step through L2 (~20 us per step at
// 32 heads on the H200, cp batch 1); now 4 x 64 KB, with both halves of M_q and the B rows
// loaded at the top of the step (one memory round trip per step).
inline constexpr int kFixupRows = 32;
inline constexpr int kFixupRowGroups = kD / kFixupRows;
inline constexpr int kFixupThreads = 256;
inline constexpr int kFixupCols = kD * kFixupRows / kFixupThreads;  // 16 columns of one row per thread
inline constexpr int kFixupQuads = kD / 2 * kD / 4 / kFixupThreads;  // float4s of one half of M per thread

__device__ inline float load_state_element(const void* base, CpStateType type, std::int64_t i) {
  switch (type) {
    case CpStateType::kFloat32: return static_cast<const float*>(base)[i];
    case CpStateType::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case CpStateType::kFloat16: return __half2float(static_cast<const __half*>(base)[i]);
  }
  return 0.f;
}

__device__ inline void store_row_part(float* out, const float (&x)[kFixupCols]) {
#pragma unroll
  for (int j = 0; j < kFixupCols; j += 4) *reinterpret_cast<float4*>(out + j) = make_float4(x[j], x[j + 1], x[j + 2], x[j + 3]);
}

__global__ void __launch_bounds__(kFixupThreads, 1) fixup_kernel(const CpStageParams p) {
  __shared__ alignas(16) float rows_k[kFixupRows][kD];  // 16 KB
  __shared__ alignas(16) float m_half[kD / 2][kD];      // 32 KB: half of M_q, loaded by all threads at once
  const int group = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  wait_for_previous_stage();
  const std::int64_t bos = seq_offset(p, n), eos = seq_offset(p, n + 1);

  if (group == 0 && h == 0 && p.segment_offsets != nullptr) {
    for (int c = threadIdx.x; c <= p.chunks_per_seq; c += kFixupThreads) {
      if (c == p.chunks_per_seq && n != p.num_seqs - 1) continue;  // the closing offset, written once
      const std::int64_t seg = static_cast<std::int64_t>(n) * p.chunks_per_seq + c;
      const std::int64_t off = c == p.chunks_per_seq ? eos : min(bos + static_cast<std::int64_t>(c) * p.chunk_len, eos);
      if (p.offsets_are_int64) static_cast<std::int64_t*>(p.segment_offsets)[seg] = off;
      else static_cast<std::int32_t*>(p.segment_offsets)[seg] = static_cast<std::int32_t>(off);
      if (c < p.chunks_per_seq) p.segment_sequence[seg] = n;
    }
  }
  if (eos <= bos) return;
  // Clamped to the plan: a sequence longer than the caller's max_seqlen hint keeps its tail in the
  // last segment (stage 4 walks it; slower, still exact) instead of overrunning the workspace.
  const int chunks = static_cast<int>(min((eos - bos + p.chunk_len - 1) / p.chunk_len, static_cast<std::int64_t>(p.chunks_per_seq)));
  // Stage 2 cut every chunk into map_splits pieces: one step per piece, the entering state
  // written at every chunk start.
  const int splits = p.map_splits, piece_len = p.chunk_len / splits;
  const int pieces = static_cast<int>(min((eos - bos + piece_len - 1) / piece_len, static_cast<std::int64_t>(p.chunks_per_seq) * splits));
  const int r = threadIdx.x / (kD / kFixupCols), j0 = (threadIdx.x % (kD / kFixupCols)) * kFixupCols;
  const int row = group * kFixupRows + r;

  float state[kFixupCols];
  const int slot = p.state_indices ? p.state_indices[n] : n;
  if (p.initial_state != nullptr && slot >= 0 && slot < p.initial_state_num_slots) {
    const std::int64_t base = slot * p.initial_state_slot_stride + (static_cast<std::int64_t>(h) * kD + row) * kD + j0;
#pragma unroll
    for (int j = 0; j < kFixupCols; ++j) state[j] = load_state_element(p.initial_state, p.initial_state_type, base + j);
  } else {
#pragma unroll
    for (int j = 0; j < kFixupCols; ++j) state[j] = 0.f;
  }

  for (int q = 0; q < pieces; ++q) {
    if (q % splits == 0) {
      const int c = q / splits;
      const std::int64_t chunk_row = static_cast<std::int64_t>(n) * p.chunks_per_seq + c;
      store_row_part(p.chunk_states + (chunk_row * p.num_state_heads + h) * kD * kD + row * kD + j0, state);
      if (c == chunks - 1 && p.final_states == nullptr) break;
    }
    const std::int64_t map =
        ((static_cast<std::int64_t>(n) * p.chunks_per_seq * splits + q) * p.num_state_heads + h) * kD * kD;
    // Every load of the step first: B's part of this thread's row and both halves of M_q.
    float next[kFixupCols];
    const float4* b = reinterpret_cast<const float4*>(p.map_b + map + row * kD + j0);
#pragma unroll
    for (int j = 0; j < kFixupCols / 4; ++j) {
      const float4 v = __ldg(b + j);
      next[4 * j] = v.x, next[4 * j + 1] = v.y, next[4 * j + 2] = v.z, next[4 * j + 3] = v.w;
    }
    const float4* m = reinterpret_cast<const float4*>(p.map_m + map);
    float4 quads[2][kFixupQuads];
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int i = 0; i < kFixupQuads; ++i) quads[half][i] = __ldg(m + half * (kD / 2 * kD / 4) + threadIdx.x + i * kFixupThreads);
    __syncthreads();  // the previous step's reads of rows_k and m_half are done
#pragma unroll
    for (int j = 0; j < kFixupCols; ++j) rows_k[r][j0 + j] = state[j];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      if (half == 1) __syncthreads();  // the first half is no longer read
#pragma unroll
      for (int i = 0; i < kFixupQuads; ++i) reinterpret_cast<float4*>(&m_half[0][0])[threadIdx.x + i * kFixupThreads] = quads[half][i];
      __syncthreads();
#pragma unroll 4
      for (int k = 0; k < kD / 2; ++k) {
        const float hk = rows_k[r][half * (kD / 2) + k];
#pragma unroll
        for (int j = 0; j < kFixupCols; j += 4) {
          const float4 mk = *reinterpret_cast<const float4*>(&m_half[k][j0 + j]);
          next[j] = fmaf(hk, mk.x, next[j]);
          next[j + 1] = fmaf(hk, mk.y, next[j + 1]);
          next[j + 2] = fmaf(hk, mk.z, next[j + 2]);
          next[j + 3] = fmaf(hk, mk.w, next[j + 3]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kFixupCols; ++j) state[j] = next[j];
  }
  if (p.final_states != nullptr)
    store_row_part(p.final_states + ((static_cast<std::int64_t>(n) * p.num_state_heads + h) * kD + row) * kD + j0, state);
}

}  // namespace fastinfer::gdn::detail::cp

namespace fastinfer::gdn::detail {
inline void launch_cp_fixup_impl(const CpStageParams& params, cudaStream_t stream) {
  const dim3 grid(cp::kFixupRowGroups, params.num_state_heads, params.num_seqs);
  cp::launch_stage(cp::fixup_kernel, grid, dim3(cp::kFixupThreads), 0, stream, params.programmatic_launch, params);
}
}  // namespace fastinfer::gdn::detail
