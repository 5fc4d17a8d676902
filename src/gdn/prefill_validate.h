#pragma once
// Validation of gdn::prefill arguments: every constraint that can be checked without reading
// device memory, before anything is written. Errors name the op and the argument.
#include <cstdint>

#include "fastinfer/gdn_prefill.h"

namespace fastinfer::gdn {

inline constexpr const char* kPrefillOp = "gdn::prefill";

// Shape facts the dispatch needs after validation.
struct PrefillShape {
  std::int64_t total_tokens = 0;
  std::int64_t num_seqs = 0;
  std::int64_t hq = 0, hk = 0, hv = 0, hsab = 0;
};

PrefillShape validate_prefill(const PrefillArgs& args);

// use_cp = On: the arguments the CP pipeline supports (CUDA tensors, at most
// detail::kCpMaxSequences sequences); called after the device is resolved, before any write.
void validate_prefill_cp(const PrefillArgs& args, const PrefillShape& shape, const Device& device);

// The data-dependent checks possible when cu_seqlens, state_indices and checkpoint_cu_starts
// are host memory (the CPU path): offsets monotonic and in range, slots in range, checkpoint
// rows in range.
void validate_prefill_host_values(const PrefillArgs& args, const PrefillShape& shape);

}  // namespace fastinfer::gdn
