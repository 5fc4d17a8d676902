#pragma once
// T = (I + strict_lower(diag(beta) K K^T))^-1 of every 64-token chunk of a non-CP prefill call,
// computed before the prefill kernel by CP stage 1 (all chunks and heads in parallel) so that the
// kernel's producer loads T instead of solving it (PrefillParams::chunk_inverse / chunk_t_gated).
#include <cstddef>
#include <cstdint>

#include "fastinfer/context.h"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn {

// What stage 1 writes per chunk and head: the gate-free fp32 Tinv (PrefillParams::chunk_inverse;
// the kernel's consumers build T_g from it) or T_g itself as bf16/fp16 hi + lo
// (PrefillParams::chunk_t_gated; nothing left to build). 16 KiB either way.
enum class PrecomputedForm : std::uint8_t { kInverse, kTGated };

// How a call's precomputed inverses fit the workspace cap, from host-known sizes only (never
// cu_seqlens, which lives on the device): (T / 64 + N) chunk rows of 16 KiB per state head. When
// all heads do not fit, the call runs in head groups: stage 1 and then the kernel for state heads
// [h0, h0 + heads_per_group), the next group reusing the same workspace (stream order). A group
// is a whole number of GQA/GVA head ratios, so it is again a valid head mapping (head_group).
struct InverseGroups {
  std::int64_t rows = 0;      // chunk rows (PrefillParams::chunk_inverse's row rule)
  int heads_per_group = 0;    // 0: no precomputed inverse (the kernel solves T)
  std::size_t bytes = 0;      // workspace of one group
  bool solves() const { return heads_per_group == 0; }
};
InverseGroups plan_inverse_groups(const PrefillParams& params, std::size_t max_bytes);

// The params of state heads [first, first + count) alone (pointers offset to the first head, head
// counts scaled); first and count multiples of the largest head ratio Hsab / min(Hq, Hk, Hv).
PrefillParams head_group(const PrefillParams& params, int first, int count);

// The (device, stream, "gdn.prefill.inverse") workspace of `groups`, with the chunk table launched
// into it on `stream` (once per call: every head group shares it).
struct InverseRows {
  void* inverse = nullptr;  // rows x heads_per_group x 16 KiB
  std::int64_t* offsets = nullptr;
};
InverseRows prepare_inverse_rows(const PrefillParams& params, const InverseGroups& groups, int device, Stream stream);

// Stage 1 for every head of `group` (head_group's params of one group) into rows.inverse, in
// `form`; the returned pointer goes to group.chunk_inverse (kInverse) or chunk_t_gated (kTGated).
const void* launch_chunk_inverses(const PrefillParams& group, const InverseGroups& groups, const InverseRows& rows,
                                  InputType input, PrecomputedForm form, Stream stream);

// 16 KiB per chunk and head: cap the workspace of one head group (unmeasured; the 8192 x 32 16/64
// shape needs 12.9 GB for all heads, as much as its inputs and outputs together, so it runs in
// four groups of 16 heads).
inline constexpr std::size_t kMaxPrecomputedInverseBytes = std::size_t{4} << 30;

}  // namespace fastinfer::gdn
