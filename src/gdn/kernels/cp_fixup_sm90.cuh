#pragma once
// CP stage 3: the serial fix-up over the map pieces of each (sequence, head) (the chunks, or
// map_splits pieces of each),
//     H_q = H_{q-1} M_q + B_q,   H_0 = initial state (packed, pool slot, or zero),
// writing the state entering every chunk (fp32) for stage 4. Rows of H evolve independently, so
// each (sequence, head) is split across 128 / kRows CTAs of kRows rows; each step is an fp32
// (kRows x 128) x (128 x 128) product with M_c streamed from L2 (the row groups share it).
// Stage 3 also writes the segment table stage 4 reads (segment = one CP chunk).
#include "gdn/cp_launch.h"
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

// kRows (16 or 32, CpStageParams::fixup_rows) rows per CTA, 128 / kRows CTAs per (sequence, head),
// instead of 16 CTAs of 8 rows (sessions 2-4): each CTA streams all of M_q per step, so fewer row
// groups mean less L2 traffic per step (the 8-row step cost ~0.6 us per head: 21 us at 32 heads,
// H200; 32 rows: ~10 us, 1x128k stage 3 0.259 -> 0.137 ms). The next half of M is in flight while
// the current one is multiplied.
// kRows = 8 (session 8): one row per thread instead of a pair, 128 threads, twice the CTAs of 16
// rows for the same registers (few heads: 8 heads x 16 CTAs still fit one wave).
template <int kRows>
struct Fixup {
  static_assert(kRows == 8 || kRows == 16 || kRows == 32, "row pairs (one row at 8) of 16 threads, 128 / kRows groups");
  static constexpr int kGroups = kD / kRows;
  static constexpr int kRowsPerThread = kRows == 8 ? 1 : 2;  // rows r and r + kRows / 2
  static constexpr int kThreads = 16 * kRows / kRowsPerThread;  // 16 threads per row (pair), 8 columns each
  static constexpr int kQuads = kD / 2 * kD / 4 / kThreads;  // float4 of one half of M per thread
};

__device__ inline float load_state_element(const void* base, CpStateType type, std::int64_t i) {
  switch (type) {
    case CpStateType::kFloat32: return static_cast<const float*>(base)[i];
    case CpStateType::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case CpStateType::kFloat16: return __half2float(static_cast<const __half*>(base)[i]);
  }
  return 0.f;
}

// Thread (r, j0) owns columns j0..j0+7 of rows r and r + kRows / 2 of its group: per k one broadcast
// value of each row and two float4 of M's row k (16 threads of a row pair read 16 different float4
// pairs 32 bytes apart: conflict-free), 16 fmaf. Each element is B + sum_k x_k M[k][j] with k
// ascending, one fmaf per term: the bits of accumulate_row_times_map (dist's affine chain).
template <int kRows>
__global__ void __launch_bounds__(Fixup<kRows>::kThreads) fixup_kernel(const CpStageParams p) {
  constexpr int kFixupThreads = Fixup<kRows>::kThreads, kFixupQuads = Fixup<kRows>::kQuads, kHalfRows = kRows / 2;
  constexpr int kR = Fixup<kRows>::kRowsPerThread;
  __shared__ alignas(16) float rows_k[kRows][kD];   // the entering state of the group's rows
  __shared__ alignas(16) float m_half[kD / 2][kD];       // half of M_q
  const int group = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  wait_for_previous_stage();
  const std::int64_t bos = seq_offset(p, n), eos = seq_offset(p, n + 1);

  if (group == 0 && h == 0 && p.segment_offsets != nullptr) {
    // Past the plan: the last segment runs to the sequence end (beyond the T_g rows of stage 1).
    const bool past_plan = eos - bos > static_cast<std::int64_t>(p.chunks_per_seq) * p.chunk_len;
    for (int c = threadIdx.x; c <= p.chunks_per_seq; c += kFixupThreads) {
      if (c == p.chunks_per_seq && n != p.num_seqs - 1) continue;  // the closing offset, written once
      const std::int64_t seg = static_cast<std::int64_t>(n) * p.chunks_per_seq + c;
      const std::int64_t off = c == p.chunks_per_seq ? eos : min(bos + static_cast<std::int64_t>(c) * p.chunk_len, eos);
      if (p.offsets_are_int64) static_cast<std::int64_t*>(p.segment_offsets)[seg] = off;
      else static_cast<std::int32_t*>(p.segment_offsets)[seg] = static_cast<std::int32_t>(off);
      if (c < p.chunks_per_seq) {
        const bool tail = p.tail_segment_sequence != nullptr && past_plan && c == p.chunks_per_seq - 1;
        p.segment_sequence[seg] = tail ? -1 : n;
        if (p.tail_segment_sequence != nullptr) p.tail_segment_sequence[seg] = tail ? n : -1;
      }
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
  const int r = threadIdx.x / 16, j0 = (threadIdx.x % 16) * 8;
  const int row[2] = {group * kRows + r, group * kRows + r + kHalfRows};  // row[1] only with row pairs

  float state[kR][8];
  const int slot = p.state_indices ? p.state_indices[n] : n;
  const bool has_state = p.initial_state != nullptr && slot >= 0 && slot < p.initial_state_num_slots;
#pragma unroll
  for (int i = 0; i < kR; ++i) {
    const std::int64_t base = slot * p.initial_state_slot_stride + (static_cast<std::int64_t>(h) * kD + row[i]) * kD + j0;
#pragma unroll
    for (int j = 0; j < 8; ++j) state[i][j] = has_state ? load_state_element(p.initial_state, p.initial_state_type, base + j) : 0.f;
  }
  auto map_offset = [&](int q) {
    return ((static_cast<std::int64_t>(n) * p.chunks_per_seq * splits + q) * p.num_state_heads + h) * kD * kD;
  };
  // Half `half` of M_q into registers (issued early, stored to shared memory later).
  float4 quads[kFixupQuads];
  auto load_half = [&](int q, int half) {
    const float4* m = reinterpret_cast<const float4*>(p.map_m + map_offset(q)) + half * (kD / 2 * kD / 4);
#pragma unroll
    for (int i = 0; i < kFixupQuads; ++i) quads[i] = __ldg(m + threadIdx.x + i * kFixupThreads);
  };
  auto write_state = [&](float* base) {
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      float* out = base + row[i] * kD + j0;
      *reinterpret_cast<float4*>(out) = make_float4(state[i][0], state[i][1], state[i][2], state[i][3]);
      *reinterpret_cast<float4*>(out + 4) = make_float4(state[i][4], state[i][5], state[i][6], state[i][7]);
    }
  };

  if (pieces > 0) load_half(0, 0);
  for (int q = 0; q < pieces; ++q) {
    if (q % splits == 0) {
      const int c = q / splits;
      const std::int64_t chunk_row = static_cast<std::int64_t>(n) * p.chunks_per_seq + c;
      write_state(p.chunk_states + (chunk_row * p.num_state_heads + h) * kD * kD);
      if (c == chunks - 1 && p.final_states == nullptr) break;
    }
    const std::int64_t map = map_offset(q);
    float next[kR][8];
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      const float* b = p.map_b + map + row[i] * kD + j0;
      const float4 b0 = __ldg(reinterpret_cast<const float4*>(b)), b1 = __ldg(reinterpret_cast<const float4*>(b + 4));
      next[i][0] = b0.x, next[i][1] = b0.y, next[i][2] = b0.z, next[i][3] = b0.w;
      next[i][4] = b1.x, next[i][5] = b1.y, next[i][6] = b1.z, next[i][7] = b1.w;
    }
#pragma unroll 1
    for (int half = 0; half < 2; ++half) {
      __syncthreads();  // the previous half (or step) is no longer read from m_half and rows_k
      if (half == 0) {
#pragma unroll
        for (int i = 0; i < kR; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j) rows_k[r + kHalfRows * i][j0 + j] = state[i][j];
      }
#pragma unroll
      for (int i = 0; i < kFixupQuads; ++i) reinterpret_cast<float4*>(&m_half[0][0])[threadIdx.x + i * kFixupThreads] = quads[i];
      __syncthreads();
      // The next half of M (this step's second, or the next step's first) loads behind the products.
      if (half == 0) load_half(q, 1);
      else if (q + 1 < pieces) load_half(q + 1, 0);
#pragma unroll 8
      for (int k = 0; k < kD / 2; ++k) {
        const float4 m0 = *reinterpret_cast<const float4*>(&m_half[k][j0]);
        const float4 m1 = *reinterpret_cast<const float4*>(&m_half[k][j0 + 4]);
#pragma unroll
        for (int i = 0; i < kR; ++i) {
          const float xk = rows_k[r + kHalfRows * i][half * (kD / 2) + k];
          next[i][0] = fmaf(xk, m0.x, next[i][0]);
          next[i][1] = fmaf(xk, m0.y, next[i][1]);
          next[i][2] = fmaf(xk, m0.z, next[i][2]);
          next[i][3] = fmaf(xk, m0.w, next[i][3]);
          next[i][4] = fmaf(xk, m1.x, next[i][4]);
          next[i][5] = fmaf(xk, m1.y, next[i][5]);
          next[i][6] = fmaf(xk, m1.z, next[i][6]);
          next[i][7] = fmaf(xk, m1.w, next[i][7]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kR; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) state[i][j] = next[i][j];
  }
  if (p.final_states != nullptr) write_state(p.final_states + (static_cast<std::int64_t>(n) * p.num_state_heads + h) * kD * kD);
}

}  // namespace fastinfer::gdn::detail::cp

namespace fastinfer::gdn::detail {
inline void launch_cp_fixup_impl(const CpStageParams& params, cudaStream_t stream) {
  auto launch = [&](auto rows) {
    using F = cp::Fixup<decltype(rows)::value>;
    const dim3 grid(F::kGroups, params.num_state_heads, params.num_seqs);
    cp::launch_stage(cp::fixup_kernel<decltype(rows)::value>, grid, dim3(F::kThreads), 0, stream, params.programmatic_launch, params);
  };
  if (params.fixup_rows == 8) launch(std::integral_constant<int, 8>{});
  else if (params.fixup_rows == 16) launch(std::integral_constant<int, 16>{});
  else launch(std::integral_constant<int, 32>{});
}
}  // namespace fastinfer::gdn::detail
