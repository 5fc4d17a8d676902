// gdn::prefill: validate -> resolve {device, stream} once -> CPU reference, the context-parallel
// pipeline (long sequences, few heads) or the cached runner.
#include <algorithm>
#include <cmath>

#include "fastinfer/device.h"
#include "fastinfer/gdn_prefill.h"
#include "gdn/cp.h"
#include "gdn/cp_plan.h"
#include "gdn/prefill_params.h"
#include "gdn/prefill_runner.h"
#include "gdn/prefill_short_runner.h"
#include "gdn/prefill_validate.h"
#include "ref/gdn_ref.h"
#include "runtime/check.h"

namespace fastinfer::gdn {
namespace {

StateType state_type(DType t) {
  return t == DType::kFloat32 ? StateType::kFloat32 : t == DType::kBFloat16 ? StateType::kBFloat16 : StateType::kFloat16;
}

StateTensorParams state_params(const std::optional<TensorView>& t) {
  StateTensorParams s;
  if (!t) return s;
  s.data = t->data;
  s.type = state_type(t->dtype);
  s.slot_stride = t->stride(0);
  s.num_slots = t->size(0);
  return s;
}

}  // namespace

PrefillParams make_prefill_params(const PrefillArgs& a, const PrefillShape& s) {
  PrefillParams p;
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.q_stride_token = a.q.stride(0);
  p.q_stride_head = a.q.stride(1);
  p.k_stride_token = a.k.stride(0);
  p.k_stride_head = a.k.stride(1);
  p.v_stride_token = a.v.stride(0);
  p.v_stride_head = a.v.stride(1);
  if (a.alpha) p.alpha = a.alpha->data_as<const float>(), p.alpha_stride_token = a.alpha->stride(0);
  if (a.beta) p.beta = a.beta->data_as<const float>(), p.beta_stride_token = a.beta->stride(0);
  p.output = a.output.data;
  p.out_stride_token = a.output.stride(0);
  p.out_stride_head = a.output.stride(1);
  p.cu_seqlens = a.cu_seqlens.data;
  p.offsets_are_int64 = a.cu_seqlens.dtype == DType::kInt64;
  p.num_seqs = static_cast<int>(s.num_seqs);
  p.total_tokens = s.total_tokens;
  p.num_q_heads = static_cast<int>(s.hq);
  p.num_k_heads = static_cast<int>(s.hk);
  p.num_v_heads = static_cast<int>(s.hv);
  p.num_state_heads = static_cast<int>(s.hsab);
  p.scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  p.use_qk_l2norm = a.use_qk_l2norm;
  p.initial_state = state_params(a.initial_state);
  p.output_state = state_params(a.output_state);
  p.state_indices = a.state_indices ? a.state_indices->data_as<const std::int32_t>() : nullptr;
  if (a.checkpoint_every_n_tokens > 0) {
    p.checkpoints = state_params(a.state_checkpoints);
    p.checkpoint_starts = a.checkpoint_cu_starts->data;
    p.checkpoint_every = a.checkpoint_every_n_tokens;
  }
  return p;
}

namespace {

// use_cp = Auto: the measured rule of detail::should_use_cp on the real longest sequence when the
// caller gives it, else on the total token count.
bool runs_context_parallel(const PrefillArgs& a, const PrefillShape& s, const ExecContext& ctx) {
  if (a.use_cp == UseCp::kOn) return true;
  if (a.use_cp == UseCp::kOff || !detail::kCpAutoEnabled || s.num_seqs > detail::kCpMaxSequences) return false;
  const std::int64_t max_len = a.max_seqlen > 0 ? std::min(a.max_seqlen, s.total_tokens) : s.total_tokens;
  return detail::should_use_cp(s.num_seqs, s.hsab, max_len, device_info(ctx.device.index).sm_count);
}

}  // namespace

namespace {

ExecContext resolve_prefill_context(const PrefillArgs& args, Stream stream) {
  const auto opt = [](const std::optional<TensorView>& t) { return t ? &*t : nullptr; };
  return resolve_context(
      kPrefillOp,
      {{"q", &args.q}, {"k", &args.k}, {"v", &args.v}, {"cu_seqlens", &args.cu_seqlens}, {"alpha", opt(args.alpha)},
       {"beta", opt(args.beta)}, {"output", &args.output}, {"initial_state", opt(args.initial_state)},
       {"output_state", opt(args.output_state)}, {"state_indices", opt(args.state_indices)},
       {"state_checkpoints", opt(args.state_checkpoints)}, {"checkpoint_cu_starts", opt(args.checkpoint_cu_starts)}},
      stream);
}

// The non-CP path: the cached runner of the device and input dtype.
void run_prefill_kernel(const PrefillArgs& args, const PrefillShape& shape, const ExecContext& ctx,
                        const PrefillRunOptions& options) {
  const PrefillRunnerKey key{ctx.device.index,
                             args.q.dtype == DType::kBFloat16 ? InputType::kBFloat16 : InputType::kFloat16};
  prefill_runner(key)->run(make_prefill_params(args, shape), ctx.stream, options);
}

}  // namespace

void prefill(const PrefillArgs& args, Stream stream) {
  const PrefillShape shape = validate_prefill(args);
  const ExecContext ctx = resolve_prefill_context(args, stream);
  if (args.use_cp == UseCp::kOn) validate_prefill_cp(args, shape, ctx.device);
  if (ctx.device.is_cpu()) {
    validate_prefill_host_values(args, shape);
    ref::gdn_prefill_serial_fp64(args);
    return;
  }
  if (runs_context_parallel(args, shape, ctx)) {
    detail::prefill_cp(args, shape, ctx, {.max_seqlen = args.max_seqlen});
    return;
  }
  if (run_prefill_short_if_taken(args, shape, ctx)) return;  // many short sequences: docs/GDN_PREFILL_SHORT.md
  run_prefill_kernel(args, shape, ctx, {});
}

void prefill_with_options(const PrefillArgs& args, Stream stream, const PrefillRunOptions& options) {
  const PrefillShape shape = validate_prefill(args);
  const ExecContext ctx = resolve_prefill_context(args, stream);
  if (!ctx.device.is_cuda()) check::fail(kPrefillOp, "q", "be a CUDA tensor (prefill_with_options)", "a CPU tensor");
  run_prefill_kernel(args, shape, ctx, options);
}

}  // namespace fastinfer::gdn
