// gdn::decode: validate -> resolve the context once -> CPU reference, or the cached runner of the
// chosen tactic -> launch. No allocation, property query, synchronisation or string building on
// the CUDA path (device facts come from the per-device cache; the op needs no workspace).
#include "fastinfer/gdn_decode.h"

#include <cmath>

#include "fastinfer/device.h"
#include "fastinfer/tune.h"
#include "gdn/decode_params.h"
#include "gdn/decode_runner.h"
#include "gdn/decode_tunable.h"
#include "gdn/decode_validate.h"
#include "ref/gdn_decode_ref.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"

namespace fastinfer::gdn {
namespace {

GateType gate_type(DType t) {
  switch (t) {
    case DType::kFloat16: return GateType::kFloat16;
    case DType::kBFloat16: return GateType::kBFloat16;
    default: return GateType::kFloat32;
  }
}

TokenTensor token_tensor(const TensorView& t) { return {t.data, t.stride(0), t.stride(1), t.stride(2)}; }

}  // namespace

DecodeParams make_decode_params(const DecodeArgs& args) {
  const TensorView& out_idx = args.output_state_indices ? *args.output_state_indices : args.initial_state_indices;
  DecodeParams p{};
  p.q = token_tensor(args.q);
  p.k = token_tensor(args.k);
  p.v = token_tensor(args.v);
  p.output = token_tensor(args.output);
  p.A_log = {args.A_log.data, args.A_log.stride(0), gate_type(args.A_log.dtype)};
  p.dt_bias = {args.dt_bias.data, args.dt_bias.stride(0), gate_type(args.dt_bias.dtype)};
  p.a = {args.a.data, args.a.stride(0), args.a.stride(1), args.a.stride(2), gate_type(args.a.dtype)};
  p.b = {args.b.data, args.b.stride(0), args.b.stride(1), args.b.stride(2), gate_type(args.b.dtype)};
  p.state = args.state.data;
  p.initial_indices = static_cast<const std::int32_t*>(args.initial_state_indices.data);
  p.initial_indices_stride = args.initial_state_indices.stride(0);
  p.output_indices = static_cast<const std::int32_t*>(out_idx.data);
  p.output_indices_stride = out_idx.stride(0);
  p.intermediate = args.intermediate_states ? args.intermediate_states->data : nullptr;
  p.intermediate_is_bf16 = args.intermediate_states && args.intermediate_states->dtype == DType::kBFloat16;
  p.batch = static_cast<int>(args.q.size(0));
  p.tokens = static_cast<int>(args.q.size(1));
  p.heads_qk = static_cast<int>(args.q.size(2));
  p.heads_v = static_cast<int>(args.v.size(2));
  p.pool_size = static_cast<int>(args.state.size(0));
  p.scale = args.scale != 0.0f ? args.scale : 1.0f / std::sqrt(static_cast<float>(kDecodeHeadDim));
  p.use_qk_l2norm = args.use_qk_l2norm;
  p.update_state = !args.disable_state_update;
  p.sm_count = args.q.device.is_cpu() ? 1 : device_info(args.q.device.index).sm_count;
  p.lazy_decay = true;
  p.programmatic_launch = true;
  return p;
}

void decode(const DecodeArgs& args, Stream stream) {
  validate_decode_args(args);
  const ExecContext ctx = resolve_context(
      kDecodeOp,
      {{"q", &args.q}, {"k", &args.k}, {"v", &args.v}, {"A_log", &args.A_log}, {"a", &args.a},
       {"dt_bias", &args.dt_bias}, {"b", &args.b}, {"state", &args.state},
       {"initial_state_indices", &args.initial_state_indices},
       {"output_state_indices", args.output_state_indices ? &*args.output_state_indices : nullptr},
       {"output", &args.output},
       {"intermediate_states", args.intermediate_states ? &*args.intermediate_states : nullptr}},
      stream);

  if (ctx.device.is_cpu()) {
    validate_decode_slots_on_host(args);
    ref::gdn_decode(args);
    return;
  }
  const DeviceInfo& info = device_info(ctx.device.index);
  if (!info.is_hopper()) {
    check::fail(kDecodeOp, "tensors", "be on a Hopper (sm_90) device",
                info.name + " (sm_" + std::to_string(info.cc_major * 10 + info.cc_minor) + ")");
  }
  if (args.q.size(0) == 0 || args.q.size(1) == 0) return;

  const DecodeParams params = make_decode_params(args);
  // The tactic: tuned for this batch bucket (memory, then cache files), else the heuristic (-1).
  const std::shared_ptr<const detail::DecodeOpRunner> runner = detail::decode_op_runner(
      ctx.device.index, args.q.dtype, args.state.dtype, params.tokens, params.heads_qk, params.heads_v);
  tune::Choice choice = tune::Tuner::global().choose(runner->tune_key(), params.batch);
  DeviceGuard guard(ctx.device.index);
  if (choice.source == tune::Source::kDefault && tune::tuning_enabled(runner->tune_key().op())) {
    detail::BoundDecode bound(runner, params, ctx.device.index, ctx.stream);  // never writes the live pool
    choice = tune::Tuner::global().tune_one(bound, params.batch, ctx.stream);
  }
  runner->run(params, choice.tactic, ctx.stream);
}

namespace {
// `fastinfer tune --op gdn_decode[_bf16state]`: M = batch, N = state heads, K = tokens.
const tune::TunableOpRegistration kTunableF32{
    {"gdn_decode", "GDN decode / MTP, fp32 state pool (M: batch, N: state heads, K: tokens)",
     [](const tune::TuneRequest& r) { return detail::make_tunable_decode(r, DType::kFloat32); }}};
const tune::TunableOpRegistration kTunableBf16{
    {"gdn_decode_bf16state", "GDN decode / MTP, bf16 state pool (M: batch, N: state heads, K: tokens)",
     [](const tune::TuneRequest& r) { return detail::make_tunable_decode(r, DType::kBFloat16); }}};
}  // namespace

}  // namespace fastinfer::gdn
