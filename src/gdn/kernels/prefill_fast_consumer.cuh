#pragma once
// The consumer warps of the warp-specialised GDN prefill kernel: the state-dependent products of
// one chunk, written in the transposed ("state row") domain so that each warp works on its own
// 16 state rows v = 16w .. 16w+15 without any CTA barrier:
//   X^T = V^T - (S K^T) diag(e^G)            (S from registers as the A operand)
//   U^T = X^T T_g^T                          (X and T_g as rounded hi + lo pairs)
//   O^T = (S Q^T) diag(e^G) + U^T P^T,       out = scale O
//   S   = e^{G_63} S + (U^T diag(e^{G_63 - G})) K
// The accumulator of one product is re-packed in registers as the A operand of the next (the
// m16n8 C layout of two adjacent n tiles equals the m16k16 A layout). B operands come from the
// stage with ldmatrix (K, Q, T_g, P as [n][k]; K as [k][n] with .trans for the state update).
#include <cstdint>

#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"
#include "gdn/kernels/prefill_fast_products.cuh"
#include "gdn/kernels/prefill_fast_t_gated.cuh"
#include "gdn/kernels/prefill_state_io.cuh"

namespace fastinfer::gdn::kernels::fast {

// acc[v 16][t 64] = S_w[16][128] x rows[t][128]^T; the state is rounded to the operand type.
template <InputType kType, class Element>
__device__ __forceinline__ void state_times_rows(float (&acc)[8][4], const StateFragment& state, const Element* rows,
                                                 int lane) {
  using Cfg = FastConfig;
  const int mat = lane / 8, row = lane % 8;
  const int b_row = row + 8 * (mat / 2), b_col = 8 * (mat % 2);  // swizzled q / k tile
  zero(acc);
#pragma unroll
  for (int kb = 0; kb < Cfg::kDim / 16; ++kb) {
    const std::uint32_t a[4] = {pack_pair<kType>(state[2 * kb][0], state[2 * kb][1]),
                                pack_pair<kType>(state[2 * kb][2], state[2 * kb][3]),
                                pack_pair<kType>(state[2 * kb + 1][0], state[2 * kb + 1][1]),
                                pack_pair<kType>(state[2 * kb + 1][2], state[2 * kb + 1][3])};
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      std::uint32_t b[4];
      ldmatrix_x4(b, smem_address(rows + swizzled_d(b_row + 16 * np, b_col + 16 * kb)));
      mma_pair<kType>(acc[2 * np], acc[2 * np + 1], a, b);
    }
  }
}

// acc[v][t] += A[v][j] x lower[t][j]^T over j <= t (lower is a swizzled [64][64] tile, zero above
// the diagonal; only 16x16 blocks on or below it are read).
template <InputType kType, class Element>
__device__ __forceinline__ void times_lower_transposed(float (&acc)[8][4], const std::uint32_t (&a)[4][4],
                                                       const Element* lower, int lane) {
  using Cfg = FastConfig;
  const int mat = lane / 8, row = lane % 8;
  const int b_row = row + 8 * (mat / 2), b_col = 8 * (mat % 2);
#pragma unroll
  for (int kb = 0; kb < 4; ++kb)
#pragma unroll
    for (int np = kb; np < 4; ++np) {
      std::uint32_t b[4];
      ldmatrix_x4(b, smem_address(lower + swizzled_c(b_row + 16 * np, b_col + 16 * kb)));
      mma_pair<kType>(acc[2 * np], acc[2 * np + 1], a[kb], b);
    }
}

// A fragments (k blocks of 16 t) of acc[v][t] * scale_t, rounded to the operand type.
template <InputType kType>
__device__ __forceinline__ void pack_as_a(std::uint32_t (&a)[4][4], const float (&acc)[8][4], const float* col_scale,
                                          int quad) {
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const float s0 = col_scale ? col_scale[8 * n + 2 * quad] : 1.0f;
    const float s1 = col_scale ? col_scale[8 * n + 2 * quad + 1] : 1.0f;
    a[n / 2][2 * (n % 2)] = pack_pair<kType>(acc[n][0] * s0, acc[n][1] * s1);
    a[n / 2][2 * (n % 2) + 1] = pack_pair<kType>(acc[n][2] * s0, acc[n][3] * s1);
  }
}

// The same, split into a rounded high part and the rounded remainder (hi + lo carries about 16
// mantissa bits): the state-update operand, whose rounding error the state accumulates.
template <InputType kType>
__device__ __forceinline__ void pack_as_a_split(std::uint32_t (&hi)[4][4], std::uint32_t (&lo)[4][4],
                                                const float (&acc)[8][4], const float* col_scale, int quad) {
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const float s0 = col_scale[8 * n + 2 * quad], s1 = col_scale[8 * n + 2 * quad + 1];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float x0 = acc[n][2 * half] * s0, x1 = acc[n][2 * half + 1] * s1;
      const std::uint32_t h = pack_pair<kType>(x0, x1);
      const float2 hf = unpack_pair<kType>(h);
      hi[n / 2][2 * (n % 2) + half] = h;
      lo[n / 2][2 * (n % 2) + half] = pack_pair<kType>(x0 - hf.x, x1 - hf.y);
    }
  }
}

struct ChunkOutput {
  void* rows;  // output row of the chunk's first token, this head
  std::int64_t stride_token;
  int len;
  float scale;
  const void* map = nullptr;  // the output's tensor map (wgmma consumers, full chunks), or nullptr
  int head = 0, token0 = 0;   // its coordinates of the chunk
};

// The output accumulators (eight m16n8 C tiles over the chunk's 64 tokens) times a per-token scale
// (e^{G_t} / |q_t|: FastGates::kExpGQ).
__device__ __forceinline__ void gate_token_columns(float (&acc)[8][4], const float* exp_g, int quad) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[n][i] *= exp_g[8 * n + 2 * quad + i % 2];
}

// The state decayed over the whole chunk: S *= e^{G_63}.
__device__ __forceinline__ void decay_state(StateFragment& state, float decay) {
#pragma unroll
  for (int n = 0; n < kStateTiles; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) state[n][i] *= decay;
}

__device__ __forceinline__ void consumer_sync() {
  named_barrier_sync(FastConfig::kConsumerBarrier, FastConfig::kConsumerThreads);
}

// What the consumers compute of a chunk before its state products (the producer did the rest):
// nothing (it solved T and built T_g and P), P (T_g was precomputed and loaded), or T_g from a
// loaded Tinv and P.
enum class ConsumerPrep : std::uint8_t { kNone, kP, kTGatedAndP };

// The consumers' share of a chunk's preparation: T_g from a loaded Tinv (kTGatedAndP; its
// barrier orders the Tinv reads before the T_g writes) and P (kP, kTGatedAndP). The caller meets
// the other consumers at consumer_sync() before the first product that reads them.
template <InputType kType>
__device__ __forceinline__ void prepare_consumer_share(unsigned char* stage, ConsumerPrep prep, int warp, int lane) {
  if (prep == ConsumerPrep::kTGatedAndP)
    write_t_gated_from_loaded<kType, FastConfig::kConsumerThreads>(stage, 32 * warp + lane, [] { consumer_sync(); });
  if (prep != ConsumerPrep::kNone) compute_p_consumer_share<kType>(stage, warp, lane);
}

// X^T = V^T - (S K^T) diag(e^G) from acc = S K^T, as a rounded pair hi + lo of A fragments (xa_lo
// left alone without kSplit). V^T pairs come from V[t][v] with ldmatrix.trans: matrix mat covers
// t +8 (mat / 2), v +8 (mat % 2), which is the A layout of the 16x16 block (v, t).
template <InputType kType, bool kSplit = true>
__device__ __forceinline__ void x_from_v(std::uint32_t (&xa)[4][4], std::uint32_t (&xa_lo)[4][4], const float (&acc)[8][4],
                                         const unsigned char* stage, int warp, int lane) {
  using Cfg = FastConfig;
  using Element = typename Operand<kType>::Element;
  const Element* v = reinterpret_cast<const Element*>(stage + FastSmem::kV);
  const float* exp_g = reinterpret_cast<const float*>(stage + FastSmem::kGates) + FastGates::kExpG;
  const int quad = lane % 4, mat = lane / 8, row = lane % 8;
  // Rows t + 16 kb share the swizzle of row t: one lane offset, the blocks 16 rows (2 KiB) apart.
  const Element* v_base = v + swizzled_d(row + 8 * (mat / 2), 16 * warp + 8 * (mat % 2));
#pragma unroll
  for (int kb = 0; kb < 4; ++kb) {
    std::uint32_t vt[4];
    ldmatrix_x4_trans(vt, smem_address(v_base + 16 * kb * 64));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int n = 2 * kb + i / 2, c = 2 * (i % 2);  // vt[i]: tile n, rows g (+8 for odd i)
      const float2 vv = unpack_pair<kType>(vt[i]);
      const int t = 8 * n + 2 * quad;
      const float x0 = vv.x - exp_g[t] * acc[n][c], x1 = vv.y - exp_g[t + 1] * acc[n][c + 1];
      xa[kb][i] = pack_pair<kType>(x0, x1);
      if constexpr (kSplit) {
        const float2 hi = unpack_pair<kType>(xa[kb][i]);
        xa_lo[kb][i] = pack_pair<kType>(x0 - hi.x, x1 - hi.y);
      }
    }
  }
}

// out = scale O from acc = O^T[v][t]: staged as O[t][v] in this warp's 16 columns of the output
// tile, then copied out row by row (32 bytes per row and warp).
template <InputType kType>
__device__ __forceinline__ void store_output(const float (&acc)[8][4], const ChunkOutput& out, unsigned char* smem,
                                             int warp, int lane) {
  using Cfg = FastConfig;
  using Element = typename Operand<kType>::Element;
  Element* out_tile = reinterpret_cast<Element*>(smem + FastSmem::kOut);
  __syncwarp();
  // Four transposing stores (stmatrix; 32 scalar 16-bit stores per lane before, session 6): matrix
  // i of step m is token tile n = 2 m + i / 2, state rows +8 (i % 2).
  const int mat = lane / 8, row = lane % 8;
  const std::uint32_t lane_address =
      smem_address(out_tile + (8 * (mat / 2) + row) * Cfg::kPitchD + 16 * warp + 8 * (mat % 2));
#pragma unroll
  for (int m = 0; m < 4; ++m)
    stmatrix_x4_trans(lane_address + m * 16 * Cfg::kPitchD * 2,
                      pack_pair<kType>(out.scale * acc[2 * m][0], out.scale * acc[2 * m][1]),
                      pack_pair<kType>(out.scale * acc[2 * m][2], out.scale * acc[2 * m][3]),
                      pack_pair<kType>(out.scale * acc[2 * m + 1][0], out.scale * acc[2 * m + 1][1]),
                      pack_pair<kType>(out.scale * acc[2 * m + 1][2], out.scale * acc[2 * m + 1][3]));
  __syncwarp();
  for (int i = lane; i < 2 * Cfg::kChunk; i += 32) {
    const int t = i / 2, col = 16 * warp + 8 * (i % 2);
    if (t < out.len)
      *reinterpret_cast<uint4*>(static_cast<Element*>(out.rows) + t * out.stride_token + col) =
          *reinterpret_cast<const uint4*>(out_tile + t * Cfg::kPitchD + col);
  }
}

// One chunk for warp w on mma.sync (FastConfig::wgmma_consumers off; prefill_fast_consumer_wgmma.cuh
// is the wgmma form): reads the stage, updates `state`, writes the output rows [0, len). With
// `prep` kTGatedAndP the consumers first turn the stage's Tinv into T_g and compute P together
// (two consumer barriers: Tinv read before T_g overwrites it, T_g and P complete before U); with
// kP they compute P first and meet at the barrier before U (one barrier later, before the product
// that reads P, spilled 60 bytes more: ptxas, bf16).
template <InputType kType>
__device__ __forceinline__ void consume_chunk(StateFragment& state, unsigned char* stage, unsigned char* smem,
                                              const ChunkOutput& out, ConsumerPrep prep, int warp, int lane) {
  using Cfg = FastConfig;
  using Element = typename Operand<kType>::Element;
  constexpr bool kSingleU = Cfg::single_pass_u(kType), kSingleState = Cfg::single_pass_state(kType);
  const Element* q = reinterpret_cast<const Element*>(stage + FastSmem::kQ);
  const Element* k = reinterpret_cast<const Element*>(stage + FastSmem::kK);
  const Element* t_gated = reinterpret_cast<const Element*>(stage + FastSmem::kTGated);
  [[maybe_unused]] const Element* t_gated_lo = reinterpret_cast<const Element*>(stage + FastSmem::kTGatedLo);
  const Element* p_tile = reinterpret_cast<const Element*>(stage + FastSmem::kP);
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const float* exp_g = gates + FastGates::kExpG;
  const int quad = lane % 4, mat = lane / 8, row = lane % 8;

  float acc[8][4];
  std::uint32_t xa[4][4], xa_lo[4][4];  // X^T as a rounded pair hi + lo
  prepare_consumer_share<kType>(stage, prep, warp, lane);
  state_times_rows<kType>(acc, state, k, lane);
  x_from_v<kType, !kSingleU>(xa, xa_lo, acc, stage, warp, lane);
  // U^T = X^T T_g^T from the hi/lo pairs (hi hi + lo(X) hi(T_g) + hi(X) lo(T_g); lo lo is below
  // fp32 noise; hi hi alone single-pass), kept as A fragments: plain (for O) and decayed to the
  // chunk end (for S).
  std::uint32_t ua[4][4], uda[4][4], uda_lo[4][4];
  if (prep != ConsumerPrep::kNone) consumer_sync();
  zero(acc);
  times_lower_transposed<kType>(acc, xa, t_gated, lane);
  if constexpr (!kSingleU) {
    times_lower_transposed<kType>(acc, xa_lo, t_gated, lane);
    times_lower_transposed<kType>(acc, xa, t_gated_lo, lane);
  }
  pack_as_a<kType>(ua, acc, nullptr, quad);
  if constexpr (kSingleState)
    pack_as_a<kType>(uda, acc, gates + FastGates::kDecayToEnd, quad);
  else
    pack_as_a_split<kType>(uda, uda_lo, acc, gates + FastGates::kDecayToEnd, quad);

  // O^T = (S Q^T) diag(e^G) + U^T P^T.
  state_times_rows<kType>(acc, state, q, lane);
  gate_token_columns(acc, gates + FastGates::kExpGQ, quad);
  times_lower_transposed<kType>(acc, ua, p_tile, lane);
  store_output<kType>(acc, out, smem, warp, lane);

  // S = e^{G_63} S + U_d^T K with U_d = hi + lo (the bf16 final-state error of a single rounded
  // U_d exceeded FlashInfer's state tolerance, docs/GDN_PREFILL.md "Known gap"): B = K[t][d] as
  // [k][n] through ldmatrix.trans (matrix mat covers t +8 (mat % 2), d +8 (mat / 2)), shared by
  // both products. Blocks of 16 padded tokens are skipped (their U is 0).
  decay_state(state, exp_g[Cfg::kChunk - 1]);
  const int k_row = row + 8 * (mat % 2), k_col = 8 * (mat / 2);
#pragma unroll
  for (int kb = 0; kb < 4; ++kb) {
    if (16 * kb < out.len) {
#pragma unroll
      for (int np = 0; np < 8; ++np) {
        std::uint32_t b[4];
        ldmatrix_x4_trans(b, smem_address(k + swizzled_d(k_row + 16 * kb, k_col + 16 * np)));
        mma_pair<kType>(state[2 * np], state[2 * np + 1], uda[kb], b);
        if constexpr (!kSingleState) mma_pair<kType>(state[2 * np], state[2 * np + 1], uda_lo[kb], b);
      }
    }
  }
}

}  // namespace fastinfer::gdn::kernels::fast
