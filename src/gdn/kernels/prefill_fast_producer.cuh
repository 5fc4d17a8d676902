#pragma once
// The producer warpgroup of the warp-specialised GDN prefill kernel: everything of a chunk that
// does not depend on the state. Per chunk, into one stage of shared memory:
//   q, k, v tiles (cp.async, zero rows past the sequence end), optional L2 norm of q and k,
//   gates (G = cumsum log alpha, e^G, e^{G_63 - G}, beta),
//   A0 = strict_lower(diag(beta) K K^T) (fp32, private) and P = (Q K^T) o Gamma (lower incl. diag),
//   T = (I + A0)^-1 (fp32, on chip) and T_g = (T diag(beta)) o Gamma as a rounded pair hi + lo.
// With a precomputed Tinv (PrefillParams::chunk_inverse, CP stage 1) the chunk's T is loaded with
// its q, k, v instead: no A0, no solve.
// Only the producer's 128 threads take part; they synchronise with named barrier 1.
#include <cstdint>

#include "gdn/kernels/prefill_fast_inverse.cuh"
#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"
#include "gdn/kernels/prefill_fast_profile.cuh"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels::fast {

__device__ __forceinline__ void producer_sync() {
  named_barrier_sync(FastConfig::kProducerBarrier, FastConfig::kProducerThreads);
}

struct ChunkSource {
  const void* q;  // row 0 of the chunk in the head's q (k, v) rows
  const void* k;
  const void* v;
  std::int64_t token0;  // packed index of the chunk's first token
  int len;              // real tokens in the chunk (1 .. 64)
  int head;             // state head (gate column)
  const float* inverse; // the chunk's precomputed Tinv [64][64], or nullptr: solve it
};

// q, k, v rows [0, len) into the stage (16-byte cp.async), zero rows after, and the raw alpha and
// beta of the chunk (4-byte cp.async); committed as one group, not waited for.
template <class Element>
__device__ __forceinline__ void issue_tile_loads(unsigned char* stage, const ChunkSource& src, const PrefillParams& p,
                                                 int ptid) {
  using Cfg = FastConfig;
  constexpr int kVectorsPerTile = Cfg::kChunk * Cfg::kDim / 8;
  const Element* bases[3] = {static_cast<const Element*>(src.q), static_cast<const Element*>(src.k),
                             static_cast<const Element*>(src.v)};
  const std::int64_t strides[3] = {p.q_stride_token, p.k_stride_token, p.v_stride_token};
  const int offsets[3] = {FastSmem::kQ, FastSmem::kK, FastSmem::kV};
#pragma unroll
  for (int tile = 0; tile < 3; ++tile) {
    Element* dst = reinterpret_cast<Element*>(stage + offsets[tile]);
#pragma unroll 4
    for (int i = ptid; i < kVectorsPerTile; i += Cfg::kProducerThreads) {
      const int r = i / (Cfg::kDim / 8), c = i % (Cfg::kDim / 8);
      const bool inside = r < src.len;
      const Element* from = inside ? bases[tile] + r * strides[tile] + 8 * c : bases[tile];
      cp_async_16(dst + r * Cfg::kPitchD + 8 * c, from, inside ? 16 : 0);
    }
  }
  float* gates = reinterpret_cast<float*>(stage + FastSmem::kGates);
  const int t = ptid % Cfg::kChunk;
  const float* gate = ptid < Cfg::kChunk ? p.alpha : p.beta;
  const std::int64_t stride = ptid < Cfg::kChunk ? p.alpha_stride_token : p.beta_stride_token;
  if (gate != nullptr) {
    const bool inside = t < src.len;
    cp_async_4(gates + (ptid < Cfg::kChunk ? FastGates::kRawAlpha : FastGates::kRawBeta) + t,
               inside ? gate + (src.token0 + t) * stride + src.head : gate, inside ? 4 : 0);
  }
  if (src.inverse != nullptr) {  // the lower triangle only (16-byte vectors with a column <= row)
    float* dst = reinterpret_cast<float*>(stage + FastSmem::kInverseIn);
#pragma unroll 4
    for (int i = ptid; i < Cfg::kChunk * Cfg::kChunk / 4; i += Cfg::kProducerThreads) {
      const int r = i / (Cfg::kChunk / 4), c = 4 * (i % (Cfg::kChunk / 4));
      if (c <= r) cp_async_16(dst + r * Cfg::kChunk + c, src.inverse + r * Cfg::kChunk + c, 16);
    }
  }
  cp_async_commit();
}

// One warp: G[t] = sum_{s <= t} max(log alpha_s, kMinLogAlpha) and beta[t] from the raw values
// in the stage; padded tokens get alpha = 1, beta = 0 so they change nothing.
__device__ __forceinline__ void compute_gates(const PrefillParams& p, int len, float* gates, int lane) {
  float log_alpha[2], b[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int t = 2 * lane + i;
    log_alpha[i] = 0.0f;
    b[i] = 0.0f;
    if (t < len) {
      if (p.alpha) log_alpha[i] = fmaxf(logf(gates[FastGates::kRawAlpha + t]), FastConfig::kMinLogAlpha);
      b[i] = p.beta ? gates[FastGates::kRawBeta + t] : 1.0f;
    }
  }
  float prefix = log_alpha[0] + log_alpha[1];
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const float other = __shfl_up_sync(0xffffffffu, prefix, offset);
    if (lane >= offset) prefix += other;
  }
  gates[FastGates::kG + 2 * lane] = prefix - log_alpha[1];
  gates[FastGates::kG + 2 * lane + 1] = prefix;
  gates[FastGates::kBeta + 2 * lane] = b[0];
  gates[FastGates::kBeta + 2 * lane + 1] = b[1];
}

// x <- x * rsqrt(sum x^2 + 1e-6) per row, rounded back to the operand type: 8 lanes per row
// (16 elements each, two 16-byte vectors), four rows per warp and step.
template <InputType kType>
__device__ __forceinline__ void l2_normalise_rows(typename Operand<kType>::Element* tile, int len, int pwarp, int lane) {
  using Cfg = FastConfig;
  using Op = Operand<kType>;
  constexpr int kLanesPerRow = 8, kRowsPerStep = 32 / kLanesPerRow * Cfg::kProducerWarps;
  for (int r0 = 0; r0 < len; r0 += kRowsPerStep) {
    const int r = r0 + pwarp * (32 / kLanesPerRow) + lane / kLanesPerRow;
    auto* row = tile + r * Cfg::kPitchD + 8 * (lane % kLanesPerRow);
    uint4 raw[2] = {*reinterpret_cast<const uint4*>(row), *reinterpret_cast<const uint4*>(row + 64)};
    float sum = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::uint32_t words[4] = {raw[h].x, raw[h].y, raw[h].z, raw[h].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 x = unpack_pair<kType>(words[i]);
        sum += x.x * x.x + x.y * x.y;
      }
    }
#pragma unroll
    for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float inv = rsqrtf(sum + 1e-6f);
    if (r < len) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        std::uint32_t words[4] = {raw[h].x, raw[h].y, raw[h].z, raw[h].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 x = unpack_pair<kType>(words[i]);
          words[i] = pack_pair<kType>(x.x * inv, x.y * inv);
        }
        *reinterpret_cast<uint4*>(row + 64 * h) = make_uint4(words[0], words[1], words[2], words[3]);
      }
    }
  }
}

// acc[16 rows][64 cols] = rows 16 block .. +15 of `a` times K^T; tiles right of the diagonal
// block are skipped (never read).
template <InputType kType, class Element>
__device__ __forceinline__ void rows_times_k(float (&acc)[8][4], const Element* a, const Element* k, int block, int lane) {
  using Cfg = FastConfig;
  const int mat = lane / 8, row = lane % 8;
  // A (row-major, non-transposed): matrix mat covers rows +8 (mat % 2), cols +8 (mat / 2).
  const Element* a_base = a + (16 * block + row + 8 * (mat % 2)) * Cfg::kPitchD + 8 * (mat / 2);
  // B (rows j of K as [n][k]): matrix mat covers n +8 (mat / 2), k +8 (mat % 2).
  const Element* b_base = k + (row + 8 * (mat / 2)) * Cfg::kPitchD + 8 * (mat % 2);
  zero(acc);
#pragma unroll
  for (int kb = 0; kb < Cfg::kDim / 16; ++kb) {
    std::uint32_t fa[4];
    ldmatrix_x4(fa, smem_address(a_base + 16 * kb));
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      if (np <= block) {
        std::uint32_t b[4];
        ldmatrix_x4(b, smem_address(b_base + 16 * np * Cfg::kPitchD + 16 * kb));
        mma_pair<kType>(acc[2 * np], acc[2 * np + 1], fa, b);
      }
    }
  }
}

// Row block 3 - pwarp of A0 (fp32, strictly lower, scaled by beta_t) and row block pwarp of P
// (rounded, lower including the diagonal; zero above it inside the diagonal block): block b costs
// b + 1 column pairs, so every warp gets five.
template <InputType kType>
__device__ __forceinline__ void compute_a0_and_p(unsigned char* stage, float* a0, bool with_a0, int pwarp, int lane) {
  using Cfg = FastConfig;
  using Op = Operand<kType>;
  using Element = typename Op::Element;
  const Element* q = reinterpret_cast<const Element*>(stage + FastSmem::kQ);
  const Element* k = reinterpret_cast<const Element*>(stage + FastSmem::kK);
  Element* p_tile = reinterpret_cast<Element*>(stage + FastSmem::kP);
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const int g = lane / 4, quad = lane % 4;
  float acc[8][4];
  const int a_block = 3 - pwarp;
  if (with_a0) {
    rows_times_k<kType>(acc, k, k, a_block, lane);
#pragma unroll
    for (int n = 0; n < 8; ++n)
      if (n / 2 <= a_block) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int t = 16 * a_block + g + 8 * (i / 2), j = 8 * n + 2 * quad + i % 2;
          a0[t * Cfg::kPitchF + j] = j < t ? gates[FastGates::kBeta + t] * acc[n][i] : 0.0f;
        }
      }
  }
  rows_times_k<kType>(acc, q, k, pwarp, lane);
#pragma unroll
  for (int n = 0; n < 8; ++n)
    if (n / 2 <= pwarp) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int t = 16 * pwarp + g + 8 * (i / 2), j = 8 * n + 2 * quad + i % 2;
        const float gamma = __expf(gates[FastGates::kG + t] - gates[FastGates::kG + j]);
        p_tile[t * Cfg::kPitchC + j] = Op::round(j <= t ? acc[n][i] * gamma : 0.0f);
      }
    }
}

// (I + A)^-1 of the strictly lower 64x64 fp32 tile `a` (prefill_fast_inverse.cuh); only the
// lower blocks of `inverse` are written. Ends with a producer barrier.
__device__ __forceinline__ void invert_unit_lower(const float* a, float* inverse, float* scratch, int ptid) {
  FastInverse::diagonal(a, inverse, ptid);
  producer_sync();
  FastInverse::partial<1>(a, inverse, scratch, ptid);
  producer_sync();
  FastInverse::apply<1>(inverse, scratch, ptid);
  producer_sync();
  FastInverse::partial<2>(a, inverse, scratch, ptid);
  producer_sync();
  FastInverse::apply<2>(inverse, scratch, ptid);
  producer_sync();
  FastInverse::partial<3>(a, inverse, scratch, ptid);
  producer_sync();
  FastInverse::apply<3>(inverse, scratch, ptid);
  producer_sync();
}

// Phase 1 of a chunk whose loads were issued earlier: wait for them, gates, L2 norm, e^G,
// A0 (unless Tinv was loaded) and P. Ends with a producer barrier (A0 complete).
template <InputType kType>
__device__ __forceinline__ void prepare_chunk(const PrefillParams& p, int len, bool loaded_inverse, unsigned char* stage,
                                              unsigned char* smem, int ptid, PhaseTimer& timer) {
  using Cfg = FastConfig;
  using Element = typename Operand<kType>::Element;
  const int pwarp = ptid / 32, lane = ptid % 32;
  float* gates = reinterpret_cast<float*>(stage + FastSmem::kGates);
  cp_async_wait_all();
  producer_sync();
  timer.tick(kPrepareLoadWait);
  if (pwarp == 0) compute_gates(p, len, gates, lane);
  if (p.use_qk_l2norm) {
    l2_normalise_rows<kType>(reinterpret_cast<Element*>(stage + FastSmem::kQ), len, pwarp, lane);
    l2_normalise_rows<kType>(reinterpret_cast<Element*>(stage + FastSmem::kK), len, pwarp, lane);
  }
  producer_sync();
  timer.tick(kPrepareGatesNorm);
  if (ptid < Cfg::kChunk) {
    const float g = gates[FastGates::kG + ptid];
    gates[FastGates::kExpG + ptid] = __expf(g);
    gates[FastGates::kDecayToEnd + ptid] = __expf(gates[FastGates::kG + Cfg::kChunk - 1] - g);
  }
  compute_a0_and_p<kType>(stage, reinterpret_cast<float*>(smem + FastSmem::kA0), !loaded_inverse, pwarp, lane);
  producer_sync();
  timer.tick(kPrepareProducts);
}

// T_g[t][j] = T[t][j] beta_j e^{G_t - G_j} (j <= t, else 0) as a rounded pair hi + lo (cp4's
// numerics, 0ce9fd6: everything that feeds the state). T is read by `inverse(t, j)` into registers
// first (a loaded Tinv shares its shared memory with T_g), then written.
template <InputType kType, class InverseAt>
__device__ __forceinline__ void write_t_gated(unsigned char* stage, InverseAt inverse, int ptid) {
  using Cfg = FastConfig;
  using Op = Operand<kType>;
  using Element = typename Op::Element;
  constexpr int kPerThread = Cfg::kChunk * Cfg::kChunk / Cfg::kProducerThreads;
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  float value[kPerThread];
#pragma unroll
  for (int e = 0; e < kPerThread; ++e) {
    const int i = ptid + Cfg::kProducerThreads * e, t = i / Cfg::kChunk, j = i % Cfg::kChunk;
    value[e] = j <= t ? inverse(t, j) * gates[FastGates::kBeta + j] * __expf(gates[FastGates::kG + t] - gates[FastGates::kG + j])
                      : 0.0f;
  }
  producer_sync();
  Element* t_gated = reinterpret_cast<Element*>(stage + FastSmem::kTGated);
  Element* t_gated_lo = reinterpret_cast<Element*>(stage + FastSmem::kTGatedLo);
#pragma unroll
  for (int e = 0; e < kPerThread; ++e) {
    const int i = ptid + Cfg::kProducerThreads * e, t = i / Cfg::kChunk, j = i % Cfg::kChunk;
    const Element hi = Op::round(value[e]);
    t_gated[t * Cfg::kPitchC + j] = hi;
    t_gated_lo[t * Cfg::kPitchC + j] = Op::round(value[e] - Op::to_float(hi));
  }
}

// Phase 2: T (loaded, or (I + A0)^-1 solved here) and T_g into the stage. The caller then arrives
// on the stage's full barrier (each thread's writes are released by its own arrival).
template <InputType kType>
__device__ __forceinline__ void finish_chunk(bool loaded_inverse, unsigned char* stage, unsigned char* smem, int ptid,
                                             PhaseTimer& timer) {
  using Cfg = FastConfig;
  if (loaded_inverse) {
    const float* loaded = reinterpret_cast<const float*>(stage + FastSmem::kInverseIn);
    timer.tick(kFinishInverse);
    write_t_gated<kType>(stage, [&](int t, int j) { return loaded[t * Cfg::kChunk + j]; }, ptid);
  } else {
    float* inverse = reinterpret_cast<float*>(smem + FastSmem::kInverse);
    invert_unit_lower(reinterpret_cast<const float*>(smem + FastSmem::kA0), inverse,
                      reinterpret_cast<float*>(smem + FastSmem::kScratch), ptid);
    timer.tick(kFinishInverse);
    write_t_gated<kType>(stage, [&](int t, int j) { return inverse[t * Cfg::kPitchF + j]; }, ptid);
  }
  timer.tick(kFinishTGated);
}

}  // namespace fastinfer::gdn::kernels::fast
