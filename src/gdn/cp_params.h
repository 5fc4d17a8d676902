#pragma once
// The plain-struct boundary between the CP pipeline's dispatch and its stage kernels (issue 6):
// pointers, strides in elements, flags; no CUDA or CuTe types.
#include <cstdint>

namespace fastinfer::gdn::detail {

enum class CpInputType : std::uint8_t { kBFloat16, kFloat16 };
enum class CpStateType : std::uint8_t { kFloat32, kBFloat16, kFloat16 };

struct CpStageParams {
  // Inputs [T, H, 128], last dimension contiguous; token strides multiples of 8 elements.
  const void* k = nullptr;
  const void* v = nullptr;
  std::int64_t k_stride_token = 0, k_stride_head = 0;
  std::int64_t v_stride_token = 0, v_stride_head = 0;
  const float* alpha = nullptr;  // [T, Hsab]; nullptr = 1
  const float* beta = nullptr;   // [T, Hsab]; nullptr = 1
  std::int64_t alpha_stride_token = 0, beta_stride_token = 0;
  const void* cu_seqlens = nullptr;  // [N + 1], int32 or int64
  bool offsets_are_int64 = false;
  int num_seqs = 0;
  int num_k_heads = 0, num_v_heads = 0, num_state_heads = 0;
  bool use_qk_l2norm = false;

  // Initial state (fix-up): packed [N, Hsab, 128, 128] or pool with state_indices; nullptr = 0.
  const void* initial_state = nullptr;
  CpStateType initial_state_type = CpStateType::kFloat32;
  std::int64_t initial_state_slot_stride = 0;
  std::int64_t initial_state_num_slots = 0;  // slots at or past it read as zero, like negative ones
  const std::int32_t* state_indices = nullptr;

  // Layout (see CpPlan): block b of sequence n is row n * blocks_per_seq + b, chunk c is row
  // n * chunks_per_seq + c.
  int chunk_len = 0;
  int chunks_per_seq = 0;
  int blocks_per_seq = 0;
  // Stages 2-3 cut every chunk into map_splits pieces of chunk_len / map_splits tokens (a
  // multiple of 64): piece q of chunk c of sequence n is map row (n * chunks_per_seq + c) *
  // map_splits + q.
  int map_splits = 1;

  // Workspace slices.
  float* block_inverse = nullptr;  // [N * blocks_per_seq, Hsab, 64, 64], Tinv without diag(beta)
  // Stage 1 leaves the Tinv of each sequence's last chunk unwritten (stage 2 composes no map of
  // it when final_states is null; stage 4 reads T_g only). Needs chunk_len.
  bool skip_last_chunk_inverse = false;
  // Stage 1 writes only the 16x16 blocks of Tinv on or below the diagonal (the others are zero;
  // stage 2 then copies only these): 10/16 of the fp32 stores and loads.
  bool lower_inverse_blocks = false;
  // Optional (gdn::prefill's non-CP path): stage 1 also writes T_g = (Tinv diag(beta)) o Gamma of
  // every block as a rounded pair hi + lo in the input dtype, [N * blocks_per_seq, Hsab, 2, 64, 64]
  // (hi, then lo; only the 16x16 blocks on or below the diagonal are written); block_inverse may
  // then be null.
  void* block_t_gated = nullptr;
  // Optional (CpOptions::ready_tiles): stage 1 also writes, for every block stage 2 maps, the
  // operands the wgmma stage 2 would otherwise build per block, in wgmma core-matrix order (16-byte
  // row q = (r / 8) * (cols / 8) * 8 + (c / 8) * 8 + r % 8 of 8 elements; only the 16x16 blocks on
  // or below the diagonal of the T tiles are written), and stage 2 copies them into shared memory:
  // T = Tinv diag(beta) in fp16 and T diag(exp(gL - G)) as hi, lo in the input type,
  // [N * blocks_per_seq, Hsab, 3, 64, 64]; the normalised K in fp16, [N * blocks_per_seq, Hk, 64, 128]
  // (written by the CTA of the k head's first state head); gL, [N * blocks_per_seq, Hsab].
  void* block_map_tiles = nullptr;
  void* block_k_tiles = nullptr;
  float* block_gate_last = nullptr;
  float* map_m = nullptr;          // [N * chunks_per_seq * map_splits, Hsab, 128, 128], M of H_out = H_in M + B
  float* map_b = nullptr;          // same shape, B
  float* chunk_states = nullptr;   // [N * chunks_per_seq, Hsab, 128, 128], the state entering each chunk
  // Optional: when set, stage 2 also composes the last chunk of each sequence and stage 3 writes
  // the state after it here ([N, Hsab, 128, 128]); the pipeline leaves it null (stage 4 writes
  // the final state), tests use it to check stages 1-3 end to end.
  float* final_states = nullptr;
  // Optional: segment table for stage 4 (segment s = n * chunks_per_seq + c covers tokens
  // [offsets[s], offsets[s + 1]), offsets in the dtype of cu_seqlens), written by stage 3.
  void* segment_offsets = nullptr;
  std::int32_t* segment_sequence = nullptr;
  // Optional, with the segment table: a second sequence table over the same offsets for a
  // sequence longer than the plan (chunks_per_seq x chunk_len, a max_seqlen hint below the longest
  // sequence): its last segment (which runs to the sequence end, past the plan's T_g rows) is -1
  // in segment_sequence and n here, every other segment -1 here. Stage 4 then runs the kernel
  // without the solve on segment_sequence and the solve-capable one on this table.
  std::int32_t* tail_segment_sequence = nullptr;

  bool programmatic_launch = false;  // launch stages 2-3 with programmatic dependent launch
  bool prefetch_blocks = false;      // stage 2 loads block b + 1 (cp.async) while it computes block b
  // Stage 2 rounds T, A, [M; B] and Z once to fp16 (row-scaled) instead of bf16 hi + lo pairs.
  bool fp16_operands = false;
  // With fp16_operands: the stage-2 products as wgmma (cp_chunk_maps_wgmma_sm90.cuh) instead of mma.sync.
  bool wgmma_maps = false;
  int fixup_rows = 32;  // stage 3 rows per CTA: 8, 16 or 32 (128 / fixup_rows CTAs per sequence and head)
};

}  // namespace fastinfer::gdn::detail
