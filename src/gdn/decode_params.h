#pragma once
// DecodeParams: the plain-struct boundary between the gdn::decode dispatch and its kernels.
// Pointers, element strides and flags only; built once per call from validated DecodeArgs.
#include <cstdint>

#include "fastinfer/gdn_decode.h"

namespace fastinfer::gdn {

inline constexpr int kDecodeHeadDim = 128;  // K = V = 128; the only head size of the op

// Element type of a gating scalar tensor, read per (sequence, token, head) by the kernel.
enum class GateType : std::uint8_t { kFloat32, kFloat16, kBFloat16 };

// A [B, T, heads] tensor of gate scalars (a or b).
struct GateTensor {
  const void* data;
  std::int64_t stride_b, stride_t, stride_h;
  GateType type;
};

// A per-head vector (A_log or dt_bias).
struct HeadVector {
  const void* data;
  std::int64_t stride;
  GateType type;
};

// A [B, T, heads, 128] activation tensor with a contiguous last dim.
struct TokenTensor {
  void* data;  // const for q, k, v
  std::int64_t stride_b, stride_t, stride_h;
};

struct DecodeParams {
  TokenTensor q, k, v, output;
  HeadVector A_log, dt_bias;
  GateTensor a, b;

  void* state;             // [pool, heads_v, 128, 128], contiguous
  const std::int32_t* initial_indices;
  const std::int32_t* output_indices;  // never null: the initial indices when not given
  std::int64_t initial_indices_stride, output_indices_stride;
  void* intermediate;      // [batch, tokens, heads_v, 128, 128] or null
  bool intermediate_is_bf16;

  int batch, tokens, heads_qk, heads_v, pool_size;
  float scale;             // resolved (never 0)
  bool use_qk_l2norm;
  bool update_state;       // !disable_state_update
  int sm_count;            // of the device the tensors are on (the pipelined kernel's grid)
  // Apply each token's decay lazily (decode_token_step.cuh; one FMA per state element and token
  // less). Always true from make_decode_params; false only where tests and the benchmark compare.
  bool lazy_decay;
  // Per-CTA timestamps of a profile instantiation (kernels/decode_profile.cuh; the benchmark's
  // gdn_decode_profile routine only). Production kernels never read it; null from make_decode_params.
  std::uint64_t* profile_stamps;
  // The dynamic pipelined kernels' item counters ({next claim, finished CTAs}, zero between
  // launches); set by their launcher from the stream's workspace, null otherwise.
  int* work_counter;
  // The dynamic resident kernels' steps (items, or both tiles of a state in the tensor-core kernel's
  // state-major order) per CTA in the static order before the first claim (at least the producer's
  // prefetch depth); set by their launcher unless positive here (benchmark sweeps and tests); 0
  // from make_decode_params.
  int static_steps;
  // Launch the resident kernels (pipelined, tensor-core) with programmatic dependent launch
  // (session 9): their CTAs may start while the stream's previous kernel finishes, set up their
  // barriers and wait (griddepcontrol.wait) before touching global memory; they let the next
  // kernel start early in turn. True from make_decode_params (false only where the benchmark and
  // the tests compare); the register kernels ignore it.
  bool programmatic_launch;
  // The pipelined kernels' producer loads the slots and gates of a CTA's first items for every
  // stage of the ring at entry and issues all their copies at once (session 9), instead of two
  // items ahead from the first item on. The claimed-tail tactics' launcher always sets it (measured
  // faster there, slower for the static order); false from make_decode_params.
  bool fill_ring_at_start;
};

// The kernel view of validated arguments (scale resolved, output indices defaulted). Defined in
// decode.cpp; the benchmark and the tests use it to drive a runner of their choosing.
DecodeParams make_decode_params(const DecodeArgs& args);

}  // namespace fastinfer::gdn
