#include "gdn/prefill_runner.h"

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
  const bool t_gated_rows = p.chunk_t_gated == nullptr || p.segment_offsets == nullptr;
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
  PrefillParams p = params;
  // nullptr from precompute_chunk_inverses: the kernel solves T.
  const bool own_rows = p.chunk_inverse == nullptr && p.chunk_t_gated == nullptr && p.segment_offsets == nullptr;
  InverseSource inverse = options.inverse;
  if (inverse == InverseSource::kAuto)
    inverse = tiny_prefill_call(p, sm_count_) ? InverseSource::kSolveInKernel : InverseSource::kPrecomputeGated;
  const std::size_t max_bytes = options.precompute_max_bytes > 0 ? options.precompute_max_bytes : kMaxPrecomputedInverseBytes;
  if (own_rows && inverse == InverseSource::kPrecompute)
    p.chunk_inverse = static_cast<const float*>(
        precompute_chunk_inverses(p, key_.input, key_.device, stream, PrecomputedForm::kInverse, max_bytes));
  if (own_rows && inverse == InverseSource::kPrecomputeGated)
    p.chunk_t_gated =
        precompute_chunk_inverses(p, key_.input, key_.device, stream, PrecomputedForm::kTGated, max_bytes);
  if (options.precompute_only) return;
  launch_(p, options.ctas > 0 ? options.ctas : sm_count_, stream, options.profile);
}

std::shared_ptr<const PrefillRunner> prefill_runner(const PrefillRunnerKey& key) {
  static RunnerCache<PrefillRunnerKey, PrefillRunner, PrefillRunnerKeyHash> cache;
  return cache.get_or_create(key, [&] { return std::make_shared<const PrefillRunner>(key); });
}

}  // namespace fastinfer::gdn
