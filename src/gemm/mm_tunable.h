#pragma once
// mm_bf16_fp4 as a tune::TunableRunner: the runner bound to one call's operands (tune mode on live
// inputs), or to inputs it owns (the `fastinfer tune --op mm_bf16_fp4` factory).
#include <memory>

#include "fastinfer/tune.h"
#include "gemm/mm_runner.h"

namespace fastinfer::gemm::detail {

// The cached runner of (device, out dtype, N, K) under the calling thread's effective mapper.
std::shared_ptr<const MmRunner> mm_runner_for(int device, DType out, std::int64_t n, std::int64_t k);

class BoundMm : public tune::TunableRunner {
 public:
  BoundMm(std::shared_ptr<const MmRunner> runner, const MmCall& call) : runner_(std::move(runner)), call_(call) {}
  const tune::RunnerKey& key() const override { return runner_->tune_key(); }
  std::vector<int> tactics(const tune::Problem& problem) const override { return runner_->tactics(problem.m); }
  void run(const tune::Problem& problem, int tactic, Stream stream) const override {
    MmCall c = call_;
    c.m = static_cast<int>(problem.m);
    runner_->run(c, tactic, stream);
  }
  std::string tactic_name(int tactic) const override {
    return tactic < 0 ? std::string("default") : runner_->tactic(tactic).name;
  }

 private:
  std::shared_ptr<const MmRunner> runner_;
  MmCall call_;
};

}  // namespace fastinfer::gemm::detail

namespace fastinfer::gemm::detail {
// Factory of `fastinfer tune --op mm_bf16_fp4`: random operands for M = request.max_m on the device.
std::unique_ptr<tune::TunableRunner> make_tunable_mm(const tune::TuneRequest& request);
}  // namespace fastinfer::gemm::detail
