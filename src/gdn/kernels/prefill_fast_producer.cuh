#pragma once
// The producer warpgroup of the warp-specialised GDN prefill kernel: everything of a chunk that
// does not depend on the state. Per chunk, into one stage of shared memory:
//   q, k, v tiles (TMA by one thread; k and v rows past the sequence end zeroed), optional L2
//   norm of q and k,
//   gates (G = cumsum log alpha, e^G, e^{G_63 - G}, beta),
//   A0 = strict_lower(diag(beta) K K^T) (fp32, private) and P = (Q K^T) o Gamma (lower incl. diag),
//   T = (I + A0)^-1 (fp32, on chip) and T_g = (T diag(beta)) o Gamma as a rounded pair hi + lo.
// With a precomputed Tinv (PrefillParams::chunk_inverse, CP stage 1) the chunk's T is loaded with
// its q, k, v instead: no A0, no solve, and the consumers build T_g from it; with a precomputed
// T_g (PrefillParams::chunk_t_gated) that is loaded into the stage's T_g tiles, nothing to build.
// Only the producer's 128 threads take part; they synchronise with named barrier 1.
#include <cuda.h>

#include <cstdint>
#include <type_traits>

#include "gdn/kernels/prefill_fast_inverse.cuh"
#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"
#include "gdn/kernels/prefill_fast_profile.cuh"
#include "gdn/kernels/prefill_fast_products.cuh"
#include "gdn/kernels/prefill_fast_t_gated.cuh"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels::fast {

__device__ __forceinline__ void producer_sync() {
  named_barrier_sync(FastConfig::kProducerBarrier, FastConfig::kProducerThreads);
}

// Tensor maps of q, k, v ([T][H][128] as 3-d maps {128, H, T}, boxes {64, 1, 64} in the 128-byte
// swizzle: one box is one 64-column half of a stage tile), built by the launch for every call and
// passed as a __grid_constant__ kernel parameter; and of the output ([T][Hsab][128], the same
// boxes) where its strides allow one (output_by_tma): the wgmma consumers store full chunks by TMA.
struct FastTensorMaps {
  CUtensorMap q, k, v, o;
  int output_by_tma;
};

struct ChunkSource {
  int q_head, k_head, v_head;  // head coordinates in the tensor maps
  std::int64_t token0;  // packed index of the chunk's first token
  int len;              // real tokens in the chunk (1 .. 64)
  int head;             // state head (gate column)
  const float* inverse; // the chunk's precomputed Tinv [64][64], or nullptr
  const void* t_gated;  // or its precomputed T_g [2][64][64] (hi, lo; input dtype), or nullptr: solve T
  __device__ __forceinline__ bool loaded() const { return inverse != nullptr || t_gated != nullptr; }
};

// q, k, v of the chunk into the stage by TMA (one thread; rows past the packed tensor's end come
// as zeros, rows past the sequence's end are zeroed by zero_rows_past_end), completing on
// `loaded`; the raw alpha and beta of the chunk (4-byte cp.async) and a precomputed Tinv or T_g
// (16-byte cp.async), committed as one group. Nothing is waited for.
template <class Element>
__device__ __forceinline__ void issue_tile_loads(unsigned char* stage, const ChunkSource& src, const PrefillParams& p,
                                                 const FastTensorMaps& maps, std::uint64_t* loaded, int ptid) {
  using Cfg = FastConfig;
  if (ptid == 0) {
    mbarrier_arrive_expect_tx(loaded, 3 * FastSmem::kSwizzledD);
    const int token0 = static_cast<int>(src.token0);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      tma_load_3d(stage + FastSmem::kQ + 8192 * half, &maps.q, loaded, 64 * half, src.q_head, token0);
      tma_load_3d(stage + FastSmem::kK + 8192 * half, &maps.k, loaded, 64 * half, src.k_head, token0);
      tma_load_3d(stage + FastSmem::kV + 8192 * half, &maps.v, loaded, 64 * half, src.v_head, token0);
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
    constexpr int kInverseVectorsPerRow = Cfg::kChunk / 4, kInverseRowStep = Cfg::kProducerThreads / kInverseVectorsPerRow;
    const int row0 = ptid / kInverseVectorsPerRow, col = 4 * (ptid % kInverseVectorsPerRow);
    float* dst = reinterpret_cast<float*>(stage + FastSmem::kInverseIn) + row0 * Cfg::kChunk + col;
    const float* from = src.inverse + row0 * Cfg::kChunk + col;
#pragma unroll
    for (int m = 0; m < Cfg::kChunk / kInverseRowStep; ++m)
      if (col <= row0 + kInverseRowStep * m)
        cp_async_16(dst + kInverseRowStep * m * Cfg::kChunk, from + kInverseRowStep * m * Cfg::kChunk, 16);
  }
  if (src.t_gated != nullptr) {  // hi and lo, 16x16 blocks on or below the diagonal only
    // Thread ptid copies 8-column vector v = ptid % 8 of rows r0 + 16 m (row block m): the vector's
    // column block v / 2 is at most m. Single-pass U reads hi only.
    constexpr InputType kType = std::is_same_v<Element, __half> ? InputType::kFloat16 : InputType::kBFloat16;
    constexpr int kHalves = Cfg::single_pass_u(kType) ? 1 : 2;
    const int v = ptid % 8, r0 = ptid / 8;
    const Element* from = static_cast<const Element*>(src.t_gated) + r0 * Cfg::kChunk + 8 * v;
#pragma unroll
    for (int half = 0; half < kHalves; ++half) {
      Element* dst = reinterpret_cast<Element*>(stage + (half == 0 ? FastSmem::kTGated : FastSmem::kTGatedLo));
#pragma unroll
      for (int m = 0; m < Cfg::kChunk / 16; ++m)
        if (v / 2 <= m)
          cp_async_16(dst + swizzled_c(r0 + 16 * m, 8 * v),
                      from + half * Cfg::kChunk * Cfg::kChunk + 16 * m * Cfg::kChunk, 16);
    }
  }
  cp_async_commit();
}

// Rows [len, 64) of the stage's k and v tiles set to zero (TMA brought the next sequence's
// tokens there; finite or not, they must not reach X, U or the state update through a zero
// weight): whole 128-byte rows of each 64-column half, so the swizzle does not matter. q's rows
// only feed outputs past len, which are not stored.
__device__ __forceinline__ void zero_rows_past_end(unsigned char* stage, int len, int ptid) {
  constexpr int kVectorsPerRow = 2 * 2 * 8;  // tiles x halves x 16-byte vectors
  const int vector = ptid % kVectorsPerRow;  // fixed per thread: tile, half, vector
  unsigned char* base = stage + (vector < 16 ? FastSmem::kK : FastSmem::kV) + 8192 * (vector / 8 % 2) + 16 * (vector % 8);
  for (int r = len + ptid / kVectorsPerRow; r < FastConfig::kChunk; r += FastConfig::kProducerThreads / kVectorsPerRow)
    *reinterpret_cast<uint4*>(base + 128 * r) = make_uint4(0, 0, 0, 0);
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

// sum_c x[r][c]^2 for row r = 16 block + lane / 2 of a swizzled [64][128] q or k tile, on the
// tensor cores: the diagonal of X X^T over the block's 16 rows (one ldmatrix per k16 step gives
// both the A fragment and, as its (a0, a2) / (a1, a3) pairs, the B fragments of the two 8-row n
// tiles; bf16 / fp16 products are exact in fp32). Lane 4g + g / 2 holds row g's sum in tile 0 and
// row g + 8's in tile 1; a shuffle hands row lane / 2 to each lane.
template <InputType kType, class Element>
__device__ __forceinline__ float row_sum_of_squares(const Element* tile, int block, int lane) {
  const int mat = lane / 8, row = lane % 8;
  float low[4] = {0.0f, 0.0f, 0.0f, 0.0f}, high[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int kb = 0; kb < FastConfig::kDim / 16; ++kb) {
    std::uint32_t f[4];
    ldmatrix_x4(f, smem_address(tile + swizzled_d(16 * block + row + 8 * (mat % 2), 16 * kb + 8 * (mat / 2))));
    const std::uint32_t b_low[2] = {f[0], f[2]}, b_high[2] = {f[1], f[3]};
    mma<kType>(low, f, b_low);
    mma<kType>(high, f, b_high);
  }
  const int g = lane / 4;
  const float diag_low = g % 2 == 0 ? low[0] : low[1], diag_high = g % 2 == 0 ? high[2] : high[3];
  const int r = lane / 2, source = 4 * (r % 8) + (r % 8) / 2;
  const float from_low = __shfl_sync(0xffffffffu, diag_low, source);
  const float from_high = __shfl_sync(0xffffffffu, diag_high, source);
  return r < 8 ? from_low : from_high;
}

// Row 16 block + lane / 2, 64-column half lane % 2, of a swizzled tile times `scale`, rounded back.
template <InputType kType, class Element>
__device__ __forceinline__ void scale_row_half(Element* tile, int block, float scale, int lane) {
  const int r = 16 * block + lane / 2;
  Element* row = tile + 4096 * (lane % 2) + 64 * r;
  constexpr int kVectors = 8, kBatch = 4;  // 16-byte vectors of the half row, loaded four at a time
#pragma unroll
  for (int v0 = 0; v0 < kVectors; v0 += kBatch) {
    uint4 raw[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) raw[i] = *reinterpret_cast<const uint4*>(row + 8 * ((v0 + i) ^ (r % 8)));
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      std::uint32_t words[4] = {raw[i].x, raw[i].y, raw[i].z, raw[i].w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const float2 x = unpack_pair<kType>(words[w]);
        words[w] = pack_pair<kType>(x.x * scale, x.y * scale);
      }
      *reinterpret_cast<uint4*>(row + 8 * ((v0 + i) ^ (r % 8))) = make_uint4(words[0], words[1], words[2], words[3]);
    }
  }
}

// The L2 norm of rows t < len: k <- k * rsqrt(sum k^2 + 1e-6), rounded back to the operand type
// in the tile (CP stages 2-3 multiply with the same rounded k, so the state agrees), and q's scale
// rsqrt(sum q^2 + 1e-6) into gates[kQScale + t] (1 for rows >= len), applied to P's rows and the
// output's token columns instead of rewriting q (its rows feed only those). Producer warp w takes
// rows 16w .. 16w+15, the sums on the tensor cores (row_sum_of_squares), then lane l scales half
// l % 2 of k's row l / 2. The CUDA-core form (8 lanes per row unpacking, squaring and summing 16
// elements each, both tiles rewritten) issued ~10 instructions per element and took ~5.2k cycles
// per chunk with the gates (H200 profile, session 6).
template <InputType kType>
__device__ __forceinline__ void l2_normalise_rows(const typename Operand<kType>::Element* q_tile,
                                                  typename Operand<kType>::Element* k_tile, float* gates, int len,
                                                  int pwarp, int lane) {
  const int r = 16 * pwarp + lane / 2;
  float q_scale = 1.0f;
  if (16 * pwarp < len) {
    const float q_sum = row_sum_of_squares<kType>(q_tile, pwarp, lane);
    const float k_sum = row_sum_of_squares<kType>(k_tile, pwarp, lane);
    if (r < len) {
      q_scale = rsqrtf(q_sum + 1e-6f);
      scale_row_half<kType>(k_tile, pwarp, rsqrtf(k_sum + 1e-6f), lane);
    }
  }
  if (lane % 2 == 0) gates[FastGates::kQScale + r] = q_scale;
}

// With A0 (T solved here): row block 3 - pwarp of A0 (fp32, strictly lower, scaled by beta_t) and
// row block pwarp of P; block b costs b + 1 column pairs, so every warp gets five. Without A0 (T
// loaded): P alone, its ten column pairs split 3 / 2 / 3 / 2 (warp 0 takes block 0 and half of
// block 3, warp 3 the other half).
template <InputType kType>
__device__ __forceinline__ void compute_a0_and_p(unsigned char* stage, float* a0, bool with_a0, int pwarp, int lane) {
  using Cfg = FastConfig;
  using Element = typename Operand<kType>::Element;
  if (!with_a0) {
    if (pwarp == 0) {
      compute_p<kType>(stage, 0, 0, 0, lane);
      compute_p<kType>(stage, 3, 0, 1, lane);
    } else {
      compute_p<kType>(stage, pwarp, pwarp == 3 ? 2 : 0, pwarp, lane);
    }
    return;
  }
  const Element* k = reinterpret_cast<const Element*>(stage + FastSmem::kK);
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const int g = lane / 4, quad = lane % 4;
  float acc[8][4];
  const int a_block = 3 - pwarp;
  rows_times_k<kType>(acc, k, k, a_block, 0, a_block, lane);
#pragma unroll
  for (int n = 0; n < 8; ++n)
    if (n / 2 <= a_block) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int t = 16 * a_block + g + 8 * (i / 2), j = 8 * n + 2 * quad + i % 2;
        a0[t * Cfg::kPitchF + j] = j < t ? gates[FastGates::kBeta + t] * acc[n][i] : 0.0f;
      }
    }
  compute_p<kType>(stage, pwarp, 0, pwarp, lane);
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
                                              unsigned char* smem, std::uint64_t* loaded, std::uint32_t loaded_parity,
                                              int ptid, PhaseTimer& timer) {
  using Cfg = FastConfig;
  using Element = typename Operand<kType>::Element;
  const int pwarp = ptid / 32, lane = ptid % 32;
  float* gates = reinterpret_cast<float*>(stage + FastSmem::kGates);
  mbarrier_wait(loaded, loaded_parity);
  cp_async_wait_all();
  if (len < Cfg::kChunk) zero_rows_past_end(stage, len, ptid);
  producer_sync();
  timer.tick(kPrepareLoadWait);
  if (pwarp == 0) compute_gates(p, len, gates, lane);
  timer.tick(kPrepareGates);
  if (p.use_qk_l2norm)
    l2_normalise_rows<kType>(reinterpret_cast<const Element*>(stage + FastSmem::kQ),
                             reinterpret_cast<Element*>(stage + FastSmem::kK), gates, len, pwarp, lane);
  else if (ptid < Cfg::kChunk)
    gates[FastGates::kQScale + ptid] = 1.0f;
  producer_sync();
  timer.tick(kPrepareGatesNorm);
  if (ptid < Cfg::kChunk) {
    const float g = gates[FastGates::kG + ptid];
    gates[FastGates::kExpG + ptid] = __expf(g);
    gates[FastGates::kExpGQ + ptid] = __expf(g) * gates[FastGates::kQScale + ptid];
    gates[FastGates::kDecayToEnd + ptid] = __expf(gates[FastGates::kG + Cfg::kChunk - 1] - g);
    if constexpr (Cfg::kPDecayTables)
      gates[FastGates::kColF + ptid] = __expf(gates[FastGates::kG + (ptid | 15)] - g);
  } else if constexpr (Cfg::kPDecayTables) {  // row t's factors for the column blocks c < t / 16
    const int t = ptid - Cfg::kChunk;
    const float g = gates[FastGates::kG + t], q_scale = gates[FastGates::kQScale + t];
#pragma unroll
    for (int c = 0; c < 3; ++c)
      if (t / 16 > c) gates[FastGates::kRowQ + 64 * c + t] = __expf(g - gates[FastGates::kG + 16 * c + 15]) * q_scale;
  }
  if (!loaded_inverse)  // else the consumers compute P (and T_g)
    compute_a0_and_p<kType>(stage, reinterpret_cast<float*>(smem + FastSmem::kA0), true, pwarp, lane);
  producer_sync();
  timer.tick(kPrepareProducts);
}

// Phase 2: T = (I + A0)^-1 solved here and T_g into the stage, or nothing when T was loaded (the
// consumers build T_g from it). The caller then arrives on the stage's full barrier (each thread's
// writes, its cp.async data included, are released by its own arrival).
template <InputType kType>
__device__ __forceinline__ void finish_chunk(bool loaded_inverse, unsigned char* stage, unsigned char* smem, int ptid,
                                             PhaseTimer& timer) {
  using Cfg = FastConfig;
  if (loaded_inverse) {
    timer.tick(kFinishInverse);
  } else {
    float* inverse = reinterpret_cast<float*>(smem + FastSmem::kInverse);
    invert_unit_lower(reinterpret_cast<const float*>(smem + FastSmem::kA0), inverse,
                      reinterpret_cast<float*>(smem + FastSmem::kScratch), ptid);
    timer.tick(kFinishInverse);
    write_t_gated<kType, Cfg::kProducerThreads>(
        stage,
        [&](int t, int j) {
          const float* row = inverse + t * Cfg::kPitchF + j;
          return make_float4(row[0], row[1], row[2], row[3]);
        },
        ptid, [] { producer_sync(); });
  }
  timer.tick(kFinishTGated);
}

}  // namespace fastinfer::gdn::kernels::fast
