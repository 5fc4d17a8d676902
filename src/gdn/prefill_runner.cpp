#include "gdn/prefill_runner.h"

#include <algorithm>

#include "fastinfer/device.h"
#include "gdn/prefill_fast_launch.h"
#include "gdn/prefill_inverse.h"
#include "gdn/prefill_validate.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"
#include "runtime/runner_cache.h"

namespace fastinfer::gdn {

PrefillRunner::PrefillRunner(const PrefillRunnerKey& key) : key_(key) {
  const DeviceInfo& info = device_info(key.device);
  if (!(info.cc_major == 9 && info.cc_minor == 0))
    check::fail(kPrefillOp, "device", "be a Hopper GPU (sm_90a)",
                info.name + " (sm_" + std::to_string(info.cc_major) + std::to_string(info.cc_minor) + ")",
                Error::Kind::kRuntime);
  if (static_cast<std::size_t>(info.smem_per_block_optin) < prefill_fast_smem_bytes())
    check::fail(kPrefillOp, "device", "offer " + std::to_string(prefill_fast_smem_bytes()) + " bytes of shared memory per block",
                std::to_string(info.smem_per_block_optin), Error::Kind::kRuntime);
  sm_count_ = info.sm_count;
  DeviceGuard guard(key.device);
  switch (key.input) {
    case InputType::kBFloat16:
      prepare_prefill_fast<InputType::kBFloat16>();
      launch_ = &launch_prefill_fast<InputType::kBFloat16>;
      break;
    case InputType::kFloat16:
      prepare_prefill_fast<InputType::kFloat16>();
      launch_ = &launch_prefill_fast<InputType::kFloat16>;
      break;
  }
}

bool PrefillRunner::can_implement(const PrefillParams& p) {
  const bool segments_complete = p.segment_offsets == nullptr
                                     ? p.segment_sequence == nullptr && p.segment_states == nullptr
                                     : p.segment_sequence != nullptr && p.segment_states != nullptr && p.num_segments >= 0;
  const bool inverse_rows = p.chunk_inverse == nullptr || p.segment_offsets == nullptr || p.chunk_inverse_segment_blocks > 0;
  const bool t_gated_rows = p.chunk_t_gated == nullptr || p.segment_offsets == nullptr || p.chunk_inverse_segment_blocks > 0;
  return segments_complete && inverse_rows && t_gated_rows && p.num_state_heads > 0 && p.num_seqs >= 0;
}

bool tiny_prefill_call(const PrefillParams& p, int sm_count) {
  const std::int64_t items = static_cast<std::int64_t>(p.num_seqs) * p.num_state_heads;
  const std::int64_t ctas = items < sm_count ? items : sm_count;
  const std::int64_t chunks = (p.total_tokens / 64 + p.num_seqs) * p.num_state_heads;  // an upper bound
  return chunks <= kTinyCallChunksPerCta * ctas;
}

void PrefillRunner::run(const PrefillParams& params, Stream stream, const PrefillRunOptions& options) const {
  const int rows = params.segment_offsets != nullptr ? params.num_segments : params.num_seqs;
  if (rows == 0 || params.total_tokens == 0) return;
  DeviceGuard guard(key_.device);
  const int ctas = options.ctas > 0 ? options.ctas : sm_count_;
  InverseSource inverse = options.inverse;
  if (inverse == InverseSource::kAuto)
    inverse = tiny_prefill_call(params, sm_count_) ? InverseSource::kSolveInKernel : InverseSource::kPrecomputeGated;
  const bool own_rows =
      params.chunk_inverse == nullptr && params.chunk_t_gated == nullptr && params.segment_offsets == nullptr;
  const bool precompute =
      own_rows && (inverse == InverseSource::kPrecompute || inverse == InverseSource::kPrecomputeGated);
  const std::size_t max_bytes = options.precompute_max_bytes > 0 ? options.precompute_max_bytes : kMaxPrecomputedInverseBytes;
  const InverseGroups groups = precompute ? plan_inverse_groups(params, max_bytes) : InverseGroups{};
  if (groups.solves()) {  // the params' own inverse source, or the kernel solves T
    if (!options.precompute_only) launch_(params, ctas, stream, options.profile);
    return;
  }
  // Stage 1 then the kernel per head group (one group unless the workspace cap splits the heads);
  // the groups share the chunk table and, in stream order, the workspace.
  const PrecomputedForm form = inverse == InverseSource::kPrecompute ? PrecomputedForm::kInverse : PrecomputedForm::kTGated;
  const InverseRows inverse_rows = prepare_inverse_rows(params, groups, key_.device, stream);
  for (int first = 0; first < params.num_state_heads; first += groups.heads_per_group) {
    PrefillParams group = head_group(params, first, std::min(groups.heads_per_group, params.num_state_heads - first));
    const void* t = launch_chunk_inverses(group, groups, inverse_rows, key_.input, form, stream);
    if (form == PrecomputedForm::kTGated) {
      group.chunk_t_gated = t;
    } else {
      group.chunk_inverse = static_cast<const float*>(t);
    }
    if (!options.precompute_only) launch_(group, ctas, stream, options.profile);
  }
}

std::shared_ptr<const PrefillRunner> prefill_runner(const PrefillRunnerKey& key) {
  static RunnerCache<PrefillRunnerKey, PrefillRunner, PrefillRunnerKeyHash> cache;
  return cache.get_or_create(key, [&] { return std::make_shared<const PrefillRunner>(key); });
}

}  // namespace fastinfer::gdn
