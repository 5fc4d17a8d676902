#pragma once
// CPU references of the GDN prefill (issue 5). Both take validated arguments (gdn::prefill
// validates first) on the host and honour every stride.
//
// - gdn_prefill_serial_fp64: the token-serial recurrence accumulated in fp64 -- the oracle, and
//   the CPU path of gdn::prefill.
// - gdn_prefill_chunked_fp32: the chunked form (C = 64) in fp32 with the same operand roundings
//   as the GPU kernel (matrix-product operands rounded to the input dtype), so kernel and
//   algorithm can be compared tightly and the algorithm can be checked against the oracle on
//   machines without a GPU. docs/GDN_PREFILL.md writes the math out.
#include <cstdint>
#include <vector>

#include "fastinfer/gdn_prefill.h"

namespace fastinfer::ref {

void gdn_prefill_serial_fp64(const gdn::PrefillArgs& args);
void gdn_prefill_chunked_fp32(const gdn::PrefillArgs& args);

// Per-token log of the forget gate as the chunked form uses it: log(alpha) clamped below at
// kMinLogAlpha so that cumulative sums stay finite (alpha < 1e-35 acts as 0).
inline constexpr float kMinLogAlpha = -80.0f;

// cu_seqlens (int32 or int64) read into host integers.
std::vector<std::int64_t> read_offsets(const TensorView& offsets);

}  // namespace fastinfer::ref
