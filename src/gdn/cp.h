#pragma once
// The GDN context-parallel (CP) prefill pipeline (issue 6), internal entry points. The public
// gdn::prefill decides (PrefillArgs::use_cp = Auto/On/Off) and calls prefill_cp.
//
//   stage 1  block inverses   Tinv per 64-token block and head        (cp_block_inverse_sm90.cuh)
//   stage 2  chunk maps       (M, B) per CP chunk and head            (cp_chunk_maps_sm90.cuh)
//   stage 3  fix-up scan      state entering every chunk              (cp_fixup_sm90.cuh)
//   stage 4  prefill proper   prefill's kernel on the chunks as segments, reading stage 1's Tinv
//
// All stages run on the one resolved {device, stream}; their intermediates are carved from one
// block of WorkspacePool::global() keyed by (device, stream, "gdn.cp").
#include <cstdint>

#include "fastinfer/context.h"
#include "fastinfer/gdn_prefill.h"
#include "gdn/cp_plan.h"
#include "gdn/prefill_validate.h"

namespace fastinfer::gdn::detail {

struct CpOptions {
  // Longest sequence of the call, known to the caller on the host (serving frameworks keep the
  // lengths there). 0 = unknown: the total token count is used as the bound (FlashInfer's choice;
  // it oversizes the grids and the workspace N-fold).
  std::int64_t max_seqlen = 0;
  std::int64_t chunk_len = 0;  // 0 = the chunk rule of make_cp_plan
  bool programmatic_launch = true;  // PDL between stages 1 -> 2 -> 3 -> 4
  // Stage 2 loads the next block behind the current one (cp.async; same bits as without): 1 = on,
  // 0 = off, -1 = the rule (cp_prefetch_blocks, src/gdn/cp_plan.h): on for the mma.sync kernels
  // (1-9 % faster), and for the wgmma kernel only where the map pieces fill the GPU (H200 session
  // 6: 2-5 % faster there, 0-4 % slower with one piece per chunk; docs/GDN_CP.md).
  int prefetch_blocks = -1;
  // Stage 2 feeds its products T, A, [M; B] and Z rounded once to fp16, [M; B] and Z with a
  // power-of-two scale per row (one MMA per product), instead of bf16 hi + lo pairs (2-3 MMAs).
  // docs/GDN_CP.md "Numerics".
  bool fp16_operands = true;
  // With fp16_operands: stage 2's products as warpgroup MMAs (wgmma; [M; B] rows as the register
  // operand of [M; B] A^T and Z K, T from shared memory in T K and T V) instead of mma.sync per
  // warp. Same roundings and k16 order (the same bits on the H200), 8-18 % faster there
  // (docs/GDN_CP.md, Measured, session 5); false = the mma.sync kernel.
  bool wgmma_maps = true;
  // With the wgmma stage 2: stage 1 also writes the operands stage 2 built per block (the T tiles,
  // the fp16 K tile, gL; CpStageParams::block_map_tiles) and no fp32 Tinv (unless final_states is
  // asked for: the stage checks), and stage 2 copies them (cp_chunk_maps_ready_sm90.cuh; the same
  // maps bit for bit). -1 = on (the default rule), 0 = off (stage 2 builds them from Tinv), 1 = on.
  int ready_tiles = -1;
  // Stage 1 leaves the Tinv of each sequence's last chunk unwritten when stage 2 composes no map of
  // it (no final_states): 1/4 of its fp32 stores at 1x128k 16/32, 1/2 at 16/64 1x64k.
  bool skip_last_chunk_inverse = true;
  // Stage 1 writes (and stage 2 reads) only the 16x16 blocks of Tinv on or below the diagonal
  // (Tinv is lower triangular): 10/16 of the fp32 Tinv traffic.
  bool lower_inverse_blocks = true;
  // Stage 2-3 pieces per chunk (CpPlan::map_splits): 0 = the rule cp_map_splits, n > 0 = the
  // largest divisor of the chunk's block count <= n, -1 = the rule when prefill_cp runs every
  // stage, else 1 (run_cp_stages' callers read the maps per chunk, and a resumed fix-up
  // (first_stage 3) must see the layout stages 1-2 wrote).
  int map_splits = -1;
  int last_stage = 3;  // run_cp_stages stops after this stage (1-3; benchmarks time the stages)
  // run_cp_stages / prefill_cp start at this stage (1 or 3). 3 resumes on the "gdn.cp" workspace a
  // call on the same stream with the same plan (same tokens, max_seqlen, chunk_len) filled with
  // stages 1-2, rerunning only the fix-up from this call's initial state: the distributed prefill
  // computes the chunk maps before its exchange and the local prefill after it.
  int first_stage = 1;
  // Stage 3 rows per CTA (8, 16 or 32); 0 = cp_fixup_rows (src/gdn/cp_plan.cpp).
  int fixup_rows = 0;
  // Stage 4 on the prefill kernel without the in-kernel solve (its wgmma consumers): -1 = always;
  // where the plan may not cover every sequence (N > 1 with a max_seqlen hint:
  // cp_plan_covers_tokens), the last segment of a sequence longer than the plan runs in a second,
  // solve-capable launch (stage 3 writes CpStageParams::tail_segment_sequence; usually every item
  // of it is empty). 0 = one launch of the solve-capable instantiation (mma.sync consumers; the
  // path before session 7, for benchmarks).
  int stage4_without_solve = -1;
};

// What stages 1-3 produced, for tests and benchmarks. The pointers point into the call's
// workspace and stay valid until the next CP call on the same stream.
struct CpStageView {
  CpPlan plan;
  const float* block_inverse = nullptr;  // [N * blocks_per_seq, Hsab, 64, 64]
  const void* block_t_gated = nullptr;   // [N * blocks_per_seq, Hsab, 2, 64, 64], stage 4's T_g (hi, lo)
  const float* map_m = nullptr;          // [plan.map_rows(), Hsab, 128, 128]: per piece (plan.map_len() tokens)
  const float* map_b = nullptr;
  const float* chunk_states = nullptr;
  const void* segment_offsets = nullptr;  // [segments + 1], dtype of cu_seqlens (stage 4's table)
  const std::int32_t* segment_sequence = nullptr;
  const std::int32_t* tail_segment_sequence = nullptr;  // or nullptr (CpStageParams::tail_segment_sequence)
};

// Runs stages 1-3 for validated CUDA arguments. With final_states (device fp32
// [N, Hsab, 128, 128]) the last chunk of each sequence is composed as well and the state after it
// is written there (a check of the CP math without stage 4).
CpStageView run_cp_stages(const PrefillArgs& args, const ExecContext& ctx, const CpOptions& options = {},
                          float* final_states = nullptr);

// The whole CP prefill for arguments gdn::prefill has validated (validate_prefill and, for CP,
// validate_prefill_cp): stages 1-3, then stage 4 = the prefill kernel over the CP chunks as
// segments (PrefillParams::segment_*), all on ctx's device and stream.
void prefill_cp(const PrefillArgs& args, const PrefillShape& shape, const ExecContext& ctx,
                const CpOptions& options = {});

}  // namespace fastinfer::gdn::detail
