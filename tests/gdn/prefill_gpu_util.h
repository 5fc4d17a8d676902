#pragma once
// GPU test helpers of the GDN prefill suites (plain and context-parallel): device copies of a
// host problem, the tolerances, and one run of gdn::prefill checked against the fp64
// oracle (outputs, final states, checkpoints).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "prefill_test_util.h"
#include "runtime/cuda_check.h"

namespace fastinfer::testing {

using ref::HostTensor;

// A device copy of a host tensor (same shape and strides).
class DeviceTensor {
 public:
  explicit DeviceTensor(const HostTensor& h) : view_(h.view()) {
    FASTINFER_CUDA_CHECK(cudaMalloc(&ptr_, h.nbytes() ? h.nbytes() : 16));
    upload(h);
    view_.data = ptr_;
    view_.device = Device::cuda(0);
  }
  ~DeviceTensor() { cudaFree(ptr_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  const TensorView& view() const { return view_; }
  // Waits for the copy: a pageable cudaMemcpy may still run on the legacy stream when it returns,
  // and ops on non-blocking streams do not wait for that stream.
  void upload(const HostTensor& h) {
    FASTINFER_CUDA_CHECK(cudaMemcpy(ptr_, h.data(), h.nbytes(), cudaMemcpyHostToDevice));
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  }
  void copy_to(HostTensor& h) const { FASTINFER_CUDA_CHECK(cudaMemcpy(h.data(), ptr_, h.nbytes(), cudaMemcpyDeviceToHost)); }

 private:
  void* ptr_ = nullptr;
  TensorView view_;
};

// Captures `call` on `stream` into a CUDA graph, replays the graph once and waits for it.
template <class Call>
void replay_captured(cudaStream_t stream, Call call) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  call();
  FASTINFER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FASTINFER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  FASTINFER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
  FASTINFER_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FASTINFER_CUDA_CHECK(cudaGraphDestroy(graph));
}

// All tensors of a problem on the device; run() writes output/state/checkpoints back into `p`.
struct DeviceProblem {
  explicit DeviceProblem(const PrefillProblem& p)
      : q(p.q), k(p.k), v(p.v), cu(p.cu), alpha(p.alpha), beta(p.beta), output(p.output), initial(p.initial_state),
        final_(p.final_state), indices(p.indices), checkpoints(p.c.checkpoint_every ? p.checkpoints : p.output),
        starts(p.c.checkpoint_every ? p.checkpoint_starts : p.cu) {}

  gdn::PrefillArgs args(const PrefillProblem& p, bool in_place = false) const {
    gdn::PrefillArgs a = p.args();
    a.q = q.view();
    a.k = k.view();
    a.v = v.view();
    a.cu_seqlens = cu.view();
    if (a.alpha) a.alpha = alpha.view();
    if (a.beta) a.beta = beta.view();
    a.output = output.view();
    if (a.initial_state) a.initial_state = initial.view();
    if (a.output_state) a.output_state = in_place ? initial.view() : final_.view();
    if (a.state_indices) a.state_indices = indices.view();
    if (a.state_checkpoints) a.state_checkpoints = checkpoints.view(), a.checkpoint_cu_starts = starts.view();
    return a;
  }
  void copy_back(PrefillProblem& p, bool in_place = false) const {
    output.copy_to(p.output);
    if (p.c.write_state) (in_place ? initial : final_).copy_to(in_place ? p.initial_state : p.final_state);
    if (p.c.checkpoint_every) checkpoints.copy_to(p.checkpoints);
  }

  DeviceTensor q, k, v, cu, alpha, beta, output, initial, final_, indices, checkpoints, starts;
};

struct Tolerance {
  double out_atol, out_rtol, state_atol, state_rtol;
};
// The tolerances (FlashInfer's). A 16-bit stored state adds its own rounding (half an
// ulp of bf16 is 2e-3 relative), so bf16/fp16 state storage is compared at that precision.
inline Tolerance tolerance_for(const PrefillCase& c) {
  Tolerance t = c.dtype == DType::kBFloat16 ? Tolerance{1e-2, 1e-2, 5e-3, 1e-3} : Tolerance{2e-3, 1e-3, 1e-3, 1e-4};
  if (c.state_dtype == DType::kBFloat16) t.state_rtol = std::max(t.state_rtol, 8e-3);
  if (c.state_dtype == DType::kFloat16) t.state_rtol = std::max(t.state_rtol, 1e-3);
  return t;
}

// `run` replaces gdn::prefill (e.g. the CP pipeline with a forced chunk length).
using PrefillCall = std::function<void(const gdn::PrefillArgs&)>;
struct PrefillVariant {
  const char* name;  // printed with the case ("" for gdn::prefill itself)
  PrefillCall run;   // empty: gdn::prefill
};

// Each variant on a fresh device copy of one random problem (NaN-poisoned outputs) against one
// fp64 oracle run; prints one line per variant. Returns the number of failing variants.
inline int run_variants_against_oracle(const PrefillCase& c, std::uint64_t seed, bool in_place,
                                       const std::vector<PrefillVariant>& variants) {
  const PrefillProblem base = make_problem(c, seed);
  PrefillProblem want = base;
  gdn::PrefillArgs a = want.args();
  if (in_place && a.output_state) a.output_state = want.initial_state.view();
  ref::gdn_prefill_serial_fp64(a);
  const Tolerance tol = tolerance_for(c);
  int failed = 0;
  for (const PrefillVariant& variant : variants) {
    PrefillProblem got = base;
    {
      DeviceProblem dev(got);
      if (variant.run) variant.run(dev.args(got, in_place));
      else gdn::prefill(dev.args(got, in_place));
      FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
      dev.copy_back(got, in_place);
    }
    const std::string name = c.name() + (variant.name[0] ? std::string(" [") + variant.name + "]" : "");
    const Closeness out = allclose(got.output, want.output, tol.out_atol, tol.out_rtol);
    EXPECT_TRUE(out.ok) << name << ": output " << out.first_failure << " (max abs " << out.max_abs << ")";
    const HostTensor& got_state = in_place ? got.initial_state : got.final_state;
    const HostTensor& want_state = in_place ? want.initial_state : want.final_state;
    const Closeness st = allclose(got_state, want_state, tol.state_atol, tol.state_rtol);
    EXPECT_TRUE(st.ok) << name << ": state " << st.first_failure << " (max abs " << st.max_abs << ")";
    Closeness ck;
    if (c.checkpoint_every) {
      ck = allclose(got.checkpoints, want.checkpoints, tol.state_atol, tol.state_rtol);
      EXPECT_TRUE(ck.ok) << name << ": checkpoints " << ck.first_failure;
    }
    const bool ok = out.ok && st.ok && ck.ok;
    failed += !ok;
    std::printf("%s %-90s out %.1e/%.1e (err/tol %.2f) state %.1e/%.1e (err/tol %.2f)%s\n", ok ? "ok  " : "FAIL",
                name.c_str(), out.max_abs, out.rel_l2, out.worst, st.max_abs, st.rel_l2, st.worst, in_place ? " in-place" : "");
    std::fflush(stdout);  // a later hang or trap must not swallow the lines already printed
  }
  return failed;
}

inline void run_against_oracle(const PrefillCase& c, std::uint64_t seed, bool in_place = false,
                               const PrefillCall& run = {}) {
  run_variants_against_oracle(c, seed, in_place, {{"", run}});
}

}  // namespace fastinfer::testing
