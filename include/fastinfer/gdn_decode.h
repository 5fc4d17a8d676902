#pragma once
// GDN decode and multi-token (MTP) verification against a state pool (issue 7; docs/GDN_DECODE.md).
//
// Per sequence i, state head h (d = K = V = 128, state H is [V, K] with K contiguous) and token t:
//   alpha = exp(-exp(A_log[h]) * softplus(a[i,t,h] + dt_bias[h]))   (softplus threshold 20)
//   beta  = sigmoid(b[i,t,h])
//   q, k  = L2-normalised (x * rsqrt(sum x^2 + 1e-6)) when use_qk_l2norm
//   H     = alpha * H (I - beta k k^T) + beta v k^T
//   o     = scale * H q                  (scale 0 -> 1/sqrt(128))
// GVA: q and k have H heads, v / the state / the output HV = r * H heads; state head h uses q/k
// head h / r (repeat-interleave). Equal heads are r = 1.
#include <optional>

#include "fastinfer/context.h"
#include "fastinfer/tensor.h"

namespace fastinfer::gdn {

struct DecodeArgs {
  // Activations, bfloat16 or float16 (one dtype for all three and the output). The last dim must be
  // contiguous, the other strides multiples of 8 elements and the data 16-byte aligned.
  TensorView q;  // [B, T, H, 128]
  TensorView k;  // [B, T, H, 128]
  TensorView v;  // [B, T, HV, 128], HV a multiple of H

  // Gating (FlashInfer's convention). A_log and dt_bias: float32 or the activation dtype; a and b:
  // float32 or the activation dtype. Any strides.
  TensorView A_log;    // [HV]
  TensorView a;        // [B, T, HV]
  TensorView dt_bias;  // [HV]
  TensorView b;        // [B, T, HV]

  // State pool [P, HV, 128 (V), 128 (K)], float32 or bfloat16, contiguous. Read from slot
  // initial_state_indices[i], written (after the last token) to slot output_state_indices[i].
  TensorView state;
  TensorView initial_state_indices;                 // [B] int32; -1: padded sequence
  std::optional<TensorView> output_state_indices;   // [B] int32; default: initial_state_indices

  TensorView output;  // [B, T, HV, 128], the activation dtype; last dim contiguous, aligned like q

  // MTP: the state after every token, [B, T, HV, 128, 128] float32 or bfloat16, contiguous.
  std::optional<TensorView> intermediate_states;

  float scale = 0.0f;  // 0 -> 1/sqrt(128)
  bool use_qk_l2norm = true;
  // Verification only: the pool is not written (intermediate_states and output still are).
  bool disable_state_update = false;
};

// Padding and slots:
// - initial_state_indices[i] == -1: sequence i is padding. Its output rows are zero; no state,
//   intermediate state or pool slot is read or written for it.
// - output_state_indices[i] == -1 (with a valid initial slot): the output is computed but the
//   final state is not written anywhere.
// - The slots written by one call must be distinct, and no sequence may write a slot another
//   sequence of the same call reads (in-place, i.e. output == initial slot, is fine). On CPU
//   tensors these rules and the index range [-1, P) are checked; on the GPU they are preconditions
//   (an out-of-range index is treated as padding there, so memory outside the pool is never touched).
//
// Validation happens before anything is written; errors name the op ("gdn::decode") and the
// argument. CPU tensors run the fp64 reference; CUDA tensors run the sm_90a kernel on `stream`
// (no allocation, no synchronisation; capturable in a CUDA graph).
void decode(const DecodeArgs& args, Stream stream = nullptr);

}  // namespace fastinfer::gdn
