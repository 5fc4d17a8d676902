// GPU tests of gdn::prefill's head groups: when the precomputed T_g (or Tinv) of all state heads
// does not fit the workspace cap, the call runs stage 1 + the kernel per group of heads
// (prefill_inverse.h). A cap lowered through PrefillRunOptions::precompute_max_bytes forces the
// split on small shapes: GQA and GVA ratios, an uneven last group, pool / packed / in-place states
// in fp32 and bf16, checkpoints, many one-chunk sequences (8192x32 in miniature), all against the
// fp64 oracle with NaN-poisoned outputs; and a captured graph of a split call replays its eager
// result.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gdn/prefill_inverse.h"
#include "gdn/prefill_runner.h"
#include "prefill_gpu_util.h"
#include "runtime/cuda_check.h"
#include "support/gpu_test.h"

namespace fastinfer::testing {
namespace {

class GdnPrefillHeadGroupsGpu : public GpuTest {};

constexpr std::size_t kRowBytes = 64 * 64 * 4;

// The chunk rows of a case (T / 64 + N) and a cap that holds exactly `heads` heads of them.
std::int64_t chunk_rows(const PrefillCase& c) { return c.tokens() / 64 + static_cast<std::int64_t>(c.lengths.size()); }
std::size_t cap_for_heads(const PrefillCase& c, int heads) {
  const std::int64_t rows = chunk_rows(c);
  return static_cast<std::size_t>(heads) * rows * kRowBytes + (rows + 1) * 8 + kRowBytes / 2;
}

// The host-side plan of the case under `cap` (the params carry only what the plan reads).
gdn::InverseGroups plan_of(const PrefillCase& c, std::size_t cap) {
  gdn::PrefillParams p;
  p.num_seqs = static_cast<int>(c.lengths.size());
  p.total_tokens = c.tokens();
  p.num_q_heads = static_cast<int>(c.hq);
  p.num_k_heads = static_cast<int>(c.hk);
  p.num_v_heads = static_cast<int>(c.hv);
  p.num_state_heads = static_cast<int>(c.hsab());
  return gdn::plan_inverse_groups(p, cap);
}

// The case with T_g and with Tinv precomputed in groups of `heads` (expected_groups of them).
void check_groups(const PrefillCase& c, std::uint64_t seed, int heads, int expected_groups, bool in_place = false) {
  const std::size_t cap = cap_for_heads(c, heads);
  const gdn::InverseGroups plan = plan_of(c, cap);
  ASSERT_FALSE(plan.solves()) << c.name();
  const int groups = static_cast<int>((c.hsab() + plan.heads_per_group - 1) / plan.heads_per_group);
  ASSERT_EQ(groups, expected_groups) << c.name() << ": " << plan.heads_per_group << " heads per group";
  ASSERT_LE(plan.bytes, cap);
  const auto with = [cap](gdn::InverseSource inverse) {
    return [cap, inverse](const gdn::PrefillArgs& a) {
      gdn::prefill_with_options(a, nullptr, {.inverse = inverse, .precompute_max_bytes = cap});
    };
  };
  const std::string tg = "T_g in " + std::to_string(groups) + " head groups",
                    tinv = "tinv in " + std::to_string(groups) + " head groups";
  EXPECT_EQ(0, run_variants_against_oracle(c, seed, in_place,
                                           {{tg.c_str(), with(gdn::InverseSource::kPrecomputeGated)},
                                            {tinv.c_str(), with(gdn::InverseSource::kPrecompute)}}));
}

TEST_F(GdnPrefillHeadGroupsGpu, GvaAndGqaRatios) {
  PrefillCase gva;
  gva.hq = 2, gva.hk = 2, gva.hv = 4;  // ratio 2: groups of 2 state heads
  gva.lengths = {130, 0, 257, 64};
  gva.state = StateForm::kPool;
  check_groups(gva, 7001, 2, 2);
  PrefillCase gqa;
  gqa.hq = 6, gqa.hk = 2, gqa.hv = 2;  // ratio 3: groups of 3
  gqa.lengths = {200, 31, 1};
  gqa.l2norm_in_kernel = true;
  gqa.state = StateForm::kPacked;
  check_groups(gqa, 7002, 4, 2);  // 4 heads fit, whole ratios: 3 per group
  PrefillCase big;
  big.hq = 4, big.hk = 4, big.hv = 16;  // ratio 4, four groups of 4
  big.lengths = {65, 4, 128};
  big.state = StateForm::kPacked;
  check_groups(big, 7003, 5, 4);
}

TEST_F(GdnPrefillHeadGroupsGpu, UnevenLastGroup) {
  PrefillCase c;
  c.hq = 5, c.hk = 5, c.hv = 5;  // groups 2, 2, 1
  c.lengths = {100, 64, 1};
  c.state = StateForm::kPool;
  c.alpha_lo = c.alpha_hi = 0.999;
  check_groups(c, 7101, 2, 3);
}

TEST_F(GdnPrefillHeadGroupsGpu, StatesInPlaceCheckpointsAndBf16Storage) {
  PrefillCase c;
  c.hq = 2, c.hk = 2, c.hv = 4;
  c.lengths = {300, 0, 64, 129};
  c.state = StateForm::kPool;
  c.checkpoint_every = 64;
  check_groups(c, 7201, 2, 2, /*in_place=*/true);
  c.state = StateForm::kPacked;
  c.state_dtype = DType::kBFloat16;
  c.checkpoint_every = 128;
  check_groups(c, 7202, 2, 2);
  c.dtype = DType::kFloat16;
  c.state_dtype = DType::kFloat16;
  check_groups(c, 7203, 2, 2);
}

// 8192 x 32 in miniature: many one-chunk sequences (the shape the cap split is for), 4/4/16.
TEST_F(GdnPrefillHeadGroupsGpu, ManyShortSequences) {
  PrefillCase c;
  c.hq = 4, c.hk = 4, c.hv = 16;
  c.lengths.assign(150, 32);
  c.lengths[3] = 0, c.lengths[17] = 1, c.lengths[99] = 64, c.lengths[140] = 65;
  c.state = StateForm::kPool;
  c.l2norm_in_kernel = true;
  check_groups(c, 7301, 8, 2);
}

// A split call is capturable after a warm-up on the stream (the workspace then exists) and a
// replay gives the eager bits.
TEST_F(GdnPrefillHeadGroupsGpu, GraphCaptureReplaysEagerResult) {
  PrefillCase c;
  c.hq = 2, c.hk = 2, c.hv = 4;
  c.lengths = {100, 64, 7};
  c.state = StateForm::kPacked;
  const gdn::PrefillRunOptions options{.inverse = gdn::InverseSource::kPrecomputeGated,
                                       .precompute_max_bytes = cap_for_heads(c, 2)};
  ASSERT_EQ(plan_of(c, options.precompute_max_bytes).heads_per_group, 2);
  PrefillProblem eager = make_problem(c, 7401), graph = eager;
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    DeviceProblem dev(eager);
    gdn::prefill_with_options(dev.args(eager), stream, options);
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
    dev.copy_back(eager);
  }
  {
    DeviceProblem dev(graph);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());  // uploads done before the non-blocking stream runs
    replay_captured(stream, [&] { gdn::prefill_with_options(dev.args(graph), stream, options); });
    dev.copy_back(graph);
  }
  cudaStreamDestroy(stream);
  EXPECT_EQ(0, std::memcmp(eager.output.data(), graph.output.data(), eager.output.nbytes()));
  EXPECT_EQ(0, std::memcmp(eager.final_state.data(), graph.final_state.data(), eager.final_state.nbytes()));
}

}  // namespace
}  // namespace fastinfer::testing
