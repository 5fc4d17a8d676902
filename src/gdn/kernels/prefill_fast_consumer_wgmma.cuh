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
#include "gdn/kernels/prefill_fast_profile.cuh"
#include "gdn/kernels/prefill_fast_wgmma.cuh"
#include "gdn/kernels/prefill_state_io.cuh"

namespace fastinfer::gdn::kernels::fast {

// The state rounded to the operand type as the A fragments of eight k16 steps.
template <InputType kType>
__device__ __forceinline__ void pack_state_as_a(std::uint32_t (&a)[8][4], const StateFragment& state) {
#pragma unroll
  for (int kb = 0; kb < 8; ++kb) {
    a[kb][0] = pack_pair<kType>(state[2 * kb][0], state[2 * kb][1]);
    a[kb][1] = pack_pair<kType>(state[2 * kb][2], state[2 * kb][3]);
    a[kb][2] = pack_pair<kType>(state[2 * kb + 1][0], state[2 * kb + 1][1]);
    a[kb][3] = pack_pair<kType>(state[2 * kb + 1][2], state[2 * kb + 1][3]);
  }
}

// acc[v][t] = S_wg[64][128] x rows[t][128]^T (rows: a swizzled q or k tile): the state packed to
// the operand type, eight k16 steps (step kb in half kb / 4 of the tile, 32 (kb % 4) bytes into
// the row), issued, committed and waited for.
template <InputType kType>
__device__ __forceinline__ void state_times_rows_wgmma(float (&acc)[8][4], const StateFragment& state,
                                                       std::uint32_t rows_address) {
  std::uint32_t a[8][4];
  pack_state_as_a<kType>(a, state);
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

// out = scale O of a full chunk by TMA: staged as O[t][v] into the stage's v tile (this warp's 16
// columns: x_from_v of this warp read them already, and no other warp reads them), which has the
// output map's box layout (two 128-byte-swizzled 64-column halves, one per warpgroup); then one
// thread of each warpgroup stores its half once the warpgroup's warps wrote theirs. The issuing
// thread waits for the store's read before the stage is released (consume_chunk_wgmma's end).
template <InputType kType>
__device__ __forceinline__ void store_output_tma(const float (&acc)[8][4], const ChunkOutput& out, unsigned char* stage,
                                                 int warp, int lane) {
  using Element = typename Operand<kType>::Element;
  Element* tile = reinterpret_cast<Element*>(stage + FastSmem::kV);
  const int mat = lane / 8, row = lane % 8, warpgroup = warp / 4;
  // Matrix i of step m: token tile n = 2 m + i / 2, state rows +8 (i % 2) (as store_output).
#pragma unroll
  for (int m = 0; m < 4; ++m)
    stmatrix_x4_trans(smem_address(tile + swizzled_d(16 * m + 8 * (mat / 2) + row, 16 * warp + 8 * (mat % 2))),
                      pack_pair<kType>(out.scale * acc[2 * m][0], out.scale * acc[2 * m][1]),
                      pack_pair<kType>(out.scale * acc[2 * m][2], out.scale * acc[2 * m][3]),
                      pack_pair<kType>(out.scale * acc[2 * m + 1][0], out.scale * acc[2 * m + 1][1]),
                      pack_pair<kType>(out.scale * acc[2 * m + 1][2], out.scale * acc[2 * m + 1][3]));
  fence_proxy_async_shared();  // read by the TMA store
  named_barrier_sync(FastConfig::kWarpgroupBarrier + warpgroup, 128);
  if (warp % 4 == 0 && lane == 0) {
    tma_store_3d(out.map, tile + 4096 * warpgroup, 64 * warpgroup, out.head, out.token0);
    bulk_commit_group();
  }
}

// Issues S = e^{G_63} S + U_d^T K (U_d = hi + lo, or hi alone single-pass; B = K[t][d] as an
// MN-major operand [k = t][n = d]: step kb from row 16 kb, the 64-column halves 8 KiB apart) as
// one committed group; blocks of 16 padded tokens are skipped (their U is 0). The caller waits.
template <InputType kType>
__device__ __forceinline__ void issue_state_update(StateFragment& state, std::uint32_t (&uda)[4][4],
                                                   std::uint32_t (&uda_lo)[4][4], float decay,
                                                   std::uint32_t k_address, int len) {
  constexpr bool kSingleState = FastConfig::single_pass_state(kType);
  decay_state(state, decay);
  fence_operands(uda);
  if constexpr (!kSingleState) fence_operands(uda_lo);
  fence_operands(state);
  cute::warpgroup_arrive();
#pragma unroll
  for (int kb = 0; kb < 4; ++kb) {
    if (16 * kb < len) {
      const std::uint64_t desc = mn_major_desc(k_address + 2048 * kb, 8192);
      wgmma_rs<kType, 128, gmma::Major::MN, 0>(uda[kb], desc, state);
      if constexpr (!kSingleState) wgmma_rs<kType, 128, gmma::Major::MN, 0>(uda_lo[kb], desc, state);
    }
  }
  cute::warpgroup_commit_batch();
}

// After the update's wait: its registers may be read and written again.
template <InputType kType>
__device__ __forceinline__ void fence_state_update(StateFragment& state, std::uint32_t (&uda)[4][4],
                                                   std::uint32_t (&uda_lo)[4][4]) {
  fence_operands(state);
  fence_operands(uda);
  if constexpr (!FastConfig::single_pass_state(kType)) fence_operands(uda_lo);
}

// One chunk for warp w with the products on wgmma (same steps as consume_chunk). Every group is
// waited for before the next step that needs it; within a group ptxas pipelines the wgmmas at the
// consumers' kConsumerRegisters (at 168 it serialised them, C7511; docs/GDN_PREFILL_FAST.md).
// kWarpgroupP (T_g loaded, prep kP): each warpgroup computes the whole P = (Q K^T) o Gamma into its
// own tile (SS wgmma issued with S K^T; warp w stores row block w % 4 while S K^T runs) and meets
// only its own warps before U P^T; else P comes from prepare_consumer_share (or the producer).
// Full chunks go out by TMA where the output has a map (store_output_tma). tick_part: the
// profile's consumer parts (a debugging aid, compiled in a profile build only).
template <InputType kType, bool kWarpgroupP>
__device__ __forceinline__ void consume_chunk_wgmma(StateFragment& state, unsigned char* stage, unsigned char* smem,
                                                    const ChunkOutput& out, ConsumerPrep prep, int warp, int lane) {
  using Cfg = FastConfig;
  constexpr bool kSingleU = Cfg::single_pass_u(kType), kSingleState = Cfg::single_pass_state(kType);
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const float* exp_g = gates + FastGates::kExpG;
  const int quad = lane % 4;
  const std::uint32_t stage_address = smem_address(stage);
  const int warpgroup = warp / 4;
  const int p_offset = kWarpgroupP ? FastSmem::kP + warpgroup * FastSmem::kSwizzledC : FastSmem::kP;

  if constexpr (!kWarpgroupP) {
    prepare_consumer_share<kType>(stage, prep, warp, lane);
    if (prep != ConsumerPrep::kNone) fence_proxy_async_shared();  // T_g and P are read by wgmma after the barrier
  }
  tick_part(smem + FastSmem::kPartClock, kConsumerPrep);

  float acc[8][4];
  std::uint32_t xa[4][4], xa_lo[4][4];  // X^T as a rounded pair hi + lo (lo unused single-pass)
  if constexpr (kWarpgroupP) {
    float p_acc[8][4];
    std::uint32_t a[8][4];
    pack_state_as_a<kType>(a, state);
    fence_operands(a);
    fence_operands(acc);
    fence_operands(p_acc);
    cute::warpgroup_arrive();
    const std::uint32_t q = stage_address + FastSmem::kQ, k = stage_address + FastSmem::kK;
#pragma unroll
    for (int kb = 0; kb < 8; ++kb) {
      const std::uint32_t step = (kb / 4) * 8192 + (kb % 4) * 32;
      wgmma_ss_64<kType>(k_major_desc(q + step), k_major_desc(k + step), p_acc, kb != 0);
    }
    cute::warpgroup_commit_batch();
#pragma unroll
    for (int kb = 0; kb < 8; ++kb)
      wgmma_rs<kType, 64, gmma::Major::K, 0>(a[kb], k_major_desc(k + (kb / 4) * 8192 + (kb % 4) * 32), acc, kb != 0);
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<1>();
    fence_operands(p_acc);
    if constexpr (Cfg::kPDecayTables)
      store_p_rows_tables<kType>(p_acc, stage, warp % 4, lane, p_offset);
    else
      store_p_rows<kType>(p_acc, stage, warp % 4, 0, warp % 4, lane, p_offset);
    fence_proxy_async_shared();  // P is read by this warpgroup's wgmma after its barrier
    cute::warpgroup_wait<0>();
    fence_operands(acc);
    fence_operands(a);
  } else {
    state_times_rows_wgmma<kType>(acc, state, stage_address + FastSmem::kK);
  }
  x_from_v<kType, !kSingleU>(xa, xa_lo, acc, stage, warp, lane);
  tick_part(smem + FastSmem::kPartClock, kConsumerX);

  // U^T = X^T T_g^T from the hi/lo pairs (hi hi + lo(X) hi(T_g) + hi(X) lo(T_g)), or hi hi alone
  // single-pass, kept as A fragments: plain (for O) and decayed to the chunk end (for S).
  std::uint32_t ua[4][4], uda[4][4], uda_lo[4][4];
  if (!kWarpgroupP && prep != ConsumerPrep::kNone) consumer_sync();  // the shared P and T_g complete
  fence_operands(xa);
  if constexpr (!kSingleU) fence_operands(xa_lo);
  fence_operands(acc);
  cute::warpgroup_arrive();
  issue_times_lower_wgmma<kType>(acc, xa, stage_address + FastSmem::kTGated, true);
  if constexpr (!kSingleU) {
    issue_times_lower_wgmma<kType>(acc, xa_lo, stage_address + FastSmem::kTGated, false);
    issue_times_lower_wgmma<kType>(acc, xa, stage_address + FastSmem::kTGatedLo, false);
  }
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(acc);
  fence_operands(xa);
  if constexpr (!kSingleU) fence_operands(xa_lo);
  pack_as_a<kType>(ua, acc, nullptr, quad);
  if constexpr (kSingleState)
    pack_as_a<kType>(uda, acc, gates + FastGates::kDecayToEnd, quad);
  else
    pack_as_a_split<kType>(uda, uda_lo, acc, gates + FastGates::kDecayToEnd, quad);

  // O^T = (S Q^T) diag(e^G) + U^T P^T.
  state_times_rows_wgmma<kType>(acc, state, stage_address + FastSmem::kQ);
  gate_token_columns(acc, gates + FastGates::kExpGQ, quad);
  if constexpr (kWarpgroupP)  // this warpgroup's P rows complete (each warp fenced its stores)
    named_barrier_sync(FastConfig::kWarpgroupBarrier + warpgroup, 128);
  fence_operands(ua);
  fence_operands(acc);
  cute::warpgroup_arrive();
  issue_times_lower_wgmma<kType>(acc, ua, stage_address + p_offset, false);
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(acc);
  fence_operands(ua);
  tick_part(smem + FastSmem::kPartClock, kConsumerO);
  const bool by_tma = out.map != nullptr && out.len == Cfg::kChunk;
  if (by_tma)
    store_output_tma<kType>(acc, out, stage, warp, lane);
  else
    store_output<kType>(acc, out, smem, warp, lane);
  tick_part(smem + FastSmem::kPartClock, kConsumerStore);
  issue_state_update<kType>(state, uda, uda_lo, exp_g[Cfg::kChunk - 1], stage_address + FastSmem::kK, out.len);
  cute::warpgroup_wait<0>();
  fence_state_update<kType>(state, uda, uda_lo);
  // The stage (its v tile: the output) is released after this chunk: the store has read it.
  if (by_tma && warp % 4 == 0 && lane == 0) bulk_wait_group_read_all();
  tick_part(smem + FastSmem::kPartClock, kConsumerState);
}

}  // namespace fastinfer::gdn::kernels::fast
