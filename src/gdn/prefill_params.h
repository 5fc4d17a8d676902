#pragma once
// The plain-struct boundary between the GDN prefill dispatch and its kernels: pointers, strides
// (in elements) and flags, no CUDA or CuTe types.
#include <cstdint>

namespace fastinfer::gdn {

// Storage type of a state tensor (initial, final, checkpoints); accumulation is always fp32.
enum class StateType : std::uint8_t { kFloat32, kBFloat16, kFloat16 };

struct StateTensorParams {
  void* data = nullptr;  // nullptr: absent
  StateType type = StateType::kFloat32;
  std::int64_t slot_stride = 0;  // elements between rows of the first dimension (>= Hsab*128*128)
  std::int64_t num_slots = 0;    // rows of the first dimension; the kernel never goes past them
};

struct PrefillParams {
  // Inputs [T, H, 128]; the last dimension is contiguous.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  std::int64_t q_stride_token = 0, q_stride_head = 0;
  std::int64_t k_stride_token = 0, k_stride_head = 0;
  std::int64_t v_stride_token = 0, v_stride_head = 0;
  const float* alpha = nullptr;  // [T, Hsab]; nullptr = 1
  const float* beta = nullptr;   // [T, Hsab]; nullptr = 1
  std::int64_t alpha_stride_token = 0, beta_stride_token = 0;
  void* output = nullptr;  // [T, Hsab, 128], the input dtype
  std::int64_t out_stride_token = 0, out_stride_head = 0;

  // Sequences: cu_seqlens [N + 1]. Offsets outside [0, total_tokens] or decreasing make that
  // sequence empty (the kernel never reads or writes outside the packed tensors).
  const void* cu_seqlens = nullptr;
  bool offsets_are_int64 = false;
  int num_seqs = 0;
  std::int64_t total_tokens = 0;

  int num_q_heads = 0, num_k_heads = 0, num_v_heads = 0, num_state_heads = 0;
  float scale = 0.0f;  // already resolved (never 0 here)
  bool use_qk_l2norm = false;

  // States. state_indices (int32, [N]) maps a sequence to its slot in a pool; nullptr means the
  // packed form (slot n for sequence n). Negative slots: start from zero, do not write.
  StateTensorParams initial_state;
  StateTensorParams output_state;
  const std::int32_t* state_indices = nullptr;

  // Checkpoints (checkpoint_every > 0): rows checkpoint_starts[n] + c - 1, dtype of cu_seqlens.
  StateTensorParams checkpoints;
  const void* checkpoint_starts = nullptr;
  int checkpoint_every = 0;

  // Segments, for the context-parallel pipeline (issue 6, docs/GDN_CP.md); gdn::prefill's own path
  // leaves them null. segment_offsets [S + 1] (dtype of cu_seqlens) and segment_sequence [S] int32
  // cut the sequences into segments, one CTA row each (grid (S, Hsab)): segment s covers tokens
  // [segment_offsets[s], segment_offsets[s + 1]) of sequence segment_sequence[s]; an empty segment
  // does nothing. Every segment starts from segment_states[s] (fp32 [S, Hsab, 128, 128], packed),
  // the state entering it, and never reads initial_state (the CP fix-up has read it), so
  // output_state may alias initial_state although segments run concurrently. Only the segment
  // that ends its sequence (segment_offsets[s + 1] == cu_seqlens[n + 1]) writes output_state;
  // checkpoint positions count from the sequence start. Segment boundaries must be multiples of
  // 64 tokens from the sequence start (checkpoints and chunks then line up with the non-CP path).
  // chunk_inverse (optional): the gate-free Tinv = (I + strict_lower(diag(beta) K K^T))^-1 of every
  // 64-token chunk, fp32 [rows, Hsab, 64, 64] (CP stage 1's layout), read instead of solving it.
  // With the segment hooks (chunk_inverse_segment_blocks > 0), chunk c of segment s is row
  // s * chunk_inverse_segment_blocks + c, and chunks c >= chunk_inverse_segment_blocks (a last
  // segment longer than the plan) solve their own; without them, chunk c of sequence n is row
  // cu_seqlens[n] / 64 + n + c (injective; rows < total_tokens / 64 + num_seqs).
  const void* segment_offsets = nullptr;
  const std::int32_t* segment_sequence = nullptr;
  int num_segments = 0;
  const float* segment_states = nullptr;
  const float* chunk_inverse = nullptr;
  int chunk_inverse_segment_blocks = 0;
  // chunk_t_gated (optional; takes precedence over chunk_inverse): T_g = (Tinv diag(beta)) o Gamma
  // of every chunk as a rounded pair hi + lo in the input dtype, [rows, Hsab, 2, 64, 64] (hi, then
  // lo; zero above the diagonal within the 16x16 blocks on or below it, which are all the kernel
  // reads), the row rule of chunk_inverse (with the segment hooks: chunk_inverse_segment_blocks,
  // chunks past it solve their own): the kernel then neither solves T nor builds T_g.
  const void* chunk_t_gated = nullptr;
  // With the segment hooks and chunk_t_gated: the caller promises that no segment is longer than
  // chunk_inverse_segment_blocks chunks (every chunk has its T_g row), so the launch picks the
  // instantiation without the solve fallback (wgmma consumers). The CP pipeline sets it when its
  // plan covers the longest possible sequence (docs/GDN_CP.md, "Stage 4 on T_g").
  bool chunk_t_gated_covers_segments = false;
  // Launch as a programmatic dependent launch (the kernel waits on griddepcontrol.wait before it
  // reads anything): the CP pipeline overlaps stage 4's launch with the fix-up's tail.
  bool programmatic_launch = false;
};

// Input dtype of q/k/v/output: the one template parameter of the kernel.
enum class InputType : std::uint8_t { kBFloat16, kFloat16 };

}  // namespace fastinfer::gdn
