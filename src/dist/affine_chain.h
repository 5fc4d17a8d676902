#pragma once
// One small kernel, two uses in the distributed prefill (docs/GDN_DISTRIBUTED.md): compose a
// chain of affine state maps per (sequence, head),
//
//     X_0 = [I; S_0],   X_j = X_{j-1} M_j + [0; B_j]        (X is [M; S], 256 x 128, fp32)
//
// - slice map: the steps are the CP chunk maps of this rank's slice of the sequence (count from
//   the slice length and the chunk length), giving the slice's (M, B); on rank 0 only the state
//   part is kept and it starts from the real initial state, giving the state after the slice;
// - fold: the steps are the maps all-gathered from ranks 1 .. r-1, starting from rank 0's state,
//   giving the state entering rank r's slice (no M part).
// Rows of X evolve independently (row i of X_j needs only row i of X_{j-1}), so each
// (sequence, head) is split across CTAs of 8 rows.
#include <cstdint>

#include "fastinfer/context.h"

namespace fastinfer::dist::detail {

enum class ChainStateType : std::uint8_t { kFloat32, kBFloat16, kFloat16 };

struct AffineChainParams {
  int num_seqs = 0;
  int num_heads = 0;
  bool with_m = false;  // also compose M (rows 0..127 of X, starting at I)

  // S_0: state [slot, head, 128, 128] (inner three dims contiguous) with slot = indices[n] (or n);
  // nullptr or a negative slot = zero.
  const void* init = nullptr;
  ChainStateType init_type = ChainStateType::kFloat32;
  std::int64_t init_slot_stride = 0;
  const std::int32_t* init_indices = nullptr;

  // Step j of sequence n, head h: M at step_m + n * seq_stride + j * step_stride + h * 128 * 128,
  // B at the same offset from step_b (fp32, row-major 128 x 128).
  const float* step_m = nullptr;
  const float* step_b = nullptr;
  std::int64_t seq_stride = 0;
  std::int64_t step_stride = 0;
  // Number of steps: fixed_steps when >= 0; otherwise ceil(len_n / chunk_len) with len_n from
  // cu_seqlens (int32 or int64), 0 when chunk_len is 0 (no tokens on this rank).
  int fixed_steps = -1;
  const void* cu_seqlens = nullptr;
  bool offsets_are_int64 = false;
  int chunk_len = 0;

  // Results, packed fp32 [N, heads, 128, 128]; out_m only with with_m.
  float* out_m = nullptr;
  float* out_state = nullptr;
};

// Launches the chain on `stream` (checked).
void launch_affine_chain(const AffineChainParams& params, Stream stream);

// The same composition on the host in fp64 over host arrays (the CPU mirror the kernel is tested
// against, and the math the rank tests check against the serial recurrence). Pointers are host
// memory; results are written as doubles.
struct AffineChainHostArgs {
  int num_seqs = 0, num_heads = 0;
  bool with_m = false;
  const double* init = nullptr;  // packed [N, heads, 128, 128] or nullptr = zero
  const double* step_m = nullptr;
  const double* step_b = nullptr;
  std::int64_t seq_stride = 0, step_stride = 0;
  const int* steps = nullptr;  // [N] steps per sequence
  double* out_m = nullptr;
  double* out_state = nullptr;
};
void affine_chain_host(const AffineChainHostArgs& args);

}  // namespace fastinfer::dist::detail
