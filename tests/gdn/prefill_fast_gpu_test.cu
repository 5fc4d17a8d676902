// GPU tests of the warp-specialised prefill kernel (gdn::run_prefill_fast) against the fp64
// oracle with the issue's (FlashInfer's) tolerances: the heads x lengths grid, gates, scales,
// state forms and dtypes, checkpoints, in-place states, and the persistent loop (few CTAs, many
// ragged work items). Outputs and states are NaN-poisoned before every run; inputs are fresh.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "gdn/prefill_fast_launch.h"
#include "prefill_test_util.h"
#include "runtime/cuda_check.h"
#include "support/gpu_test.h"

namespace fastinfer::testing {
namespace {

using ref::HostTensor;

// A device copy of a host tensor (same shape and strides). (A copy of the helper in
// prefill_gpu_test.cu; to be shared once this kernel replaces the chunked one.)
class DeviceTensor {
 public:
  explicit DeviceTensor(const HostTensor& h) : view_(h.view()) {
    FASTINFER_CUDA_CHECK(cudaMalloc(&ptr_, h.nbytes() ? h.nbytes() : 16));
    FASTINFER_CUDA_CHECK(cudaMemcpy(ptr_, h.data(), h.nbytes(), cudaMemcpyHostToDevice));
    view_.data = ptr_;
    view_.device = Device::cuda(0);
  }
  ~DeviceTensor() { cudaFree(ptr_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  const TensorView& view() const { return view_; }
  void copy_to(HostTensor& h) const { FASTINFER_CUDA_CHECK(cudaMemcpy(h.data(), ptr_, h.nbytes(), cudaMemcpyDeviceToHost)); }

 private:
  void* ptr_ = nullptr;
  TensorView view_;
};

struct Tolerance {
  double out_atol, out_rtol, state_atol, state_rtol;
};
// The issue's tolerances; a 16-bit stored state adds its own rounding (as in prefill_gpu_test.cu).
Tolerance tolerance_for(const PrefillCase& c) {
  Tolerance t = c.dtype == DType::kBFloat16 ? Tolerance{1e-2, 1e-2, 5e-3, 1e-3} : Tolerance{2e-3, 1e-3, 1e-3, 1e-4};
  if (c.state_dtype == DType::kBFloat16) t.state_rtol = std::max(t.state_rtol, 8e-3);
  if (c.state_dtype == DType::kFloat16) t.state_rtol = std::max(t.state_rtol, 1e-3);
  return t;
}

int failures = 0;

void run_against_oracle(const PrefillCase& c, std::uint64_t seed, bool in_place = false, int ctas = 0) {
  PrefillProblem want = make_problem(c, seed);
  PrefillProblem got = want;
  {
    DeviceTensor q(got.q), k(got.k), v(got.v), cu(got.cu), alpha(got.alpha), beta(got.beta), output(got.output),
        initial(got.initial_state), final_(got.final_state), indices(got.indices),
        checkpoints(c.checkpoint_every ? got.checkpoints : got.output),
        starts(c.checkpoint_every ? got.checkpoint_starts : got.cu);
    gdn::PrefillArgs a = got.args();
    a.q = q.view(), a.k = k.view(), a.v = v.view(), a.cu_seqlens = cu.view(), a.output = output.view();
    if (a.alpha) a.alpha = alpha.view();
    if (a.beta) a.beta = beta.view();
    if (a.initial_state) a.initial_state = initial.view();
    if (a.output_state) a.output_state = in_place ? initial.view() : final_.view();
    if (a.state_indices) a.state_indices = indices.view();
    if (a.state_checkpoints) a.state_checkpoints = checkpoints.view(), a.checkpoint_cu_starts = starts.view();
    gdn::run_prefill_fast(a, nullptr, ctas);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    output.copy_to(got.output);
    if (c.write_state) (in_place ? initial : final_).copy_to(in_place ? got.initial_state : got.final_state);
    if (c.checkpoint_every) checkpoints.copy_to(got.checkpoints);
  }
  gdn::PrefillArgs a = want.args();
  if (in_place && a.output_state) a.output_state = want.initial_state.view();
  ref::gdn_prefill_serial_fp64(a);
  const Tolerance tol = tolerance_for(c);
  const Closeness out = allclose(got.output, want.output, tol.out_atol, tol.out_rtol);
  EXPECT_TRUE(out.ok) << c.name() << ": output " << out.first_failure << " (max abs " << out.max_abs << ")";
  const HostTensor& got_state = in_place ? got.initial_state : got.final_state;
  const HostTensor& want_state = in_place ? want.initial_state : want.final_state;
  const Closeness st = allclose(got_state, want_state, tol.state_atol, tol.state_rtol);
  EXPECT_TRUE(st.ok) << c.name() << ": state " << st.first_failure << " (max abs " << st.max_abs << ")";
  Closeness ck;
  if (c.checkpoint_every) {
    ck = allclose(got.checkpoints, want.checkpoints, tol.state_atol, tol.state_rtol);
    EXPECT_TRUE(ck.ok) << c.name() << ": checkpoints " << ck.first_failure;
  }
  const bool ok = out.ok && st.ok && ck.ok;
  failures += !ok;
  // Print every failure, and passes compactly (the job log must stay small).
  std::printf("%s %-78s out %.1e/%.1e state %.1e/%.1e%s ctas %d\n", ok ? "ok  " : "FAIL", c.name().c_str(), out.max_abs,
              out.rel_l2, st.max_abs, st.rel_l2, in_place ? " in-place" : "", ctas);
  std::fflush(stdout);  // a later hang or trap must not swallow the lines already printed
}

class GdnPrefillFastGpu : public GpuTest {};

TEST_F(GdnPrefillFastGpu, GatesScalesStatesAndDtypes) {
  std::vector<PrefillCase> cases;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int g = 0; g < 4; ++g)
      for (StateForm form : {StateForm::kNone, StateForm::kPacked, StateForm::kPool}) {
        PrefillCase c;
        c.dtype = dt;
        c.hq = 2, c.hk = 2, c.hv = 4;
        c.lengths = {130, 0, 257, 64};
        c.state = form;
        c.with_alpha = g != 3;
        c.with_beta = g != 2;
        if (g == 0) c.alpha_lo = c.alpha_hi = 0.999;
        if (g == 1) c.alpha_lo = 0.04, c.alpha_hi = 0.06;
        c.scale = g % 2 ? 1.0f : 0.0f;
        c.offsets_int64 = g == 2;
        cases.push_back(c);
      }
  for (DType sd : {DType::kBFloat16, DType::kFloat16}) {
    PrefillCase c;
    c.hq = 4, c.hk = 4, c.hv = 4;
    c.lengths = {333, 64};
    c.state = StateForm::kPool;
    c.state_dtype = sd;
    cases.push_back(c);
  }
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    PrefillCase c;
    c.dtype = dt;
    c.hq = 6, c.hk = 2, c.hv = 2;
    c.lengths = {200, 31, 1};
    c.l2norm_in_kernel = true;
    c.state = StateForm::kPacked;
    cases.push_back(c);
  }
  std::uint64_t seed = 1500;
  for (const auto& c : cases) run_against_oracle(c, seed++);
}

TEST_F(GdnPrefillFastGpu, InPlaceStateAndCheckpoints) {
  PrefillCase c;
  c.hq = 2, c.hk = 2, c.hv = 4;
  c.lengths = {300, 0, 64, 129};
  c.state = StateForm::kPool;
  c.checkpoint_every = 64;
  run_against_oracle(c, 1900, /*in_place=*/true);
  c.checkpoint_every = 128;
  c.state = StateForm::kPacked;
  c.state_dtype = DType::kBFloat16;
  run_against_oracle(c, 1901);
}

// Few CTAs, many ragged work items: each CTA walks several (sequence, head) pairs and the stage
// barriers carry their phases across items (odd chunk counts per item included).
TEST_F(GdnPrefillFastGpu, PersistentCtasOverManyItems) {
  PrefillCase c;
  c.hq = 3, c.hk = 3, c.hv = 3;
  c.lengths = {1, 64, 65, 0, 129, 7, 200, 63, 64, 300, 2, 191};
  c.state = StateForm::kPool;
  c.l2norm_in_kernel = true;
  for (int ctas : {1, 5, 7}) run_against_oracle(c, 2000 + ctas, false, ctas);
}

// Last: the largest oracle runs.
TEST_F(GdnPrefillFastGpu, HeadsTimesLengthsGrid) {
  const std::vector<std::array<std::int64_t, 3>> heads{{1, 1, 1}, {4, 1, 1}, {3, 3, 3}, {6, 2, 2},
                                                       {1, 1, 2}, {2, 2, 4}, {16, 16, 32}, {16, 16, 64}};
  const std::vector<std::vector<std::int64_t>> lengths{{1}, {31}, {64}, {65}, {128}, {511, 501}, {31, 63, 93, 123, 150, 500},
                                                       {4097}, {0, 100, 0}};
  std::uint64_t seed = 1100;
  for (const auto& h : heads)
    for (const auto& l : lengths) {
      if (h[2] >= 32 && l.size() == 1 && l[0] == 4097) continue;  // oracle cost
      PrefillCase c;
      c.hq = h[0], c.hk = h[1], c.hv = h[2];
      c.lengths = l;
      c.state = seed % 3 == 0 ? StateForm::kNone : seed % 3 == 1 ? StateForm::kPacked : StateForm::kPool;
      run_against_oracle(c, seed++);
    }
}

TEST_F(GdnPrefillFastGpu, ZZSummary) { std::printf("prefill_fast GPU cases failed: %d\n", failures); }

}  // namespace
}  // namespace fastinfer::testing
