// GPU tests of gdn::prefill against the fp64 oracle on the issue's grid (heads x lengths) and on
// gate, scale, state-form, state-dtype and checkpoint variations, each run with the three inverse
// sources of the kernel (T solved by the producer, Tinv or T_g precomputed by CP stage 1) and with few
// persistent CTAs over many ragged items; outputs and states are poisoned with NaN before every
// run so unwritten elements fail; inputs are fresh random values.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gdn/prefill_runner.h"
#include "prefill_gpu_util.h"
#include "runtime/cuda_check.h"
#include "support/gpu_test.h"

namespace fastinfer::testing {
namespace {

class GdnPrefillGpu : public GpuTest {};

int failures = 0;

// gdn::prefill's non-CP path with the kernel solving T, with Tinv and with T_g precomputed (CP stage 1).
void check(const PrefillCase& c, std::uint64_t seed, bool in_place = false, int ctas = 0) {
  const auto with = [ctas](gdn::InverseSource inverse) {
    return [ctas, inverse](const gdn::PrefillArgs& a) { gdn::prefill_with_options(a, nullptr, {.inverse = inverse, .ctas = ctas}); };
  };
  const std::string solve = "solve ctas " + std::to_string(ctas), tinv = "tinv ctas " + std::to_string(ctas),
                    tg = "T_g ctas " + std::to_string(ctas);
  failures += run_variants_against_oracle(c, seed, in_place,
                                          {{solve.c_str(), with(gdn::InverseSource::kSolveInKernel)},
                                           {tinv.c_str(), with(gdn::InverseSource::kPrecompute)},
                                           {tg.c_str(), with(gdn::InverseSource::kPrecomputeGated)}});
}

TEST_F(GdnPrefillGpu, HeadsTimesLengthsGrid) {
  const std::vector<std::array<std::int64_t, 3>> heads{{1, 1, 1}, {4, 1, 1}, {3, 3, 3}, {6, 2, 2},
                                                       {1, 1, 2}, {2, 2, 4}, {16, 16, 32}, {16, 16, 64}};
  const std::vector<std::vector<std::int64_t>> lengths{{1}, {31}, {64}, {65}, {128}, {511, 501}, {31, 63, 93, 123, 150, 500},
                                                       {4097}, {0, 100, 0}};
  std::uint64_t seed = 100;
  for (const auto& h : heads)
    for (const auto& l : lengths) {
      if (h[2] >= 32 && l.size() == 1 && l[0] == 4097) continue;  // oracle cost; 4097 runs with the small heads
      PrefillCase c;
      c.hq = h[0], c.hk = h[1], c.hv = h[2];
      c.lengths = l;
      c.state = seed % 3 == 0 ? StateForm::kNone : seed % 3 == 1 ? StateForm::kPacked : StateForm::kPool;
      check(c, seed++);
    }
}

TEST_F(GdnPrefillGpu, GatesScalesStatesAndDtypes) {
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
  std::uint64_t seed = 500;
  for (const auto& c : cases) check(c, seed++);
}

TEST_F(GdnPrefillGpu, InPlaceStateAndCheckpoints) {
  PrefillCase c;
  c.hq = 2, c.hk = 2, c.hv = 4;
  c.lengths = {300, 0, 64, 129};
  c.state = StateForm::kPool;
  c.checkpoint_every = 64;
  check(c, 900, /*in_place=*/true);
  c.checkpoint_every = 128;
  c.state = StateForm::kPacked;
  c.state_dtype = DType::kBFloat16;
  check(c, 901);
}

// Few CTAs, many ragged work items: each persistent CTA walks several (sequence, head) pairs and
// the stage barriers carry their phases across items (odd chunk counts per item included).
TEST_F(GdnPrefillGpu, PersistentCtasOverManyItems) {
  PrefillCase c;
  c.hq = 3, c.hk = 3, c.hv = 3;
  c.lengths = {1, 64, 65, 0, 129, 7, 200, 63, 64, 300, 2, 191};
  c.state = StateForm::kPool;
  c.l2norm_in_kernel = true;
  for (int ctas : {1, 5, 7}) check(c, 2000 + ctas, false, ctas);
}

// Two calls chained through the state equal one call (GPU against GPU); the split is at a
// multiple of 64 so both see the same chunks.
TEST_F(GdnPrefillGpu, ChainedCallsEqualOneCall) {
  PrefillCase c;
  c.hq = 4, c.hk = 4, c.hv = 8;
  c.lengths = {256};
  c.state = StateForm::kPacked;
  PrefillProblem whole = make_problem(c, 77);
  PrefillProblem first = whole, second = whole;
  for (PrefillProblem* part : {&first, &second}) {
    part->c.lengths = {128};
    const bool is_first = part == &first;
    // Same tensors; cu_seqlens selects the first or the second 128 tokens.
    set_int(part->cu, 0, is_first ? 0 : 128);
    set_int(part->cu, 1, is_first ? 128 : 256);
  }
  {
    DeviceProblem dev(whole);
    gdn::prefill(dev.args(whole));
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    dev.copy_back(whole);
  }
  {
    DeviceProblem dev(first);
    gdn::prefill(dev.args(first));
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    dev.copy_back(first);
  }
  second.initial_state = first.final_state;
  {
    DeviceProblem dev(second);
    gdn::prefill(dev.args(second));
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    dev.copy_back(second);
  }
  const Closeness st = allclose(second.final_state, whole.final_state, 1e-6, 1e-6);
  EXPECT_TRUE(st.ok) << st.first_failure;
  for (std::int64_t i = 0; i < whole.output.numel(); ++i) {
    const double got = i < whole.output.numel() / 2 ? first.output.get(i) : second.output.get(i);
    ASSERT_EQ(got, whole.output.get(i)) << "element " << i;
  }
}

// gdn::prefill with q, k, v as slices of one fused [T][Hq + Hk + Hv][128] buffer (a qkv
// projection's output: token strides (Hq + Hk + Hv) * 128, not the contiguous ones), copied from
// the contiguous device inputs of `a`.
// q, k, v re-laid in another strided form, then the prefill with the given T source:
// fused qkv = [T][Hq + Hk + Hv][128] slices (the serving layout); head-major = [H][T][128] views
// (head stride above the token stride; the TMA maps take any positive strides).
enum class InputLayout { kFusedQkv, kHeadMajor };

void run_on_relaid(const gdn::PrefillArgs& a, gdn::InverseSource inverse, InputLayout layout) {
  const std::int64_t tokens = a.q.size(0), dim = a.q.size(2);
  const std::int64_t heads = a.q.size(1) + a.k.size(1) + a.v.size(1);
  const std::int64_t bytes = static_cast<std::int64_t>(a.q.element_size());
  void* buffer = nullptr;
  FASTINFER_CUDA_CHECK(cudaMalloc(&buffer, std::max<std::int64_t>(tokens, 1) * heads * dim * bytes));
  gdn::PrefillArgs b = a;
  std::int64_t first_head = 0;
  for (const auto& [to, from] : {std::pair{&b.q, &a.q}, std::pair{&b.k, &a.k}, std::pair{&b.v, &a.v}}) {
    const std::int64_t h = from->size(1);
    const bool fused = layout == InputLayout::kFusedQkv;
    char* base = static_cast<char*>(buffer) + first_head * (fused ? dim : tokens * dim) * bytes;
    for (std::int64_t head = 0; head < h && tokens > 0; ++head) {
      char* dst = base + head * (fused ? dim : tokens * dim) * bytes;
      FASTINFER_CUDA_CHECK(cudaMemcpy2D(dst, (fused ? heads : 1) * dim * bytes,
                                        static_cast<const char*>(from->data) + head * dim * bytes, h * dim * bytes,
                                        dim * bytes, tokens, cudaMemcpyDeviceToDevice));
    }
    *to = fused ? TensorView::strided(base, from->dtype, {tokens, h, dim}, {heads * dim, dim, 1}, from->device)
                : TensorView::strided(base, from->dtype, {tokens, h, dim}, {dim, tokens * dim, 1}, from->device);
    first_head += h;
  }
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  gdn::prefill_with_options(b, nullptr, {.inverse = inverse});
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  FASTINFER_CUDA_CHECK(cudaFree(buffer));
}

// Strided inputs (the fused qkv layout and head-major views) with every T source, GVA and GQA,
// ragged lengths.
TEST_F(GdnPrefillGpu, StridedInputs) {
  const std::vector<std::array<std::int64_t, 3>> heads{{16, 16, 32}, {4, 1, 1}, {6, 2, 2}};
  std::uint64_t seed = 3000;
  for (const auto& h : heads) {
    PrefillCase c;
    c.hq = h[0], c.hk = h[1], c.hv = h[2];
    c.lengths = {31, 63, 93, 123, 150, 500};
    c.state = StateForm::kPacked;
    c.l2norm_in_kernel = seed % 2 == 0;
    const auto relaid = [](gdn::InverseSource inverse, InputLayout layout) {
      return [inverse, layout](const gdn::PrefillArgs& a) { run_on_relaid(a, inverse, layout); };
    };
    failures += run_variants_against_oracle(
        c, seed++, false,
        {{"fused qkv solve", relaid(gdn::InverseSource::kSolveInKernel, InputLayout::kFusedQkv)},
         {"fused qkv tinv", relaid(gdn::InverseSource::kPrecompute, InputLayout::kFusedQkv)},
         {"fused qkv T_g", relaid(gdn::InverseSource::kPrecomputeGated, InputLayout::kFusedQkv)},
         {"head-major solve", relaid(gdn::InverseSource::kSolveInKernel, InputLayout::kHeadMajor)},
         {"head-major T_g", relaid(gdn::InverseSource::kPrecomputeGated, InputLayout::kHeadMajor)}});
  }
}

// The launch is capturable in a CUDA graph and a replay gives the eager result.
TEST_F(GdnPrefillGpu, GraphCaptureReplaysEagerResult) {
  PrefillCase c;
  c.hq = 2, c.hk = 2, c.hv = 2;
  c.lengths = {100, 64};
  c.state = StateForm::kPacked;
  PrefillProblem eager = make_problem(c, 31), graph = eager;
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    DeviceProblem dev(eager);
    gdn::prefill(dev.args(eager), stream);
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
    dev.copy_back(eager);
  }
  {
    DeviceProblem dev(graph);
    replay_captured(stream, [&] { gdn::prefill(dev.args(graph), stream); });
    dev.copy_back(graph);
  }
  cudaStreamDestroy(stream);
  EXPECT_EQ(0, std::memcmp(eager.output.data(), graph.output.data(), eager.output.nbytes()));
  EXPECT_EQ(0, std::memcmp(eager.final_state.data(), graph.final_state.data(), eager.final_state.nbytes()));
}

TEST_F(GdnPrefillGpu, ZZSummary) { std::printf("prefill GPU variants failed: %d\n", failures); }

}  // namespace
}  // namespace fastinfer::testing
