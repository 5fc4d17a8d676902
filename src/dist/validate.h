#pragma once
// Validation of gdn::prefill_distributed beyond gdn::prefill's own: the communicator, where the
// states may live, what cannot cross ranks. Host-only (unit-tested without a GPU or NCCL).
#include "fastinfer/gdn_distributed.h"

namespace fastinfer::gdn::detail {

inline constexpr const char* kDistributedOp = "gdn::prefill_distributed";

// `ctx` is the resolved context of `local` (CUDA required when the world has several ranks).
void validate_distributed(const PrefillArgs& local, const dist::Communicator& comm,
                          const DistributedPrefillOptions& options, const ExecContext& ctx);

}  // namespace fastinfer::gdn::detail
