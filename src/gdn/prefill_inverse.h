#pragma once
// T = (I + strict_lower(diag(beta) K K^T))^-1 of every 64-token chunk of a non-CP prefill call,
// computed before the prefill kernel by CP stage 1 (all chunks and heads in parallel) so that the
// kernel's producer loads T instead of solving it (PrefillParams::chunk_inverse).
#include <cstddef>

#include "fastinfer/context.h"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn {

// Launches the chunk table and stage 1 on `stream` into the (device, stream, "gdn.prefill.inverse")
// workspace and returns the Tinv rows for params.chunk_inverse, or nullptr when this call should
// solve in the kernel instead (more chunk rows than stage 1's grid takes, or a workspace above
// kMaxPrecomputedInverseBytes). Params of a call without segment hooks.
const float* precompute_chunk_inverses(const PrefillParams& params, InputType input, int device, Stream stream);

// 16 KiB per chunk and head: cap the workspace (unmeasured; the 8192 x 32 16/64 shape would need
// 12.9 GB, as much as its inputs and outputs together).
inline constexpr std::size_t kMaxPrecomputedInverseBytes = std::size_t{4} << 30;

}  // namespace fastinfer::gdn
