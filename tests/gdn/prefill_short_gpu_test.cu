// GPU tests of gdn::prefill's short-sequence path (docs/GDN_PREFILL_SHORT.md) against the fp64
// oracle: each case runs the short path directly (gdn::prefill_short, which never falls back) and
// through gdn::prefill with its max_seqlen hint (the dispatch), on the 32- and the 64-token kernel.
// Ragged lengths up to the kernel's capacity with empty
// sequences, the GQA / GVA head sets of issue 5, extreme gates, bf16 and fp16, int32 / int64
// offsets, L2 norm in the kernel; wrong hints (sequences longer than the hint: the serial kernel);
// calls the short path does not take (states, hint above its cap) still exact; graph capture.
// Outputs are NaN-poisoned before every run (make_problem), so unwritten rows fail.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "gdn/prefill_short_launch.h"
#include "gdn/prefill_short_runner.h"
#include "prefill_gpu_util.h"
#include "runtime/cuda_check.h"
#include "support/gpu_test.h"

namespace fastinfer::testing {
namespace {

class GdnPrefillShortGpu : public GpuTest {};

// No state I/O (the calls the short path takes), the hint set to the cap (32 or 64: the kernel).
PrefillCase short_case(std::int64_t hq, std::int64_t hk, std::int64_t hv, std::vector<std::int64_t> lengths,
                       std::int64_t cap) {
  PrefillCase c;
  c.hq = hq, c.hk = hk, c.hv = hv;
  c.lengths = std::move(lengths);
  c.write_state = false;
  c.max_seqlen = cap;
  return c;
}

std::vector<std::int64_t> ragged(std::mt19937_64& rng, int count, int max_len) {
  std::vector<std::int64_t> l(count);
  for (auto& x : l) x = static_cast<std::int64_t>(rng() % (max_len + 1));  // 0 .. max_len
  return l;
}

// The short path with one CTA per item (its default), on as many persistent CTAs as fit and on 3
// (many items each); and gdn::prefill with the hint.
int check(const PrefillCase& c, std::uint64_t seed) {
  const auto direct = [](std::int64_t ctas) {
    return [ctas](const gdn::PrefillArgs& a) { gdn::prefill_short(a, nullptr, ctas); };
  };
  return run_variants_against_oracle(
      c, seed, false,
      {{"short", direct(0)}, {"short resident ctas", direct(-1)}, {"short 3 ctas", direct(3)}, {"hinted gdn::prefill", {}}});
}

TEST_F(GdnPrefillShortGpu, IssueHeadsRaggedLengths) {
  const std::vector<std::array<std::int64_t, 3>> heads{{1, 1, 1}, {4, 1, 1}, {3, 3, 3}, {6, 2, 2}, {1, 1, 2},
                                                       {2, 2, 4}, {16, 16, 32}, {16, 16, 64}, {2, 2, 12}, {8, 1, 1}};
  std::mt19937_64 rng(7);
  int failed = 0;
  std::uint64_t seed = 500;
  for (int cap : {32, 64})
    for (std::size_t i = 0; i < heads.size(); ++i) {
      const auto& h = heads[i];
      std::vector<std::int64_t> lengths = ragged(rng, h[2] >= 32 ? 6 : 16, cap);
      lengths.insert(lengths.begin(), {1, cap, 0, cap - 1, 17});
      PrefillCase c = short_case(h[0], h[1], h[2], lengths, cap);
      c.l2norm_in_kernel = (i + cap / 32) % 2 == 0;
      failed += check(c, seed++);
    }
  EXPECT_EQ(failed, 0);
}

TEST_F(GdnPrefillShortGpu, GatesScalesDtypesOffsets) {
  std::mt19937_64 rng(11);
  int failed = 0;
  std::uint64_t seed = 900;
  for (int cap : {32, 64})
    for (DType dt : {DType::kBFloat16, DType::kFloat16})
      for (int g = 0; g < 6; ++g) {
        if ((cap == 32) != (dt == DType::kBFloat16) && g % 3 != 0) continue;  // all gates on two of the four pairs
        PrefillCase c = short_case(2, 2, 8, ragged(rng, 12, cap), cap);
        c.lengths.push_back(cap);
        c.dtype = dt;
        c.with_alpha = g != 3;
        c.with_beta = g != 4;
        if (g == 0) c.alpha_lo = 0.999, c.alpha_hi = 1.0;   // strong memory
        if (g == 1) c.alpha_lo = 0.04, c.alpha_hi = 0.06;   // fast decay
        if (g == 5) c.alpha_lo = 0.0, c.alpha_hi = 1e-30;   // alpha below the clamp (acts as 0)
        c.scale = g % 2 ? 1.0f : 0.0f;
        c.offsets_int64 = g >= 3;
        c.l2norm_in_kernel = g == 2 || g == 5;
        failed += check(c, seed++);
      }
  EXPECT_EQ(failed, 0);
}

// The hint is only a hint: sequences longer than the kernel's capacity run on the serial kernel.
TEST_F(GdnPrefillShortGpu, SequencesLongerThanTheHintStayExact) {
  int failed = 0;
  std::uint64_t seed = 1300;
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    const bool l2 = dt == DType::kFloat16;
    PrefillCase c = short_case(2, 2, 4, {5, 33, 0, 100, 32, 64, 1, 200}, 32);
    c.dtype = dt;
    c.l2norm_in_kernel = l2;
    failed += check(c, seed++);
    PrefillCase g = short_case(6, 2, 2, {70, 3, 31, 129, 64, 65}, 1);  // GQA, a hint of 1: the 32-token kernel
    g.dtype = dt;
    g.l2norm_in_kernel = !l2;
    failed += check(g, seed++);
    PrefillCase w = short_case(2, 2, 8, {65, 40, 0, 150, 64}, 48);  // the 64-token kernel
    w.dtype = dt;
    w.l2norm_in_kernel = l2;
    failed += check(w, seed++);
  }
  EXPECT_EQ(failed, 0);
}

// Calls the short path does not take (states, checkpoints, a hint above its cap, no hint) run on the
// main kernel and stay exact; prefill_short refuses states.
TEST_F(GdnPrefillShortGpu, CallsOutsideTheShortPathStayExact) {
  std::mt19937_64 rng(13);
  int failed = 0;
  std::uint64_t seed = 1700;
  for (int v = 0; v < 4; ++v) {
    PrefillCase c = short_case(2, 2, 4, ragged(rng, 20, 32), 32);
    if (v == 0) c.state = StateForm::kPool, c.write_state = true;
    if (v == 1) c.write_state = true;  // final state only
    if (v == 2) c.max_seqlen = 65;
    if (v == 3) c.max_seqlen = 0;
    failed += run_variants_against_oracle(c, seed++, false, {{"gdn::prefill", {}}});
  }
  EXPECT_EQ(failed, 0);
  PrefillCase c = short_case(2, 2, 4, {3, 4}, 32);
  c.write_state = true;
  PrefillProblem p = make_problem(c, 1);
  DeviceProblem dev(p);
  EXPECT_THROW(gdn::prefill_short(dev.args(p)), Error);
}

// Many items (the 8192 x 32 shape's 16/64 heads, fewer sequences) and graph capture: the captured
// replay writes the eager call's bits.
TEST_F(GdnPrefillShortGpu, ManyItemsAndGraphCapture) {
  std::mt19937_64 rng(17);
  EXPECT_EQ(check(short_case(16, 16, 32, ragged(rng, 20, 64), 64), 2000), 0);
  PrefillCase c = short_case(16, 16, 64, ragged(rng, 40, 32), 32);
  c.l2norm_in_kernel = true;
  EXPECT_EQ(check(c, 2100), 0);
  PrefillProblem eager = make_problem(c, 2200), graph = eager;
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    DeviceProblem dev(eager);
    gdn::prefill(dev.args(eager), stream);
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
    dev.copy_back(eager);
  }
  {
    DeviceProblem dev(graph);
    gdn::prefill(dev.args(graph), stream);  // warm-up: the runner is built outside the capture
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
    FASTINFER_CUDA_CHECK(cudaMemset(dev.output.view().data, 0xff, graph.output.nbytes()));
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    replay_captured(stream, [&] { gdn::prefill(dev.args(graph), stream); });
    dev.copy_back(graph);
  }
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  // Every row belongs to a sequence (cu_seqlens covers all tokens), so every byte is written.
  EXPECT_EQ(std::memcmp(eager.output.data(), graph.output.data(), eager.output.nbytes()), 0);
}

}  // namespace
}  // namespace fastinfer::testing
