#pragma once
// The GDN prefill kernel: one CTA of 8 warps per (sequence, state head) walks the sequence in
// 64-token chunks with the 128x128 fp32 state in registers (warp w owns state rows 16w..16w+15).
// Per chunk (docs/GDN_PREFILL.md writes the math out; src/ref/gdn_ref.cpp mirrors it in fp32):
//   1. load q, k, v (zero-padded past the sequence end), optional L2 norm, gates -> G = cumsum log alpha
//   2. A0 = strict_lower(diag(beta) K K^T) (warps 0-3), P = (Q K^T) o Gamma, lower incl. diag (warps 4-7),
//      K^T (the B operand of the state update)
//   3. T = (I + A0)^-1 on chip (fp32), T_g = T diag(beta) o Gamma as hi + lo operand pair
//   4. [Q; K] S^T against the state rounded to the operand type; X = V - diag(e^G) K S^T as hi + lo
//   5. U = T_g X in three products (hi hi, hi lo, lo hi; warps 4-7); O = scale (diag(e^G) Q S^T + P U)
//      (warps 0-3)
//   6. S = e^{G_last} S + (diag(e^{G_last - G}) U)^T K with the decayed U as hi + lo, checkpoints,
//      S rounded into shared memory
// Tensor-core products use mma.sync 16x8x16 (CuTe SM80 atoms); everything else is fp32.
// Numerics (docs/GDN_PREFILL.md "Numerics"): the operands that feed the state (T_g, X, the decayed
// U) are split into hi + lo 16-bit pairs, so the state keeps ~16 mantissa bits per chunk instead
// of 8; with single roundings, bf16 final states missed FlashInfer's 5e-3 tolerance at alpha ~ 1.
#include <cuda_runtime.h>

#include <cstdint>

#include "gdn/kernels/prefill_fragments.cuh"
#include "gdn/kernels/prefill_state_io.cuh"
#include "gdn/kernels/prefill_tri_inverse.cuh"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels {

struct ChunkedConfig {
  static constexpr int kChunk = 64;
  static constexpr int kDim = 128;
  static constexpr int kWarps = 8;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kPitchD = kDim + 8;    // 16-bit tiles with 128 columns
  static constexpr int kPitchC = kChunk + 8;  // 16-bit tiles with 64 columns
  static constexpr float kMinLogAlpha = -80.0f;  // must equal ref::kMinLogAlpha
};

// Shared-memory layout in bytes (16-bit element tiles, then fp32 tiles); the solve tiles (A0, T)
// and the apply tiles (X^T, U^T, decayed U^T; hi and lo) are never live at the same time and share
// one region.
struct ChunkedSmem {
  using Cfg = ChunkedConfig;
  static constexpr int kTileDBytes = Cfg::kChunk * Cfg::kPitchD * 2;  // [64][136]
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + kTileDBytes;
  static constexpr int kV = kK + kTileDBytes;
  static constexpr int kState = kV + kTileDBytes;                            // [128 V][136]
  static constexpr int kKT = kState + Cfg::kDim * Cfg::kPitchD * 2;         // [128 K][72]
  static constexpr int kTGated = kKT + Cfg::kDim * Cfg::kPitchC * 2;         // [64][72]
  static constexpr int kTGatedLo = kTGated + Cfg::kChunk * Cfg::kPitchC * 2;  // [64][72]
  static constexpr int kPMasked = kTGatedLo + Cfg::kChunk * Cfg::kPitchC * 2;  // [64][72]
  static constexpr int kShared = kPMasked + Cfg::kChunk * Cfg::kPitchC * 2;
  static constexpr int kA0 = kShared;                                          // fp32 [64][65]
  static constexpr int kInverse = kA0 + TriInverse::kSize * TriInverse::kPitch * 4;
  static constexpr int kScratch = kInverse + TriInverse::kSize * TriInverse::kPitch * 4;
  static constexpr int kSolveEnd = kScratch + TriInverse::kScratchFloats * 4;
  static constexpr int kXT = kShared;                                          // [128 V][72] each
  static constexpr int kXLoT = kXT + Cfg::kDim * Cfg::kPitchC * 2;
  static constexpr int kUT = kXLoT + Cfg::kDim * Cfg::kPitchC * 2;
  static constexpr int kUDecayedT = kUT + Cfg::kDim * Cfg::kPitchC * 2;
  static constexpr int kUDecayedLoT = kUDecayedT + Cfg::kDim * Cfg::kPitchC * 2;
  static constexpr int kApplyEnd = kUDecayedLoT + Cfg::kDim * Cfg::kPitchC * 2;
  static constexpr int kG = (kSolveEnd > kApplyEnd ? kSolveEnd : kApplyEnd);
  static constexpr int kBeta = kG + Cfg::kChunk * 4;
  static constexpr int kBytes = kBeta + Cfg::kChunk * 4;
  static_assert(kBytes <= 227 * 1024, "exceeds the sm_90 shared memory per block");
  static_assert(kQ % 16 == 0 && kK % 16 == 0 && kV % 16 == 0 && kState % 16 == 0 && kShared % 16 == 0);
};

__device__ __forceinline__ std::int64_t read_offset(const void* offsets, bool is_int64, int i) {
  return is_int64 ? static_cast<const std::int64_t*>(offsets)[i] : static_cast<const std::int32_t*>(offsets)[i];
}

// Rows [0, len) of a [64][kPitchD] tile from global rows (16-byte vectors); rows past len are zero.
template <class Element>
__device__ __forceinline__ void load_rows(Element* tile, const Element* src, std::int64_t stride_token, int len) {
  using Cfg = ChunkedConfig;
  for (int i = threadIdx.x; i < Cfg::kChunk * Cfg::kDim / 8; i += Cfg::kThreads) {
    const int r = i / (Cfg::kDim / 8), c = i % (Cfg::kDim / 8);
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < len) value = *reinterpret_cast<const uint4*>(src + r * stride_token + 8 * c);
    *reinterpret_cast<uint4*>(tile + r * Cfg::kPitchD + 8 * c) = value;
  }
}

// x <- x * rsqrt(sum x^2 + 1e-6) per row, one warp per row, rounded back to the operand type.
template <InputType kType>
__device__ __forceinline__ void l2_normalise_rows(typename Operand<kType>::Element* tile, int len, int warp, int lane) {
  using Cfg = ChunkedConfig;
  using Op = Operand<kType>;
  for (int r = warp; r < len; r += Cfg::kWarps) {
    auto* row = tile + r * Cfg::kPitchD + 4 * lane;
    float x[4], sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = Op::to_float(row[i]), sum += x[i] * x[i];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float inv = rsqrtf(sum + 1e-6f);
#pragma unroll
    for (int i = 0; i < 4; ++i) row[i] = Op::round(x[i] * inv);
  }
}

// Warp 0: G[t] = sum_{s <= t} max(log alpha_s, kMinLogAlpha) and beta[t]; padded tokens get
// alpha = 1, beta = 0 so they change nothing.
__device__ __forceinline__ void load_gates(const PrefillParams& p, std::int64_t token0, int len, int head, float* g,
                                           float* beta, int lane) {
  float log_alpha[2], b[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int t = 2 * lane + i;
    log_alpha[i] = 0.0f;
    b[i] = 0.0f;
    if (t < len) {
      if (p.alpha) log_alpha[i] = fmaxf(logf(p.alpha[(token0 + t) * p.alpha_stride_token + head]), ChunkedConfig::kMinLogAlpha);
      b[i] = p.beta ? p.beta[(token0 + t) * p.beta_stride_token + head] : 1.0f;
    }
  }
  float prefix = log_alpha[0] + log_alpha[1];
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const float other = __shfl_up_sync(0xffffffffu, prefix, offset);
    if (lane >= offset) prefix += other;
  }
  g[2 * lane] = prefix - log_alpha[1];
  g[2 * lane + 1] = prefix;
  beta[2 * lane] = b[0];
  beta[2 * lane + 1] = b[1];
}

// acc += A[row0 .. +15][k] x B[n][k]^T over n tiles [0, n_active) and k in [0, k_end).
template <InputType kType, int kTilesN, class Element>
__device__ __forceinline__ void warp_gemm_partial(float (&acc)[kTilesN][4], const Element* a_tile, int pitch_a, int row0,
                                                  const Element* b_tile, int pitch_b, int n_active, int k_end,
                                                  LaneCoords lc) {
  for (int k0 = 0; k0 < k_end; k0 += 16) {
    std::uint32_t a[4];
    load_a(a, a_tile, pitch_a, row0, k0, lc);
#pragma unroll
    for (int n = 0; n < kTilesN; ++n) {
      if (n < n_active) {
        std::uint32_t b[2];
        load_b(b, b_tile, pitch_b, 8 * n, k0, lc);
        mma<kType>(acc[n], a, b);
      }
    }
  }
}

// What one CTA row walks: a whole sequence (blockIdx.x = sequence), or with the CP segment hooks
// one segment of sequence `seq` (blockIdx.x = segment); seq_begin is where checkpoints count from.
struct SegmentSpan {
  int seq;
  std::int64_t begin, end, seq_begin;
  bool ends_sequence;
};

__device__ __forceinline__ SegmentSpan segment_span(const PrefillParams& p, int row) {
  SegmentSpan span;
  if (p.segment_offsets == nullptr) {
    span.seq = row;
    span.begin = span.seq_begin = read_offset(p.cu_seqlens, p.offsets_are_int64, row);
    span.end = read_offset(p.cu_seqlens, p.offsets_are_int64, row + 1);
    span.ends_sequence = true;
    return span;
  }
  span.seq = p.segment_sequence[row];
  span.begin = read_offset(p.segment_offsets, p.offsets_are_int64, row);
  span.end = read_offset(p.segment_offsets, p.offsets_are_int64, row + 1);
  span.seq_begin = span.begin;
  span.ends_sequence = false;
  if (span.seq < 0 || span.seq >= p.num_seqs) {  // not a sequence: empty
    span.end = span.begin;
    return span;
  }
  span.seq_begin = read_offset(p.cu_seqlens, p.offsets_are_int64, span.seq);
  span.ends_sequence = span.end == read_offset(p.cu_seqlens, p.offsets_are_int64, span.seq + 1);
  return span;
}

template <InputType kType>
__global__ void __launch_bounds__(ChunkedConfig::kThreads, 1) gdn_prefill_chunked_kernel(const PrefillParams p) {
  // A programmatic dependent launch (CP stage 4) starts before the fix-up that writes its inputs
  // has finished; this waits for it (a no-op for an ordinary launch).
  asm volatile("griddepcontrol.wait;" ::: "memory");
  using Cfg = ChunkedConfig;
  using Op = Operand<kType>;
  using Element = typename Op::Element;
  using Pair = typename Op::Pair;
  constexpr int kC = Cfg::kChunk, kPD = Cfg::kPitchD, kPC = Cfg::kPitchC, kPF = TriInverse::kPitch;

  extern __shared__ __align__(16) unsigned char smem[];
  Element* q_tile = reinterpret_cast<Element*>(smem + ChunkedSmem::kQ);
  Element* k_tile = reinterpret_cast<Element*>(smem + ChunkedSmem::kK);
  Element* v_tile = reinterpret_cast<Element*>(smem + ChunkedSmem::kV);
  Element* state_tile = reinterpret_cast<Element*>(smem + ChunkedSmem::kState);
  Element* k_t = reinterpret_cast<Element*>(smem + ChunkedSmem::kKT);
  Element* t_gated = reinterpret_cast<Element*>(smem + ChunkedSmem::kTGated);
  Element* t_gated_lo = reinterpret_cast<Element*>(smem + ChunkedSmem::kTGatedLo);
  Element* p_masked = reinterpret_cast<Element*>(smem + ChunkedSmem::kPMasked);
  float* a0 = reinterpret_cast<float*>(smem + ChunkedSmem::kA0);
  float* inverse = reinterpret_cast<float*>(smem + ChunkedSmem::kInverse);
  float* scratch = reinterpret_cast<float*>(smem + ChunkedSmem::kScratch);
  Element* x_t = reinterpret_cast<Element*>(smem + ChunkedSmem::kXT);
  Element* x_lo_t = reinterpret_cast<Element*>(smem + ChunkedSmem::kXLoT);
  Element* u_t = reinterpret_cast<Element*>(smem + ChunkedSmem::kUT);
  Element* u_decayed_t = reinterpret_cast<Element*>(smem + ChunkedSmem::kUDecayedT);
  Element* u_decayed_lo_t = reinterpret_cast<Element*>(smem + ChunkedSmem::kUDecayedLoT);
  float* g = reinterpret_cast<float*>(smem + ChunkedSmem::kG);
  float* beta = reinterpret_cast<float*>(smem + ChunkedSmem::kBeta);

  const int head = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const LaneCoords lc;
  const int m = warp % 4;  // the 16-row block of the chunk this warp works on in steps 2, 4, 5

  // The tokens [bos, eos) this CTA walks: its sequence, or one segment of it (CP stage 4).
  const SegmentSpan span = segment_span(p, blockIdx.x);
  const int seq = span.seq;
  const std::int64_t bos = span.begin, eos = span.end;
  if (bos < 0 || eos <= bos || eos > p.total_tokens) return;  // empty (or invalid): touch nothing
  const std::int64_t slot = p.state_indices ? p.state_indices[seq] : seq;
  const Element* q_head = static_cast<const Element*>(p.q) + head * p.num_q_heads / p.num_state_heads * p.q_stride_head;
  const Element* k_head = static_cast<const Element*>(p.k) + head * p.num_k_heads / p.num_state_heads * p.k_stride_head;
  const Element* v_head = static_cast<const Element*>(p.v) + head * p.num_v_heads / p.num_state_heads * p.v_stride_head;
  Element* out_head = static_cast<Element*>(p.output) + head * p.out_stride_head;

  StateFragment state;
  if (p.segment_offsets != nullptr) {
    load_segment_state(state, p.segment_states, blockIdx.x, head, p.num_state_heads, warp, lc);
  } else if (p.initial_state.data != nullptr && slot >= 0 && slot < p.initial_state.num_slots) {
    load_state(state, p.initial_state, slot, head, warp, lc);
  } else {
    zero(state);
  }
  store_state_operand<kType>(state, state_tile, kPD, warp, lc);

  for (std::int64_t token0 = bos; token0 < eos; token0 += kC) {
    const int len = static_cast<int>(eos - token0 < kC ? eos - token0 : kC);
    // 1. inputs
    load_rows(q_tile, q_head + token0 * p.q_stride_token, p.q_stride_token, len);
    load_rows(k_tile, k_head + token0 * p.k_stride_token, p.k_stride_token, len);
    load_rows(v_tile, v_head + token0 * p.v_stride_token, p.v_stride_token, len);
    if (warp == 0) load_gates(p, token0, len, head, g, beta, lane);
    __syncthreads();
    if (p.use_qk_l2norm) {
      l2_normalise_rows<kType>(q_tile, len, warp, lane);
      l2_normalise_rows<kType>(k_tile, len, warp, lane);
      __syncthreads();
    }
    const float g_last = g[len - 1];

    // 2. A0 (warps 0-3) and P (warps 4-7): 16 rows each, only the tiles on or below the diagonal.
    {
      float acc[8][4];
      zero(acc);
      const Element* a_src = warp < 4 ? k_tile : q_tile;
      warp_gemm_partial<kType, 8>(acc, a_src, kPD, 16 * m, k_tile, kPD, 2 * m + 2, Cfg::kDim, lc);
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int t = 16 * m + lc.group + 8 * (i / 2), j = 8 * n + 2 * lc.quad + i % 2;
          if (warp < 4) {
            a0[t * kPF + j] = j < t ? beta[t] * acc[n][i] : 0.0f;
          } else {
            p_masked[t * kPC + j] = Op::round(j <= t ? acc[n][i] * expf(g[t] - g[j]) : 0.0f);
          }
        }
    }
    // K transposed (exact: K is already in the operand type): the B operand of the state update.
    for (int i = threadIdx.x; i < kC * Cfg::kDim; i += Cfg::kThreads) {
      const int j = i % kC, d = i / kC;
      k_t[d * kPC + j] = k_tile[j * kPD + d];
    }
    __syncthreads();

    // 3. T = (I + A0)^-1, then T_g = T diag(beta) o Gamma as hi + lo.
    TriInverse::run<Cfg::kThreads>(a0, inverse, scratch);
    for (int i = threadIdx.x; i < kC * kC; i += Cfg::kThreads) {
      const int t = i / kC, j = i % kC;
      const float value = j <= t ? inverse[t * kPF + j] * beta[j] * expf(g[t] - g[j]) : 0.0f;
      const Element hi = Op::round(value);
      t_gated[t * kPC + j] = hi;
      t_gated_lo[t * kPC + j] = Op::round(value - Op::to_float(hi));
    }
    __syncthreads();

    // 4. [Q; K] S^T: warps 0-3 keep e^G Q S^T as the output accumulator, warps 4-7 write X^T (hi, lo).
    float acc[kStateTiles][4];
    zero(acc);
    warp_gemm<kType, kStateTiles>(acc, warp < 4 ? q_tile : k_tile, kPD, 16 * m, state_tile, kPD, 0, Cfg::kDim, lc);
    {
      const int t_lo = 16 * m + lc.group;
      const float decay[2] = {expf(g[t_lo]), expf(g[t_lo + 8])};
#pragma unroll
      for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int t = t_lo + 8 * (i / 2), col = 8 * n + 2 * lc.quad + i % 2;
          if (warp < 4) {
            acc[n][i] *= decay[i / 2];
          } else {
            const float x = Op::to_float(v_tile[t * kPD + col]) - decay[i / 2] * acc[n][i];
            const Element hi = Op::round(x);
            x_t[col * kPC + t] = hi;
            x_lo_t[col * kPC + t] = Op::round(x - Op::to_float(hi));
          }
        }
    }
    __syncthreads();

    // 5. U = T_g X (warps 4-7) from hi hi + hi lo + lo hi (lo lo is below fp32 rounding), written
    //    as U^T for P U and decayed to the chunk end as hi + lo U^T for the state update; then
    //    O += P U (warps 0-3) and the output rows.
    const int k_causal = 16 * m + 16;  // T_g and P are lower triangular
    if (warp >= 4) {
      zero(acc);
      warp_gemm<kType, kStateTiles>(acc, t_gated, kPC, 16 * m, x_t, kPC, 0, k_causal, lc);
      warp_gemm<kType, kStateTiles>(acc, t_gated, kPC, 16 * m, x_lo_t, kPC, 0, k_causal, lc);
      warp_gemm<kType, kStateTiles>(acc, t_gated_lo, kPC, 16 * m, x_t, kPC, 0, k_causal, lc);
      const int t_lo = 16 * m + lc.group;
      const float to_end[2] = {expf(g_last - g[t_lo]), expf(g_last - g[t_lo + 8])};
#pragma unroll
      for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int t = t_lo + 8 * (i / 2), col = 8 * n + 2 * lc.quad + i % 2;
          u_t[col * kPC + t] = Op::round(acc[n][i]);
          const float decayed = acc[n][i] * to_end[i / 2];
          const Element hi = Op::round(decayed);
          u_decayed_t[col * kPC + t] = hi;
          u_decayed_lo_t[col * kPC + t] = Op::round(decayed - Op::to_float(hi));
        }
    }
    __syncthreads();
    if (warp < 4) {
      warp_gemm<kType, kStateTiles>(acc, p_masked, kPC, 16 * m, u_t, kPC, 0, k_causal, lc);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int t = 16 * m + lc.group + 8 * half;
        if (t < len) {
          Element* row = out_head + (token0 + t) * p.out_stride_token;
#pragma unroll
          for (int n = 0; n < kStateTiles; ++n)
            *reinterpret_cast<Pair*>(row + 8 * n + 2 * lc.quad) =
                Op::pack(p.scale * acc[n][2 * half], p.scale * acc[n][2 * half + 1]);
        }
      }
    }

    // 6. S = e^{G_last} S + U_decayed^T K, hi then lo (all warps; padded tokens have U = 0).
    {
      const float decay = expf(g_last);
#pragma unroll
      for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) state[n][i] *= decay;
      const int k_end = (len + 15) / 16 * 16;
      warp_gemm<kType, kStateTiles>(state, u_decayed_t, kPC, 16 * warp, k_t, kPC, 0, k_end, lc);
      warp_gemm<kType, kStateTiles>(state, u_decayed_lo_t, kPC, 16 * warp, k_t, kPC, 0, k_end, lc);
    }
    const std::int64_t done = token0 + len - span.seq_begin;  // checkpoints count from the sequence start
    if (p.checkpoint_every > 0 && done % p.checkpoint_every == 0) {
      const std::int64_t first = read_offset(p.checkpoint_starts, p.offsets_are_int64, seq);
      const std::int64_t end = read_offset(p.checkpoint_starts, p.offsets_are_int64, seq + 1);
      const std::int64_t row = first + done / p.checkpoint_every - 1;
      if (row >= 0 && row < end && row < p.checkpoints.num_slots) store_state(state, p.checkpoints, row, head, warp, lc);
    }
    // The state tile was last read in step 4 (before two barriers); the next chunk reads it.
    store_state_operand<kType>(state, state_tile, kPD, warp, lc);
    __syncthreads();
  }
  if (span.ends_sequence && p.output_state.data != nullptr && slot >= 0 && slot < p.output_state.num_slots)
    store_state(state, p.output_state, slot, head, warp, lc);
}

}  // namespace fastinfer::gdn::kernels
