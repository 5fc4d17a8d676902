#pragma once
// Host-side declarations of the short-sequence GDN prefill kernels (src/gdn/kernels/
// prefill_short_sm90.cuh and prefill_short_serial_sm90.cuh, docs/GDN_PREFILL_SHORT.md). No CUDA
// headers: plain C++.
#include <cstddef>
#include <cstdint>

#include "fastinfer/context.h"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn {

// The longest sequence the short kernels compute themselves (their item capacity: 32 or 64
// tokens); longer ones run on the serial kernel launched after them.
inline constexpr std::int64_t kShortPrefillMaxTokens = 64;

// Bytes of dynamic shared memory of one CTA (the most state heads at a time) for items of
// `max_tokens` (<= 32: the 32-token kernel, else the 64-token one).
std::size_t prefill_short_smem_bytes(int max_tokens);

// Resident CTAs per SM of the short kernels: [0: 32-token items, 1: 64][state heads at a time, 1..4].
struct ShortOccupancy {
  int ctas_per_sm[2][5] = {};
};

// State heads one CTA serves at a time (its warps: that times max_tokens / 32).
int prefill_short_heads_at_once(int max_tokens, int heads_per_k_head);

// Opts the kernels into their shared-memory sizes on the current device; their occupancy there.
template <InputType kType>
ShortOccupancy prepare_prefill_short();

// The short kernel for items (sequence, k head) of up to 32 (max_tokens <= 32) or 64 tokens on
// `ctas` persistent CTAs (0: one CTA per item), then the serial kernel for longer sequences (grid
// ceil(N / 128) x Hsab), asynchronous on `stream`. The params must have no states, checkpoints,
// segments or precomputed inverses.
template <InputType kType>
void launch_prefill_short(const PrefillParams& params, int max_tokens, std::int64_t ctas, Stream stream);

extern template ShortOccupancy prepare_prefill_short<InputType::kBFloat16>();
extern template ShortOccupancy prepare_prefill_short<InputType::kFloat16>();
extern template void launch_prefill_short<InputType::kBFloat16>(const PrefillParams&, int, std::int64_t, Stream);
extern template void launch_prefill_short<InputType::kFloat16>(const PrefillParams&, int, std::int64_t, Stream);

}  // namespace fastinfer::gdn
