// Test and benchmark entry of the warp-specialised prefill kernel until it replaces the chunked
// kernel behind PrefillRunner: the same validation and params as gdn::prefill, then the launch.
#include "gdn/prefill_fast_launch.h"

#include <cmath>
#include <mutex>

#include "fastinfer/device.h"
#include "gdn/prefill_validate.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"

namespace fastinfer::gdn {
namespace {

StateTensorParams state_params(const std::optional<TensorView>& t) {
  StateTensorParams s;
  if (!t) return s;
  s.data = t->data;
  s.type = t->dtype == DType::kFloat32 ? StateType::kFloat32 : t->dtype == DType::kBFloat16 ? StateType::kBFloat16 : StateType::kFloat16;
  s.slot_stride = t->stride(0);
  s.num_slots = t->size(0);
  return s;
}

}  // namespace

PrefillParams prefill_fast_params(const PrefillArgs& a) {
  const PrefillShape s = validate_prefill(a);
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

void run_prefill_fast(const PrefillArgs& args, Stream stream, int ctas, unsigned long long* profile) {
  const PrefillParams params = prefill_fast_params(args);
  const int device = args.q.device.index;
  if (!args.q.device.is_cuda()) check::fail(kPrefillOp, "q", "be a CUDA tensor (fast kernel)", "a CPU tensor");
  DeviceGuard guard(device);
  if (ctas <= 0) ctas = device_info(device).sm_count;
  // Test/benchmark entry: opt in once per process (single-device use).
  static std::once_flag prepared;
  std::call_once(prepared, [] {
    prepare_prefill_fast<InputType::kBFloat16>();
    prepare_prefill_fast<InputType::kFloat16>();
  });
  if (args.q.dtype == DType::kBFloat16) {
    launch_prefill_fast<InputType::kBFloat16>(params, ctas, stream, profile);
  } else {
    launch_prefill_fast<InputType::kFloat16>(params, ctas, stream, profile);
  }
}

}  // namespace fastinfer::gdn
