// Public entry of gemm::mm_bf16_fp4: validate -> resolve the context -> CPU reference, or cached
// runner + tactic choice (autotuner cache, else the runner's heuristic) -> launch.
#include <cuda_runtime.h>

#include <string>

#include "fastinfer/gemm.h"
#include "fastinfer/tune.h"
#include "gemm/mm_runner.h"
#include "gemm/mm_tunable.h"
#include "gemm/weights_impl.h"
#include "ref/gemm_ref.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"
#include "runtime/runner_cache.h"

namespace fastinfer::gemm {

namespace {

struct RunnerKey {
  int device;
  DType out;
  std::int64_t n, k;
  std::uint64_t mapper;
  bool operator==(const RunnerKey&) const = default;
};
struct RunnerKeyHash {
  std::size_t operator()(const RunnerKey& k) const noexcept {
    std::size_t h = std::hash<std::int64_t>()(k.n) * 31 + std::hash<std::int64_t>()(k.k);
    h = h * 31 + static_cast<std::size_t>(k.device) * 7 + static_cast<std::size_t>(k.out);
    return h ^ (k.mapper + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
};

RunnerCache<RunnerKey, detail::MmRunner, RunnerKeyHash>& runners() {
  static RunnerCache<RunnerKey, detail::MmRunner, RunnerKeyHash> cache;
  return cache;
}

}  // namespace

std::shared_ptr<const detail::MmRunner> detail::mm_runner_for(int device, DType out, std::int64_t n, std::int64_t k) {
  const tune::BucketMapper& mapper = tune::current_mapper();
  return runners().get_or_create(RunnerKey{device, out, n, k, mapper.id()},
                                 [&] { return std::make_shared<const MmRunner>(device, out, n, k, mapper); });
}

void mm_bf16_fp4(const TensorView& a, const Bf16Fp4Weights& weights, const TensorView& out, Stream stream,
                 bool enable_pdl) {
  constexpr const char* op = "gemm::mm_bf16_fp4";
  const Bf16Fp4Weights::Impl& w = weights.impl();
  check::dtype(op, "a", a, {DType::kBFloat16});
  check::ndim(op, "a", a, 2);
  check::dim(op, "a", a, 1, w.k, "K, from the weights");
  check::last_dim_contiguous(op, "a", a);
  check::dtype(op, "out", out, {DType::kBFloat16, DType::kFloat16});
  check::ndim(op, "out", out, 2);
  check::dim(op, "out", out, 0, a.size(0), "M, from a");
  check::dim(op, "out", out, 1, w.n, "N, from the weights");
  check::last_dim_contiguous(op, "out", out);
  check::not_null(op, "a", a);
  check::not_null(op, "out", out);
  const ExecContext ctx = resolve_context(op, {{"a", &a}, {"out", &out}}, stream);
  if (ctx.device != w.device)
    check::fail(op, "weights", "be on the device of a (" + to_string(ctx.device) + ")", to_string(w.device));
  const std::int64_t m = a.size(0);
  if (m == 0) return;
  if (ctx.device.is_cpu()) {
    auto packed = TensorView::contiguous(const_cast<std::uint8_t*>(w.host_packed.data()), DType::kUInt8, {w.n, w.k / 2});
    auto scales = TensorView::contiguous(const_cast<std::uint8_t*>(w.host_scales.data()), DType::kUInt8, {w.n, w.k / 16});
    ref::mm_bf16_fp4(a, packed, scales, w.alpha, out);
    return;
  }
  check::aligned(op, "a", a, 16);
  check::aligned(op, "out", out, 16);
  if (m > 1 && a.stride(0) % 8 != 0) check::fail(op, "a", "have a row stride that is a multiple of 8", std::to_string(a.stride(0)));
  if (m > 1 && out.stride(0) % 8 != 0)
    check::fail(op, "out", "have a row stride that is a multiple of 8", std::to_string(out.stride(0)));
  if (m > (1 << 30)) check::fail(op, "a.shape[0] (M)", "be below 2^30", std::to_string(m));

  DeviceGuard guard(ctx.device.index);
  auto runner = detail::mm_runner_for(ctx.device.index, out.dtype, w.n, w.k);
  detail::MmCall call;
  call.a = a.data;
  call.lda = static_cast<int>(m > 1 ? a.stride(0) : w.k);
  call.weights = &w;
  call.out = out.data;
  call.ldo = static_cast<int>(m > 1 ? out.stride(0) : w.n);
  call.m = static_cast<int>(m);
  call.enable_pdl = enable_pdl;
  tune::Choice choice = tune::Tuner::global().choose(runner->tune_key(), m);
  if (choice.source == tune::Source::kDefault && tune::tuning_enabled(runner->tune_key().op())) {
    detail::BoundMm bound(runner, call);
    choice = tune::Tuner::global().tune_one(bound, m, ctx.stream);
  }
  runner->run(call, choice.tactic, ctx.stream);
}

}  // namespace fastinfer::gemm

namespace fastinfer::gemm {
namespace {
const tune::TunableOpRegistration kTunable{
    {"mm_bf16_fp4", "bf16 x NVFP4 GEMM out[M,N] = alpha * a[M,K] @ W[N,K]^T",
     [](const tune::TuneRequest& r) { return detail::make_tunable_mm(r); }}};
}  // namespace
}  // namespace fastinfer::gemm
