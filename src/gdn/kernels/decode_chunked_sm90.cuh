#pragma once
// Tensor-core GDN decode / MTP kernel for bf16 state pools (sm_90a): the pipelined kernel's
// producer and stage ring (decode_pipelined_sm90.cuh) with consumers that run the T tokens of a
// state in the chunked form (decode_chunk_math.cuh) instead of T sequential passes:
//   1. warp t (t < T; warp t - 4 too with 4 warps) normalises k_0..k_t and q_t, forms k_s.k_t and k_s.q_t and row t of the
//      per-tile coefficients, and writes k_t, q_t as bf16 hi + lo (the mma operand B);
//   2. warp w holds 16 tile rows (ChunkedConfig::tile_row) as mma A fragments, straight from the stage
//      (bf16 state is the operand as is), and forms H0 [k_0..k_T-1 q_0..q_T-1] with
//      m16n8k16 mma (hi and lo halves of B accumulate into one fp32 result);
//   3. each row solves its T x T triangular system (u, outputs) in registers, quad-redundantly;
//   4. the rank-T update H_T = P H0 + sum_s w_s k_s^T runs in fp32 on the A fragments, which are
//      rounded back to bf16 and put into the stage with stmatrix for the bulk store.
// The stage holds the tile as 16 chunks of 8 rows, each chunk followed by 16 bytes of padding, so
// the 8 row addresses of one ldmatrix/stmatrix (rows 8m + w of 8 chunks) hit distinct banks.
// Intermediate states (MTP) are formed token by token from the known u (2 flops per element and
// token) and stored from registers.
// ChunkedVariant::kStateMajor (half-state tiles): a CTA takes both tiles of a state back to back
// (nth_item), and the second reuses the first's prepared tokens (step 1 and its barrier once per
// state, not per tile; the producer copies no q and k for it); kStateMajorTail (session 8): the
// same with the states after most of a CTA's share claimed (produce_dynamic, whole states per
// claim). (Session 5 also measured the
// producer warp running step 1 for the next state into a second Tokens buffer: 25% slower at
// B = 256, T = 4, since the one producer warp then stalls its loads; commit 0324440.)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "fastinfer/context.h"
#include "gdn/decode_chunked_launch.h"
#include "gdn/decode_launch.h"
#include "gdn/decode_params.h"
#include "gdn/kernels/decode_bulk_copy.cuh"
#include "gdn/kernels/decode_chunk_math.cuh"
#include "gdn/kernels/decode_pipelined_sm90.cuh"
#include "gdn/kernels/decode_sm90.cuh"
#include "gdn/kernels/decode_token_step.cuh"
#include "gdn/kernels/decode_vector_io.cuh"
#include "runtime/cuda_check.h"
#include "runtime/once_per_device.h"

namespace fastinfer::gdn::decode_sm90 {

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// The transposed load: lane l gets elements (rows 2 (l % 4), 2 (l % 4) + 1; column l / 4) of each
// matrix, i.e. an mma B fragment from a [k][n] (n contiguous) layout.
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

__device__ __forceinline__ void stmatrix_x4(std::uint32_t addr, const std::uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}

// d += a b for one m16n8k16 bf16 product with fp32 accumulation (registers only: not volatile, so
// the compiler may interleave independent products with other work).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// kTokens: 4 or 8, the most tokens of a window (B has 2 kTokens columns per hi/lo half).
// kWarps: 8 (whole-state tiles, one CTA per SM) or 4 (half states, two or three CTAs per SM: finer
// work items for batches of a few states per SM). A warp owns 16 rows of a tile.
// kCtas: CTAs per SM. 3 (4 warps, windows of <= 4 tokens) puts 12 consumer warps on an SM instead
// of 8: the kernel is latency-bound (ncu, session 3: no eligible warp in 67% of the cycles), so
// more independent tile chains per SM; its stages hold kTokens tokens (not 8) so that 3 fit.
template <class Act, int kTokens, int kWarps, int kCtas = 8 / kWarps, ChunkedVariant kVariant = ChunkedVariant::kTileMajor>
struct ChunkedConfig {
  using State = __nv_bfloat16;
  static constexpr int kConsumerWarpCount = kWarps;
  static constexpr int kConsumerThreads = kConsumerWarpCount * 32;
  static constexpr int kThreads = kConsumerThreads + 32;  // + the producer warp
  static constexpr int kCtasPerSm = kCtas;
  // Tokens a stage holds: 8 for the session-3 shapes (unchanged), kTokens where more CTAs share the SM.
  static constexpr int kStageTokens = kCtas * kWarps > 8 ? kTokens : kPipelinedMaxTokens;
  static constexpr int kTileRows = 16 * kWarps;
  static constexpr int kTilesPerState = kDecodeHeadDim / kTileRows;
  static constexpr bool kStateMajorOrder = kVariant == ChunkedVariant::kStateMajor || kVariant == ChunkedVariant::kStateMajorTail;
  static constexpr int kItemsPerStep = kStateMajorOrder ? kTilesPerState : 1;  // nth_item
  // The producer loads an item's slots and gates one item ahead (session 5's order): two ahead
  // measured 0.5-1% slower here (H200 session 6, T = 4, B = 256/512; the consumers bound this kernel).
  static constexpr int kProducerPrefetch = 1;
  static constexpr bool kDynamicItems =
      kVariant == ChunkedVariant::kTileMajorDynamic || kVariant == ChunkedVariant::kStateMajorTail;  // produce_dynamic
  static constexpr int kRowBytes = kDecodeHeadDim * int(sizeof(State));
  static constexpr int kTileBytes = kTileRows * kRowBytes;
  static constexpr int kChunkRows = 8, kChunks = kTileRows / kChunkRows;
  // Fragment row j of warp w is row (j / kChunks) + kChunkRowsPerWarp w of chunk j % kChunks: the
  // 8 rows of one ldmatrix lie in 8 different chunks.
  static constexpr int kChunkRowsPerWarp = 16 / kChunks;
  __device__ static int tile_row(int j, int warp) { return 8 * (j % kChunks) + kChunkRowsPerWarp * warp + j / kChunks; }
  static constexpr int kChunkPitch = kChunkRows * kRowBytes + 16;  // 16 B of padding: conflict-free ldmatrix
  static constexpr int kOperandPitch = kDecodeHeadDim + 8;         // bf16 per B row (272 B, conflict-free)
  static constexpr int kOperandRows = 4 * kTokens;                 // k hi, q hi, k lo, q lo
  static constexpr int kHiTiles = 2 * kTokens / 8;                 // n-tiles of one half of B
  static_assert(kTokens == 4 || kTokens == 8);
  static_assert(kWarps == 4 || kWarps == 8);
  static_assert(kCtas * kWarps <= 12);
  static_assert(kTokens <= kPipelinedMaxTokens);

  struct alignas(16) Stage {
    unsigned char state[kChunks * kChunkPitch];
    Act q[kStageTokens][kDecodeHeadDim];
    Act k[kStageTokens][kDecodeHeadDim];
    Act v[kStageTokens][kTileRows];
    float alpha[kStageTokens], beta[kStageTokens];
    int in_slot, out_slot;
    int item;  // dynamic work order only (produce_dynamic)
  };
  // The rank-T update as an mma: D = P H0 + [W_hi W_hi W_lo 0] [K_hi; K_lo; K_hi; 0], segments of
  // kTokens along k (kUpdateK in all). Its B is read with ldmatrix.trans straight from the operand's
  // k rows (k hi, k lo) and a 16-byte zero block for the last segment: no transposed copy (which
  // took 12 two-byte stores per lane and token, 16-way bank conflicted).
  static constexpr int kUpdateK = 4 * kTokens;
  struct Tokens {
    float k[kTokens][kDecodeHeadDim];  // normalised; rows >= T stay zero
    alignas(16) __nv_bfloat16 operand[kOperandRows][kOperandPitch];
    alignas(16) std::uint32_t zero[4];  // the update B's zero segment (all lanes read these 16 bytes)
    ChunkCoefficients<kTokens> coef;
  };
  using Ring = StageRing<Stage, Tokens, kCtasPerSm>;
  static constexpr int kStages = Ring::kStages;
  using Smem = typename Ring::Smem;
  static constexpr int kSmemBytes = Ring::kSmemBytes;

  // Producer lanes 0..15: one bulk copy per 8-row chunk into its padded place.
  __device__ static void load_state(Stage& st, const State* tile, std::uint64_t* full, int lane) {
    if (lane < kChunks)
      bulk_load(st.state + lane * kChunkPitch, tile + lane * kChunkRows * kDecodeHeadDim, kChunkRows * kRowBytes, full);
  }
};

__device__ __forceinline__ float dot4(const float (&x)[4], const float (&y)[4]) {
  return fmaf(x[0], y[0], fmaf(x[1], y[1], fmaf(x[2], y[2], x[3] * y[3])));
}

// bf16 hi and lo of 4 floats, as two 8-byte words.
__device__ __forceinline__ void split_bf16(const float (&x)[4], uint2& hi, uint2& lo) {
  float h[4], l[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    h[i] = __bfloat162float(__float2bfloat16_rn(x[i]));
    l[i] = x[i] - h[i];
  }
  hi = make_uint2(pack_pair<__nv_bfloat16>(h[0], h[1]), pack_pair<__nv_bfloat16>(h[2], h[3]));
  lo = make_uint2(pack_pair<__nv_bfloat16>(l[0], l[1]), pack_pair<__nv_bfloat16>(l[2], l[3]));
}

// Warp sums of x[0..kCount), interleaved level by level (independent shuffles in flight together).
template <int kCount>
__device__ __forceinline__ void warp_sums(float (&x)[kCount]) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
#pragma unroll
    for (int i = 0; i < kCount; ++i) x[i] += __shfl_xor_sync(0xffffffffu, x[i], offset);
}

// Step 1, by one warp per token t: the operand rows of token t and row t of the coefficients.
// Everything is one reduction of 3 kTokens + 1 raw sums (|k_s|^2, k_s.k_t, k_s.q_t, |q_t|^2;
// the normalisation scales apply afterwards), so its shuffles overlap instead of forming a chain
// per token. Rows s > t (stale stage data for s >= T) are reduced too and never used.
template <class Cfg, class Act, int kTokens>
__device__ void prepare_token(const DecodeParams& p, const typename Cfg::Stage& st, typename Cfg::Tokens& tok, int t, int lane) {
  float q[4], kt[4] = {0.0f, 0.0f, 0.0f, 0.0f}, k[kTokens][4];
  load_floats<Act, 4, LoadPolicy::kPlain>(&st.q[t][4 * lane], q);
#pragma unroll
  for (int s = 0; s < kTokens; ++s) {
    load_floats<Act, 4, LoadPolicy::kPlain>(&st.k[s][4 * lane], k[s]);
    if (s == t) {  // t is the warp's token: select, never a register index
#pragma unroll
      for (int i = 0; i < 4; ++i) kt[i] = k[s][i];
    }
  }
  float sums[3 * kTokens + 1];  // |k_s|^2, k_s.k_t, k_s.q_t, |q_t|^2
#pragma unroll
  for (int s = 0; s < kTokens; ++s) {
    sums[s] = dot4(k[s], k[s]);
    sums[kTokens + s] = dot4(k[s], kt);
    sums[2 * kTokens + s] = dot4(k[s], q);
  }
  sums[3 * kTokens] = dot4(q, q);
  warp_sums(sums);
  const bool l2 = p.use_qk_l2norm;
  const float q_scale = l2 ? rsqrtf(sums[3 * kTokens] + 1e-6f) : 1.0f;
  float k_scale[kTokens], kt_scale = 1.0f;
#pragma unroll
  for (int s = 0; s < kTokens; ++s) {
    k_scale[s] = l2 ? rsqrtf(sums[s] + 1e-6f) : 1.0f;
    if (s == t) kt_scale = k_scale[s];
  }
  float kk_dot[kTokens], kq_dot[kTokens];
#pragma unroll
  for (int s = 0; s < kTokens; ++s) {
    kk_dot[s] = sums[kTokens + s] * k_scale[s] * kt_scale;
    kq_dot[s] = sums[2 * kTokens + s] * k_scale[s] * q_scale;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    q[i] *= q_scale;
    kt[i] *= kt_scale;
  }
  *reinterpret_cast<float4*>(&tok.k[t][4 * lane]) = make_float4(kt[0], kt[1], kt[2], kt[3]);
  uint2 hi, lo;
  split_bf16(kt, hi, lo);
  *reinterpret_cast<uint2*>(&tok.operand[t][4 * lane]) = hi;
  *reinterpret_cast<uint2*>(&tok.operand[2 * kTokens + t][4 * lane]) = lo;
  split_bf16(q, hi, lo);
  *reinterpret_cast<uint2*>(&tok.operand[kTokens + t][4 * lane]) = hi;
  *reinterpret_cast<uint2*>(&tok.operand[3 * kTokens + t][4 * lane]) = lo;
  if (lane == 0) chunk_coefficient_row<kTokens>(t, p.tokens, st.alpha, st.beta[t], kk_dot, kq_dot, tok.coef);
}

template <class Cfg, class Act, int kTokens>
__device__ void consume_chunked(const DecodeParams& p, typename Cfg::Smem& smem, int items) {
  using State = typename Cfg::State;
  constexpr std::int64_t kStateElems = std::int64_t{kDecodeHeadDim} * kDecodeHeadDim;
  const int tid = threadIdx.x;  // < kConsumerThreads
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c4 = lane % 4;  // mma fragment coordinates
  const int T = p.tokens;
  // This thread's two tile rows: fragment rows g and g + 8.
  const int rows[2] = {Cfg::tile_row(g, warp), Cfg::tile_row(g + 8, warp)};
  // ldmatrix/stmatrix row address of this lane within a stage (k-step 0), and of the B operand.
  const int a_row = Cfg::tile_row((lane % 8) + 8 * ((lane / 8) % 2), warp);
  const int a_offset = (a_row / 8) * Cfg::kChunkPitch + (a_row % 8) * Cfg::kRowBytes + 16 * (lane / 16);
  typename Cfg::Tokens& tok = smem.tokens;
  const std::uint32_t b_base = smem_address(&tok.operand[lane % 8][8 * (lane / 8)]);

  int prev_stage = -1;  // the stage of one item ago (warp 0 issued its bulk stores then)
  for (int i = 0;; ++i) {
    int item = nth_item<Cfg>(i);
    if (!Cfg::kDynamicItems && item >= items) break;
    const int s = i % Cfg::kStages;
    mbarrier_wait(&smem.full[s], (i / Cfg::kStages) & 1);
    typename Cfg::Stage& st = smem.stage[s];
    if constexpr (Cfg::kDynamicItems) {
      item = st.item;
      if (item < 0) break;  // uniform: every consumer reads the same stage
    }
    const ItemCoords at = item_coords<Cfg>(p, item);
    const int seq = at.seq, head_v = at.head_v;
    const int in_slot = st.in_slot, out_slot = st.out_slot;
    const bool store = in_slot >= 0 && p.update_state && out_slot >= 0 && out_slot < p.pool_size;

    if (in_slot < 0) {  // padding: zero output rows (uniform branch: no barrier inside)
      for (int e = tid; e < T * Cfg::kTileRows; e += Cfg::kConsumerThreads)
        token_row<Act>(p.output, seq, e / Cfg::kTileRows, head_v)[at.row0 + e % Cfg::kTileRows] = from_float<Act>(0.0f);
    } else {
      const std::uint32_t a_base = smem_address(st.state) + a_offset;
      std::uint32_t a[8][4];  // the warp's 16 rows x 128 columns, k-step by k-step
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) ldmatrix_x4(a[ks], a_base + 32 * ks);

      // A state's later tiles (state-major order) find its tokens prepared by its first tile, the
      // CTA's previous item (same slot, so never padding when this one is not).
      if (item_prepares_tokens<Cfg>(at)) {
        for (int t = warp; t < T; t += Cfg::kConsumerWarpCount) prepare_token<Cfg, Act, kTokens>(p, st, tok, t, lane);
        named_barrier_sync(1, Cfg::kConsumerThreads);
      }

      // H0 [k q]: 4 independent accumulators per n-tile (hi/lo half of B x even/odd k-step), so
      // the mma chain is 4 deep instead of 16, summed at the end.
      float part[Cfg::kHiTiles][4][4];
#pragma unroll
      for (int j = 0; j < Cfg::kHiTiles; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) part[j][c][0] = part[j][c][1] = part[j][c][2] = part[j][c][3] = 0.0f;
#pragma unroll
      for (int ks = 0; ks < 8; ks += 2)
#pragma unroll
        for (int j = 0; j < Cfg::kHiTiles; ++j) {
          std::uint32_t bh[4], bl[4];
          const std::uint32_t b_at = b_base + 2 * (8 * j * Cfg::kOperandPitch + 16 * ks);
          ldmatrix_x4(bh, b_at);
          ldmatrix_x4(bl, b_at + 2 * (2 * kTokens * Cfg::kOperandPitch));
          mma_bf16(part[j][0], a[ks], bh[0], bh[1]);
          mma_bf16(part[j][1], a[ks], bl[0], bl[1]);
          mma_bf16(part[j][2], a[ks + 1], bh[2], bh[3]);
          mma_bf16(part[j][3], a[ks + 1], bl[2], bl[3]);
        }
      float acc[Cfg::kHiTiles][4];
#pragma unroll
      for (int j = 0; j < Cfg::kHiTiles; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[j][r] = (part[j][0][r] + part[j][2][r]) + (part[j][1][r] + part[j][3][r]);
      // Every lane of a quad gets the 2 kTokens products of its two rows.
      float prod[2][2 * kTokens];
#pragma unroll
      for (int j = 0; j < Cfg::kHiTiles; ++j)
#pragma unroll
        for (int src = 0; src < 4; ++src)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            prod[r / 2][8 * j + 2 * src + r % 2] = __shfl_sync(0xffffffffu, acc[j][r], (lane & ~3) | src);

      const ChunkCoefficients<kTokens>& coef = tok.coef;
      float u[2][kTokens];
#pragma unroll
      for (int ri = 0; ri < 2; ++ri) {
        float v[kTokens], o[kTokens];
#pragma unroll
        for (int t = 0; t < kTokens; ++t) v[t] = t < T ? to_float(st.v[t][rows[ri]]) : 0.0f;
        chunk_row_solve<kTokens>(coef, T, &prod[ri][0], &prod[ri][kTokens], v, u[ri], o);
#pragma unroll
        for (int t = 0; t < kTokens; ++t)
          if (t < T && (t & 3) == c4) token_row<Act>(p.output, seq, t, head_v)[at.row0 + rows[ri]] = from_float<Act>(p.scale * o[t]);
      }

      if (p.intermediate != nullptr) {
        // Token by token from H0: H_t = alpha_t H_{t-1} + u_t k_t^T, stored after each token.
        float h[8][8];  // [k-step][register * 2 + half]
#pragma unroll
        for (int ks = 0; ks < 8; ++ks)
#pragma unroll
          for (int r = 0; r < 4; ++r) unpack_pair<__nv_bfloat16>(a[ks][r], h[ks][2 * r], h[ks][2 * r + 1]);
        for (int t = 0; t < T; ++t) {
          const float alpha = st.alpha[t];
          float ut[2];
#pragma unroll
          for (int ri = 0; ri < 2; ++ri) {
            ut[ri] = 0.0f;
#pragma unroll
            for (int tt = 0; tt < kTokens; ++tt) ut[ri] = tt == t ? u[ri][tt] : ut[ri];
          }
          const std::int64_t base = ((std::int64_t{seq} * T + t) * p.heads_v + head_v) * kStateElems;
#pragma unroll
          for (int ks = 0; ks < 8; ++ks)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              const int col = 16 * ks + 2 * c4 + 8 * (r / 2);
              const float2 k2 = *reinterpret_cast<const float2*>(&tok.k[0][0] + t * kDecodeHeadDim + col);
              float& x0 = h[ks][2 * r];
              float& x1 = h[ks][2 * r + 1];
              x0 = fmaf(ut[r % 2], k2.x, alpha * x0);
              x1 = fmaf(ut[r % 2], k2.y, alpha * x1);
              const std::int64_t e = base + std::int64_t{at.row0 + rows[r % 2]} * kDecodeHeadDim + col;
              if (p.intermediate_is_bf16)
                *reinterpret_cast<std::uint32_t*>(static_cast<__nv_bfloat16*>(p.intermediate) + e) = pack_pair<__nv_bfloat16>(x0, x1);
              else
                *reinterpret_cast<float2*>(static_cast<float*>(p.intermediate) + e) = make_float2(x0, x1);
            }
        }
#pragma unroll
        for (int ks = 0; ks < 8; ++ks)
#pragma unroll
          for (int r = 0; r < 4; ++r) a[ks][r] = pack_pair<__nv_bfloat16>(h[ks][2 * r], h[ks][2 * r + 1]);
      } else if (store) {
        // H_T = P(T-1, -1) H0 + W K^T with W[row][s] = P(T-1, s) u_s[row], on the tensor cores: the
        // accumulator fragment of n-tiles 2 ks and 2 ks + 1 is the A fragment of k-step ks, so C is
        // P(T-1, -1) H0 straight from the registers. W and K as bf16 hi + lo along k
        // ([W_hi W_hi W_lo] x [K_hi; K_lo; K_hi]): the product is as exact as fp32 W and K.
        constexpr int kSteps = Cfg::kUpdateK / 16;
        const float decay = coef.decay_from_start[T - 1];
        auto w_at = [&](int ri, int kidx) {  // W's hi/lo value at k index kidx (static)
          const int seg = kidx / kTokens, t = kidx % kTokens;
          if (seg >= 3) return 0.0f;
          const float w = coef.decay_to_end[t] * u[ri][t];
          const float hi = __bfloat162float(__float2bfloat16_rn(w));
          return seg == 2 ? w - hi : hi;
        };
        std::uint32_t wa[kSteps][4];  // A fragments of W (rows g, g + 8; k pairs 2 c4 and 2 c4 + 8)
#pragma unroll
        for (int kk = 0; kk < kSteps; ++kk)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            std::uint32_t v = 0;
#pragma unroll
            for (int cc = 0; cc < 4; ++cc) {  // c4 is a lane value: select among the 4 static cases
              const int kidx = 16 * kk + 8 * (r / 2) + 2 * cc;
              const std::uint32_t packed = pack_pair<__nv_bfloat16>(w_at(r % 2, kidx), w_at(r % 2, kidx + 1));
              v = c4 == cc ? packed : v;
            }
            wa[kk][r] = v;
          }
        // ldmatrix.trans row address of this lane per k-step kk: k index 16 kk + 8 ((lane / 8) % 2)
        // + lane % 8 of segment seg (0, 2: k hi of token t; 1: k lo; 3: zero), columns 8 (lane / 16)
        // onwards, advancing 16 columns (32 bytes) per state k-step ks (not in the zero block).
        std::uint32_t u_addr[kSteps], u_stride[kSteps];
#pragma unroll
        for (int kk = 0; kk < kSteps; ++kk) {
          const int kidx = 16 * kk + 8 * ((lane / 8) % 2) + lane % 8;
          const int seg = kidx / kTokens, t = kidx % kTokens;
          const int row = seg == 1 ? 2 * kTokens + t : t;
          u_addr[kk] = seg == 3 ? smem_address(tok.zero) : smem_address(&tok.operand[row][8 * (lane / 16)]);
          u_stride[kk] = seg == 3 ? 0u : 32u;
        }
#pragma unroll
        for (int ks = 0; ks < 8; ++ks) {
          float c[2][4];
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            unpack_pair<__nv_bfloat16>(a[ks][r], c[r / 2][2 * (r % 2)], c[r / 2][2 * (r % 2) + 1]);
            c[r / 2][2 * (r % 2)] *= decay;
            c[r / 2][2 * (r % 2) + 1] *= decay;
          }
#pragma unroll
          for (int kk = 0; kk < kSteps; ++kk) {
            std::uint32_t b[4];  // n-tiles 2 ks (b[0], b[1]) and 2 ks + 1 (b[2], b[3])
            ldmatrix_x4_trans(b, u_addr[kk] + ks * u_stride[kk]);
            mma_bf16(c[0], wa[kk], b[0], b[1]);
            mma_bf16(c[1], wa[kk], b[2], b[3]);
          }
#pragma unroll
          for (int r = 0; r < 4; ++r) a[ks][r] = pack_pair<__nv_bfloat16>(c[r / 2][2 * (r % 2)], c[r / 2][2 * (r % 2) + 1]);
        }
      }
      if (store) {
#pragma unroll
        for (int ks = 0; ks < 8; ++ks) stmatrix_x4(a_base + 32 * ks, a[ks]);
        fence_async_shared();  // the bulk store (async proxy) reads what this thread wrote
      }
    }
    // Every consumer is done with the stage and with `tok`; the tile in the stage is final.
    named_barrier_sync(1, Cfg::kConsumerThreads);

    if (warp == 0) {
      if (store && lane < Cfg::kChunks) {
        State* tile = static_cast<State*>(p.state) + (std::int64_t{out_slot} * p.heads_v + head_v) * kStateElems +
                      at.row0 * kDecodeHeadDim;
        bulk_store(tile + lane * Cfg::kChunkRows * kDecodeHeadDim, st.state + lane * Cfg::kChunkPitch,
                   Cfg::kChunkRows * Cfg::kRowBytes);
      }
      bulk_commit();
      bulk_wait_read<1>();  // this lane's store of one item ago has read its stage
    }
    // Every consumer thread arrives (warp 0's lanes after their own stores have read the stage):
    // racecheck credits the producer's wait only with the arriving threads' accesses (session 9).
    if (prev_stage >= 0) mbarrier_arrive(&smem.empty[prev_stage]);
    prev_stage = s;
  }
  if (warp == 0) bulk_wait_read<0>();  // shared memory must outlive the last stores' reads
}

template <class Act, int kTokens, int kWarps, int kCtas, ChunkedVariant kVariant>
__global__ void __launch_bounds__(ChunkedConfig<Act, kTokens, kWarps, kCtas, kVariant>::kThreads, kCtas)
    gdn_decode_chunked_kernel(const __grid_constant__ DecodeParams p) {
  using Cfg = ChunkedConfig<Act, kTokens, kWarps, kCtas, kVariant>;
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  auto& smem = *reinterpret_cast<typename Cfg::Smem*>(smem_bytes);
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbarrier_init(&smem.full[s], kProducerArrivals);  // producer lanes (+ the copies' bytes)
      mbarrier_init(&smem.empty[s], Cfg::kConsumerThreads);  // every consumer thread (warp 0 once its stores have read it)
    }
    mbarrier_init_fence();
  }
  // Tokens past T keep zero operand rows and k rows for the whole launch.
  for (int e = threadIdx.x; e < kTokens * kDecodeHeadDim; e += blockDim.x) (&smem.tokens.k[0][0])[e] = 0.0f;
  for (int e = threadIdx.x; e < Cfg::kOperandRows * Cfg::kOperandPitch; e += blockDim.x)
    (&smem.tokens.operand[0][0])[e] = __float2bfloat16_rn(0.0f);
  if (threadIdx.x < 4) smem.tokens.zero[threadIdx.x] = 0u;
  allow_dependent_launch();  // PDL as in the pipelined kernel: the set-up above needs no global memory
  __syncthreads();
  wait_for_previous_grid();
  const int items = p.batch * p.heads_v * Cfg::kTilesPerState;
  if constexpr (Cfg::kDynamicItems) {
    if (threadIdx.x >= Cfg::kConsumerThreads) produce_dynamic<Cfg, Act, typename Cfg::State>(p, smem, items);
    else consume_chunked<Cfg, Act, kTokens>(p, smem, items);
    finish_dynamic_items(p);
  } else {
    if (threadIdx.x >= Cfg::kConsumerThreads) produce<Cfg, Act, typename Cfg::State>(p, smem, items);
    else consume_chunked<Cfg, Act, kTokens>(p, smem, items);
  }
}

template <class Act, int kTokens, int kWarps, int kCtas, ChunkedVariant kVariant>
void launch_chunked(const DecodeParams& params, Stream stream) {
  using Cfg = ChunkedConfig<Act, kTokens, kWarps, kCtas, kVariant>;
  constexpr auto kernel = gdn_decode_chunked_kernel<Act, kTokens, kWarps, kCtas, kVariant>;
  constexpr int kStaticPercent = kVariant == ChunkedVariant::kStateMajorTail ? kDecodeChunkedTailStaticPercent : 0;
  launch_resident<Cfg, kernel, Cfg::kCtasPerSm>(params, stream, kStaticPercent);
}

}  // namespace fastinfer::gdn::decode_sm90

namespace fastinfer::gdn {

template <DType kAct, int kWarps, int kCtasPerSm, ChunkedVariant kVariant>
void launch_decode_chunked_sm90(const DecodeParams& params, Stream stream) {
  using Act = typename decode_sm90::CudaType<kAct>::type;
  // Three CTAs per SM fit only windows of <= 4 tokens (stages and token buffers of 8 tokens do not):
  // longer windows run on two.
  constexpr int kCtasLong = kCtasPerSm * kWarps > 8 ? 8 / kWarps : kCtasPerSm;
  if (params.tokens > decode_sm90::kPipelinedMaxTokens) {  // a stage holds at most 8 tokens
    launch_decode_sm90<kAct, DType::kBFloat16, 8, 4>(params, 4, stream);
  } else if (params.tokens <= 4) {
    decode_sm90::launch_chunked<Act, 4, kWarps, kCtasPerSm, kVariant>(params, stream);
  } else {
    decode_sm90::launch_chunked<Act, 8, kWarps, kCtasLong, kVariant>(params, stream);
  }
}

}  // namespace fastinfer::gdn
