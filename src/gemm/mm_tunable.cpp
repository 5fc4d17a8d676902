#include "gemm/mm_tunable.h"

#include <cuda_runtime.h>

#include <random>
#include <vector>

#include "gemm/weights_impl.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"

namespace fastinfer::gemm::detail {

namespace {

// Owns random operands (bf16 a in [-1, 1), random codes, scales around 1) and binds them.
class OwnedMm : public tune::TunableRunner {
 public:
  explicit OwnedMm(const tune::TuneRequest& r) {
    check::require(r.max_m >= 1 && r.n >= 1 && r.k >= 16 && r.k % 16 == 0, "tune mm_bf16_fp4", "request",
                   "have M >= 1, N >= 1, K >= 16 and K % 16 == 0",
                   "M=" + std::to_string(r.max_m) + " N=" + std::to_string(r.n) + " K=" + std::to_string(r.k));
    DeviceGuard guard(r.device);
    std::mt19937_64 rng(1234);
    std::vector<std::uint8_t> packed(static_cast<std::size_t>(r.n * r.k / 2)), scales(static_cast<std::size_t>(r.n * r.k / 16));
    for (auto& b : packed) b = static_cast<std::uint8_t>(rng());
    for (auto& s : scales) s = static_cast<std::uint8_t>(0x30 + rng() % 16);
    DeviceBytes dp(r.device, packed.size()), ds(r.device, scales.size());
    FASTINFER_CUDA_CHECK(cudaMemcpy(dp.get(), packed.data(), packed.size(), cudaMemcpyHostToDevice));
    FASTINFER_CUDA_CHECK(cudaMemcpy(ds.get(), scales.data(), scales.size(), cudaMemcpyHostToDevice));
    weights_ = prepare_bf16_fp4_weights(
        TensorView::contiguous(dp.get(), DType::kUInt8, {r.n, r.k / 2}, Device::cuda(r.device)),
        TensorView::contiguous(ds.get(), DType::kUInt8, {r.n * r.k / 16}, Device::cuda(r.device)),
        nvfp4::ScaleLayout::kLinear, 1.0f);
    std::vector<std::uint16_t> a(static_cast<std::size_t>(r.max_m * r.k));
    std::uniform_int_distribution<int> u(0, 255);
    for (auto& v : a) v = static_cast<std::uint16_t>(0x3f00 | u(rng)) ^ (rng() & 1 ? 0x8000 : 0);  // +-[0.5, 1)
    a_ = DeviceBytes(r.device, a.size() * 2);
    out_ = DeviceBytes(r.device, static_cast<std::size_t>(r.max_m * r.n * 2));
    FASTINFER_CUDA_CHECK(cudaMemcpy(a_.get(), a.data(), a.size() * 2, cudaMemcpyHostToDevice));
    runner_ = mm_runner_for(r.device, DType::kBFloat16, r.n, r.k);
    call_.a = a_.get();
    call_.lda = static_cast<int>(r.k);
    call_.weights = &weights_->impl();
    call_.out = out_.get();
    call_.ldo = static_cast<int>(r.n);
    call_.m = static_cast<int>(r.max_m);
  }
  const tune::RunnerKey& key() const override { return runner_->tune_key(); }
  std::vector<int> tactics(const tune::Problem& p) const override { return runner_->tactics(p.m); }
  void run(const tune::Problem& p, int tactic, Stream stream) const override {
    MmCall c = call_;
    c.m = static_cast<int>(p.m);
    runner_->run(c, tactic, stream);
  }
  std::string tactic_name(int tactic) const override { return tactic < 0 ? std::string("default") : runner_->tactic(tactic).name; }

 private:
  std::shared_ptr<const Bf16Fp4Weights> weights_;
  DeviceBytes a_, out_;
  std::shared_ptr<const MmRunner> runner_;
  MmCall call_;
};

}  // namespace

std::unique_ptr<tune::TunableRunner> make_tunable_mm(const tune::TuneRequest& request) {
  return std::make_unique<OwnedMm>(request);
}

}  // namespace fastinfer::gemm::detail
