#pragma once
// The consumer warps of the GDN prefill kernel on wgmma (FastConfig::wgmma_consumers): the same
// products, operands and roundings as consume_chunk (prefill_fast_consumer.cuh), per warpgroup of
// 64 state rows (warps 0-3 rows 0-63, warps 4-7 rows 64-127): S, X, U from registers as the A
// operand, q, k, T_g, P from the swizzled stage tiles as B. Each group of products is issued,
// committed and waited for before the next step (which needs its result).
#include <cstdint>

#include "gdn/kernels/prefill_fast_consumer.cuh"
#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"
#include "gdn/kernels/prefill_fast_wgmma.cuh"
#include "gdn/kernels/prefill_state_io.cuh"

namespace fastinfer::gdn::kernels::fast {

// acc[v][t] = S_wg[64][128] x rows[t][128]^T (rows: a swizzled q or k tile): the state packed to
// the operand type, eight k16 steps (step kb in half kb / 4 of the tile, 32 (kb % 4) bytes into
// the row), issued, committed and waited for.
template <InputType kType>
__device__ __forceinline__ void state_times_rows_wgmma(float (&acc)[8][4], const StateFragment& state,
                                                       std::uint32_t rows_address) {
  std::uint32_t a[8][4];
#pragma unroll
  for (int kb = 0; kb < 8; ++kb) {
    a[kb][0] = pack_pair<kType>(state[2 * kb][0], state[2 * kb][1]);
    a[kb][1] = pack_pair<kType>(state[2 * kb][2], state[2 * kb][3]);
    a[kb][2] = pack_pair<kType>(state[2 * kb + 1][0], state[2 * kb + 1][1]);
    a[kb][3] = pack_pair<kType>(state[2 * kb + 1][2], state[2 * kb + 1][3]);
  }
  fence_operands(a);
  fence_operands(acc);
  cute::warpgroup_arrive();
#pragma unroll
  for (int kb = 0; kb < 8; ++kb)
    wgmma_rs<kType, 64, gmma::Major::K, 0>(a[kb], k_major_desc(rows_address + (kb / 4) * 8192 + (kb % 4) * 32), acc,
                                           kb != 0);
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(acc);
  fence_operands(a);
}

// Issues acc[v][t] += A[v][j] x lower[t][j]^T (lower: a swizzled [64][64] tile whose blocks above
// the diagonal are zero, see zero_upper_blocks): four full m64n64k16 steps, step kb 32 kb bytes into
// the rows. Sub-range steps (n64/48/32/16 over the lower blocks only) make ptxas serialise the
// wgmmas (C7511). `overwrite`: the first step replaces acc instead of adding to it.
template <InputType kType>
__device__ __forceinline__ void issue_times_lower_wgmma(float (&acc)[8][4], const std::uint32_t (&a)[4][4],
                                                        std::uint32_t lower_address, bool overwrite) {
#pragma unroll
  for (int kb = 0; kb < 4; ++kb)
    wgmma_rs<kType, 64, gmma::Major::K, 0>(a[kb], k_major_desc(lower_address + 32 * kb), acc, kb != 0 || !overwrite);
}

// One chunk for warp w with the products on wgmma (same steps as consume_chunk). Every group is
// waited for before the next step; within a group ptxas pipelines the wgmmas at the consumers'
// kConsumerRegisters (at 168 it serialised them, C7511; docs/GDN_PREFILL_FAST.md).
template <InputType kType>
__device__ __forceinline__ void consume_chunk_wgmma(StateFragment& state, unsigned char* stage, unsigned char* smem,
                                                    const ChunkOutput& out, ConsumerPrep prep, int warp, int lane) {
  using Cfg = FastConfig;
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const float* exp_g = gates + FastGates::kExpG;
  const int quad = lane % 4;
  const std::uint32_t stage_address = smem_address(stage);

  prepare_consumer_share<kType>(stage, prep, warp, lane);
  if (prep != ConsumerPrep::kNone) fence_proxy_async_shared();  // T_g and P are read by wgmma after the barrier

  float acc[8][4];
  std::uint32_t xa[4][4], xa_lo[4][4];  // X^T as a rounded pair hi + lo
  state_times_rows_wgmma<kType>(acc, state, stage_address + FastSmem::kK);
  x_from_v<kType>(xa, xa_lo, acc, stage, warp, lane);

  // U^T = X^T T_g^T from the hi/lo pairs (hi hi + lo(X) hi(T_g) + hi(X) lo(T_g)), kept as A
  // fragments: plain (for O) and decayed to the chunk end (for S).
  std::uint32_t ua[4][4], uda[4][4], uda_lo[4][4];
  if (prep != ConsumerPrep::kNone) consumer_sync();
  fence_operands(xa);
  fence_operands(xa_lo);
  fence_operands(acc);
  cute::warpgroup_arrive();
  issue_times_lower_wgmma<kType>(acc, xa, stage_address + FastSmem::kTGated, true);
  issue_times_lower_wgmma<kType>(acc, xa_lo, stage_address + FastSmem::kTGated, false);
  issue_times_lower_wgmma<kType>(acc, xa, stage_address + FastSmem::kTGatedLo, false);
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(acc);
  fence_operands(xa);
  fence_operands(xa_lo);
  pack_as_a<kType>(ua, acc, nullptr, quad);
  pack_as_a_split<kType>(uda, uda_lo, acc, gates + FastGates::kDecayToEnd, quad);

  // O^T = (S Q^T) diag(e^G) + U^T P^T.
  state_times_rows_wgmma<kType>(acc, state, stage_address + FastSmem::kQ);
  gate_token_columns(acc, exp_g, quad);
  fence_operands(ua);
  fence_operands(acc);
  cute::warpgroup_arrive();
  issue_times_lower_wgmma<kType>(acc, ua, stage_address + FastSmem::kP, false);
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(acc);
  fence_operands(ua);
  store_output<kType>(acc, out, smem, warp, lane);

  // S = e^{G_63} S + U_d^T K (U_d = hi + lo; B = K[t][d] as an MN-major operand [k = t][n = d]:
  // step kb from row 16 kb, the 64-column halves 8 KiB apart). Blocks of 16 padded tokens are
  // skipped (their U is 0).
  decay_state(state, exp_g[Cfg::kChunk - 1]);
  fence_operands(uda);
  fence_operands(uda_lo);
  fence_operands(state);
  cute::warpgroup_arrive();
#pragma unroll
  for (int kb = 0; kb < 4; ++kb) {
    if (16 * kb < out.len) {
      const std::uint64_t desc = mn_major_desc(stage_address + FastSmem::kK + 2048 * kb, 8192);
      wgmma_rs<kType, 128, gmma::Major::MN, 0>(uda[kb], desc, state);
      wgmma_rs<kType, 128, gmma::Major::MN, 0>(uda_lo[kb], desc, state);
    }
  }
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(state);
  fence_operands(uda);
  fence_operands(uda_lo);
}

}  // namespace fastinfer::gdn::kernels::fast
