#pragma once
// T = (I + strict_lower(diag(beta) K K^T))^-1 of every 64-token chunk of a non-CP prefill call,
// computed before the prefill kernel by CP stage 1 (all chunks and heads in parallel) so that the
// kernel's producer loads T instead of solving it (PrefillParams::chunk_inverse).
#include <cstddef>
#include <cstdint>

#include "fastinfer/context.h"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn {

// What stage 1 writes per chunk and head: the gate-free fp32 Tinv (PrefillParams::chunk_inverse;
// the kernel's consumers build T_g from it) or T_g itself as bf16/fp16 hi + lo
// (PrefillParams::chunk_t_gated; nothing left to build). 16 KiB either way.
enum class PrecomputedForm : std::uint8_t { kInverse, kTGated };

// Launches the chunk table and stage 1 on `stream` into the (device, stream, "gdn.prefill.inverse")
// workspace and returns the rows for params.chunk_inverse (kInverse) or params.chunk_t_gated
// (kTGated), or nullptr when this call should solve in the kernel instead (more chunk rows than
// stage 1's grid takes, or a workspace above max_bytes). Params of a call without segment hooks.
const void* precompute_chunk_inverses(const PrefillParams& params, InputType input, int device, Stream stream,
                                      PrecomputedForm form, std::size_t max_bytes);

// 16 KiB per chunk and head: cap the workspace (unmeasured; the 8192 x 32 16/64 shape would need
// 12.9 GB, as much as its inputs and outputs together).
inline constexpr std::size_t kMaxPrecomputedInverseBytes = std::size_t{4} << 30;

}  // namespace fastinfer::gdn
