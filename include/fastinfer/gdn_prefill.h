#pragma once
// GDN prefill: the chunked gated delta rule over packed variable-length sequences (issue 5).
// Semantics follow FlashInfer's chunk_gated_delta_rule, except that use_qk_l2norm really
// normalises q and k. Per sequence and state head h (d = 128, state H is [V, K], K contiguous):
//
//     H_t = alpha_t * H_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T
//     o_t = scale * H_t q_t
//
// Heads: Hsab = max(Hq, Hv); GQA (Hk == Hv, Hq = r*Hk) or GVA (Hq == Hk, Hv = r*Hq); state head h
// reads q head h*Hq/Hsab, k head h*Hk/Hsab and v head h*Hv/Hsab. The math is in docs/GDN_PREFILL.md.
#include <cstdint>
#include <optional>

#include "fastinfer/context.h"
#include "fastinfer/tensor.h"

namespace fastinfer::gdn {

inline constexpr int kHeadDim = 128;

// Whether the context-parallel (CP) pipeline runs (docs/GDN_CP.md): it cuts long sequences into
// chunks so that few (sequence, head) pairs still fill the GPU. Same results up to rounding.
enum class UseCp : std::uint8_t {
  kAuto,  // CP when it is faster on this GPU (the measured rule in docs/GDN_CP.md); for now never,
          // until CP's final states meet the bf16 state tolerance at alpha = beta = 1
  kOn,    // always CP; an error for arguments it does not support (CPU tensors, > 65535 sequences)
  kOff,   // never CP
};

struct PrefillArgs {
  // Packed tokens of all sequences: q [T, Hq, 128], k [T, Hk, 128], v [T, Hv, 128]; bfloat16 or
  // float16, one dtype for all three; last dimension contiguous (row strides are free).
  TensorView q, k, v;
  // [N + 1] int32 or int64, non-decreasing, cu_seqlens[0] >= 0, cu_seqlens[N] <= T. Sequences of
  // length zero are allowed: they write nothing and leave their state slot untouched.
  TensorView cu_seqlens;
  // Gates [T, Hsab] float32 (row stride free, last dim contiguous); absent means 1. alpha is the
  // linear forget gate in (0, 1] (values below 1e-35 act as 0), beta the update gate.
  std::optional<TensorView> alpha, beta;
  float scale = 0.0f;  // 0 -> 1/sqrt(128)
  bool use_qk_l2norm = false;  // q, k <- x * rsqrt(sum x^2 + 1e-6) before use

  // [T, Hsab, 128], same dtype as q; rows of zero-length sequences are not written.
  TensorView output;

  // States, [N, Hsab, 128(V), 128(K)] (packed: row n is sequence n) or, when state_indices is
  // given, a pool [P, Hsab, 128, 128] where sequence n uses slot state_indices[n]. The inner
  // three dimensions are contiguous; the first-dimension stride may be padded. float32,
  // bfloat16 or float16 (accumulation is always float32). output_state may alias initial_state.
  // Absent initial_state means zero; absent output_state means the final state is not written.
  std::optional<TensorView> initial_state;
  std::optional<TensorView> output_state;
  // [N] int32; applies to initial_state and output_state. A negative index means "no slot":
  // that sequence starts from zero and its final state is not written (padding rows).
  std::optional<TensorView> state_indices;

  // Checkpoints: with checkpoint_every_n_tokens = n (> 0, multiple of 64), the state after n, 2n,
  // ... tokens of sequence i (every multiple of n up to and including its length) is written to
  // state_checkpoints[checkpoint_cu_starts[i] + c - 1] for c = 1, 2, ...; a checkpoint that would
  // land at or past checkpoint_cu_starts[i + 1] is dropped. state_checkpoints is
  // [C, Hsab, 128, 128] (same layout rules and dtypes as the states), checkpoint_cu_starts
  // [N + 1] with the dtype of cu_seqlens. gdn::checkpoint_count() says how many a sequence needs.
  int checkpoint_every_n_tokens = 0;
  std::optional<TensorView> state_checkpoints;
  std::optional<TensorView> checkpoint_cu_starts;

  UseCp use_cp = UseCp::kAuto;
  // Optional host-side hint: the longest sequence of the call (serving frameworks know the
  // lengths on the host). 0 = unknown: the total token count T is the bound, which sizes the CP
  // chunks, grids and workspace as if one sequence held every token. It sizes the CP plan, and a
  // hint in (0, 64] on a call without states or checkpoints selects the short-sequence kernels
  // (docs/GDN_PREFILL_SHORT.md). A sequence longer than the hint is still computed exactly, more slowly.
  std::int64_t max_seqlen = 0;
};

// Runs the prefill. All tensors on the CPU: the CPU reference (src/ref) runs. All on one CUDA
// device: the sm_90a kernel runs on `stream` (asynchronous, no host sync, graph capturable).
// Every violated constraint throws fastinfer::Error before anything is written.
void prefill(const PrefillArgs& args, Stream stream = nullptr);

// The number of checkpoints a sequence of `length` tokens produces with `every_n_tokens`.
constexpr std::int64_t checkpoint_count(std::int64_t length, std::int64_t every_n_tokens) {
  return every_n_tokens > 0 ? length / every_n_tokens : 0;
}

}  // namespace fastinfer::gdn
