#include "gdn/prefill_short_runner.h"

#include <algorithm>
#include <string>

#include "fastinfer/device.h"
#include "gdn/prefill_short_launch.h"
#include "gdn/prefill_validate.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"
#include "runtime/runner_cache.h"

namespace fastinfer::gdn {

ShortPrefillRunner::ShortPrefillRunner(const PrefillRunnerKey& key) : key_(key) {
  const DeviceInfo& info = device_info(key.device);
  if (!(info.cc_major == 9 && info.cc_minor == 0))
    check::fail(kPrefillOp, "device", "be a Hopper GPU (sm_90a)",
                info.name + " (sm_" + std::to_string(info.cc_major) + std::to_string(info.cc_minor) + ")",
                Error::Kind::kRuntime);
  if (static_cast<std::size_t>(info.smem_per_block_optin) < prefill_short_smem_bytes(kShortPrefillMaxTokens))
    check::fail(kPrefillOp, "device", "offer " + std::to_string(prefill_short_smem_bytes(kShortPrefillMaxTokens)) + " bytes of shared memory per block",
                std::to_string(info.smem_per_block_optin), Error::Kind::kRuntime);
  sm_count_ = info.sm_count;
  DeviceGuard guard(key.device);
  switch (key.input) {
    case InputType::kBFloat16:
      occupancy_ = prepare_prefill_short<InputType::kBFloat16>();
      launch_ = &launch_prefill_short<InputType::kBFloat16>;
      break;
    case InputType::kFloat16:
      occupancy_ = prepare_prefill_short<InputType::kFloat16>();
      launch_ = &launch_prefill_short<InputType::kFloat16>;
      break;
  }
}

bool ShortPrefillRunner::can_implement(const PrefillParams& p) {
  return p.initial_state.data == nullptr && p.output_state.data == nullptr && p.checkpoint_every == 0 &&
         p.segment_offsets == nullptr && p.chunk_inverse == nullptr && p.chunk_t_gated == nullptr &&
         p.num_k_heads > 0 && p.num_state_heads % p.num_k_heads == 0 && p.num_k_heads <= 65535;
}

void ShortPrefillRunner::run(const PrefillParams& params, std::int64_t max_tokens, Stream stream, std::int64_t ctas) const {
  if (params.num_seqs == 0 || params.total_tokens == 0) return;
  DeviceGuard guard(key_.device);
  const int cap = max_tokens > 0 && max_tokens <= 32 ? 32 : 64;
  if (ctas < 0) {
    const int heads = prefill_short_heads_at_once(cap, params.num_state_heads / params.num_k_heads);
    ctas = static_cast<std::int64_t>(std::max(occupancy_.ctas_per_sm[cap / 64][heads], 1)) * sm_count_;
  }
  launch_(params, cap, ctas, stream);
}

std::shared_ptr<const ShortPrefillRunner> short_prefill_runner(const PrefillRunnerKey& key) {
  static RunnerCache<PrefillRunnerKey, ShortPrefillRunner, PrefillRunnerKeyHash> cache;
  return cache.get_or_create(key, [&] { return std::make_shared<const ShortPrefillRunner>(key); });
}

bool run_prefill_short_if_taken(const PrefillArgs& args, const PrefillShape& shape, const ExecContext& ctx) {
  if (!(args.max_seqlen > 0 && args.max_seqlen <= kShortPrefillMaxTokens) || args.initial_state || args.output_state ||
      args.checkpoint_every_n_tokens > 0 || shape.hk > 65535)
    return false;
  const PrefillRunnerKey key{ctx.device.index, args.q.dtype == DType::kBFloat16 ? InputType::kBFloat16 : InputType::kFloat16};
  short_prefill_runner(key)->run(make_prefill_params(args, shape), args.max_seqlen, ctx.stream);
  return true;
}

void prefill_short(const PrefillArgs& args, Stream stream, std::int64_t ctas) {
  const PrefillShape shape = validate_prefill(args);
  const auto opt = [](const std::optional<TensorView>& t) { return t ? &*t : nullptr; };
  const ExecContext ctx = resolve_context(
      kPrefillOp,
      {{"q", &args.q}, {"k", &args.k}, {"v", &args.v}, {"cu_seqlens", &args.cu_seqlens}, {"alpha", opt(args.alpha)},
       {"beta", opt(args.beta)}, {"output", &args.output}},
      stream);
  if (!ctx.device.is_cuda()) check::fail(kPrefillOp, "q", "be a CUDA tensor (prefill_short)", "a CPU tensor");
  const PrefillParams params = make_prefill_params(args, shape);
  if (!ShortPrefillRunner::can_implement(params))
    check::fail(kPrefillOp, "arguments", "have no states or checkpoints (prefill_short)", "some");
  const PrefillRunnerKey key{ctx.device.index, args.q.dtype == DType::kBFloat16 ? InputType::kBFloat16 : InputType::kFloat16};
  short_prefill_runner(key)->run(params, args.max_seqlen, ctx.stream, ctas);
}

}  // namespace fastinfer::gdn
