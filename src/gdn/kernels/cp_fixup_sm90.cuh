#pragma once
// CP stage 3: the serial fix-up over the map pieces of each (sequence, head) (the chunks, or
// map_splits pieces of each),
//     H_q = H_{q-1} M_q + B_q,   H_0 = initial state (packed, pool slot, or zero),
// writing the state entering every chunk (fp32) for stage 4. Rows of H evolve independently, so
// each (sequence, head) is split across kFixupRowGroups CTAs of kFixupRows rows; each step is an
// fp32 (8 x 128) x (128 x 128) product with M_c streamed from L2 (the row groups share it).
// Stage 3 also writes the segment table stage 4 reads (segment = one CP chunk).
#include "gdn/cp_launch.h"
#include "gdn/kernels/affine_step_sm90.cuh"
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

inline constexpr int kFixupRows = 8;
inline constexpr int kFixupRowGroups = kD / kFixupRows;  // 16 CTAs per (sequence, head): unmeasured
inline constexpr int kFixupThreads = 128;                // 16 threads per row, 8 columns each

__device__ inline float load_state_element(const void* base, CpStateType type, std::int64_t i) {
  switch (type) {
    case CpStateType::kFloat32: return static_cast<const float*>(base)[i];
    case CpStateType::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case CpStateType::kFloat16: return __half2float(static_cast<const __half*>(base)[i]);
  }
  return 0.f;
}

__global__ void __launch_bounds__(kFixupThreads) fixup_kernel(const CpStageParams p) {
  __shared__ alignas(16) float rows_k[kFixupRows][kD];
  // Half of M_c at a time, loaded by all threads at once: one L2 round trip per half instead of
  // one per few rows of k (the step was latency-bound at ~16 us on the H200).
  __shared__ alignas(16) float m_half[kD / 2][kD];
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
  const int r = threadIdx.x / 16, j0 = (threadIdx.x % 16) * 8, row = group * kFixupRows + r;

  float state[8];
  const int slot = p.state_indices ? p.state_indices[n] : n;
  if (p.initial_state != nullptr && slot >= 0 && slot < p.initial_state_num_slots) {
    const std::int64_t base = slot * p.initial_state_slot_stride + (static_cast<std::int64_t>(h) * kD + row) * kD + j0;
#pragma unroll
    for (int j = 0; j < 8; ++j) state[j] = load_state_element(p.initial_state, p.initial_state_type, base + j);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) state[j] = 0.f;
  }

  for (int q = 0; q < pieces; ++q) {
    if (q % splits == 0) {
      const int c = q / splits;
      const std::int64_t chunk_row = static_cast<std::int64_t>(n) * p.chunks_per_seq + c;
      float* entering = p.chunk_states + (chunk_row * p.num_state_heads + h) * kD * kD + row * kD + j0;
      *reinterpret_cast<float4*>(entering) = make_float4(state[0], state[1], state[2], state[3]);
      *reinterpret_cast<float4*>(entering + 4) = make_float4(state[4], state[5], state[6], state[7]);
      if (c == chunks - 1 && p.final_states == nullptr) break;
    }
    const std::int64_t map =
        ((static_cast<std::int64_t>(n) * p.chunks_per_seq * splits + q) * p.num_state_heads + h) * kD * kD;
    __syncthreads();  // the previous step's reads of rows_k are done
#pragma unroll
    for (int j = 0; j < 8; ++j) rows_k[r][j0 + j] = state[j];
    __syncthreads();
    const float* b = p.map_b + map + row * kD + j0;
    const float4 b0 = *reinterpret_cast<const float4*>(b), b1 = *reinterpret_cast<const float4*>(b + 4);
    float next[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
    accumulate_row_times_map<kFixupThreads>(rows_k, m_half, reinterpret_cast<const float4*>(p.map_m + map), r, j0, next);
#pragma unroll
    for (int j = 0; j < 8; ++j) state[j] = next[j];
  }
  if (p.final_states != nullptr) {
    float* out = p.final_states + ((static_cast<std::int64_t>(n) * p.num_state_heads + h) * kD + row) * kD + j0;
    *reinterpret_cast<float4*>(out) = make_float4(state[0], state[1], state[2], state[3]);
    *reinterpret_cast<float4*>(out + 4) = make_float4(state[4], state[5], state[6], state[7]);
  }
}

}  // namespace fastinfer::gdn::detail::cp

namespace fastinfer::gdn::detail {
inline void launch_cp_fixup_impl(const CpStageParams& params, cudaStream_t stream) {
  const dim3 grid(cp::kFixupRowGroups, params.num_state_heads, params.num_seqs);
  cp::launch_stage(cp::fixup_kernel, grid, dim3(cp::kFixupThreads), 0, stream, params.programmatic_launch, params);
}
}  // namespace fastinfer::gdn::detail
