// CPU tests of the head-group plan of precomputed inverses (prefill_inverse.h): which calls fit the
// workspace cap whole, which split into groups of whole head ratios, which solve in the kernel, and
// the params of one group (pointers at the group's first head, head counts scaled).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "gdn/prefill_inverse.h"

namespace fastinfer::gdn {
namespace {

PrefillParams params(int seqs, std::int64_t tokens, int hq, int hk, int hv) {
  PrefillParams p;
  p.num_seqs = seqs;
  p.total_tokens = tokens;
  p.num_q_heads = hq, p.num_k_heads = hk, p.num_v_heads = hv;
  p.num_state_heads = hq > hv ? hq : hv;
  return p;
}

TEST(PrefillHeadGroups, WholeCallWhenItFits) {
  const InverseGroups g = plan_inverse_groups(params(64, 64 * 1024, 16, 16, 32), kMaxPrecomputedInverseBytes);
  EXPECT_EQ(g.rows, 1024 + 64);
  EXPECT_EQ(g.heads_per_group, 32);
  EXPECT_GE(g.bytes, std::size_t{1088} * 32 * 16384);
}

// The 8192 x 32 at 16/64 needs 12.9 GB for all heads: four groups of 16 under 4 GiB.
TEST(PrefillHeadGroups, ShortSequencesSplitIntoEqualGroups) {
  const InverseGroups g = plan_inverse_groups(params(8192, 8192 * 32, 16, 16, 64), kMaxPrecomputedInverseBytes);
  EXPECT_EQ(g.rows, 4096 + 8192);
  EXPECT_EQ(g.heads_per_group, 16);
  EXPECT_LE(g.bytes, kMaxPrecomputedInverseBytes);
}

TEST(PrefillHeadGroups, GroupsAreWholeHeadRatios) {
  // GVA 2/2/6 (ratio 3) with room for 4 heads: groups of 3.
  const PrefillParams gva = params(1, 640, 2, 2, 6);
  const std::size_t per_head = std::size_t{11} * 16384;
  EXPECT_EQ(plan_inverse_groups(gva, 4 * per_head + 1024).heads_per_group, 3);
  // Not even one ratio fits: the kernel solves.
  EXPECT_TRUE(plan_inverse_groups(gva, 2 * per_head + 1024).solves());
  // Uneven: 5 heads, room for 2: groups of 2, 2, 1.
  EXPECT_EQ(plan_inverse_groups(params(1, 640, 5, 5, 5), 2 * per_head + 1024).heads_per_group, 2);
}

TEST(PrefillHeadGroups, TooManyRowsOrSegmentsSolve) {
  EXPECT_TRUE(plan_inverse_groups(params(70000, 70000, 1, 1, 1), kMaxPrecomputedInverseBytes).solves());
  PrefillParams segments = params(4, 4096, 2, 2, 2);
  const std::int64_t offsets[2] = {0, 4096};
  segments.segment_offsets = offsets;
  EXPECT_TRUE(plan_inverse_groups(segments, kMaxPrecomputedInverseBytes).solves());
}

TEST(PrefillHeadGroups, GroupParamsStartAtTheFirstHead) {
  // GVA 4/4/16 (ratio 4): state heads 8..11 read q/k heads 2 and v heads 8..11.
  PrefillParams p = params(3, 300, 4, 4, 16);
  static std::vector<unsigned char> memory(std::size_t{1} << 20);
  static std::vector<float> gates(32);
  unsigned char *q = memory.data(), *k = q + 4096, *v = k + 4096, *out = v + 8192;
  float *alpha = gates.data(), *beta = alpha + 16;
  p.q = q, p.k = k, p.v = v, p.output = out, p.alpha = alpha, p.beta = beta;
  p.q_stride_head = 128, p.k_stride_head = 256, p.v_stride_head = 128, p.out_stride_head = 384;
  p.initial_state.data = out, p.initial_state.type = StateType::kFloat32;
  p.output_state.data = out, p.output_state.type = StateType::kBFloat16;
  const PrefillParams g = head_group(p, 8, 4);
  EXPECT_EQ(static_cast<const unsigned char*>(g.q), q + 2 * 128 * 2);
  EXPECT_EQ(static_cast<const unsigned char*>(g.k), k + 2 * 256 * 2);
  EXPECT_EQ(static_cast<const unsigned char*>(g.v), v + 8 * 128 * 2);
  EXPECT_EQ(static_cast<unsigned char*>(g.output), out + 8 * 384 * 2);
  EXPECT_EQ(g.alpha, alpha + 8);
  EXPECT_EQ(g.beta, beta + 8);
  EXPECT_EQ(static_cast<unsigned char*>(g.initial_state.data), out + 8 * 128 * 128 * 4);
  EXPECT_EQ(static_cast<unsigned char*>(g.output_state.data), out + 8 * 128 * 128 * 2);
  EXPECT_EQ(g.checkpoints.data, nullptr);
  EXPECT_EQ(g.num_q_heads, 1);
  EXPECT_EQ(g.num_k_heads, 1);
  EXPECT_EQ(g.num_v_heads, 4);
  EXPECT_EQ(g.num_state_heads, 4);
  EXPECT_EQ(g.num_seqs, 3);
  EXPECT_EQ(g.total_tokens, 300);
}

}  // namespace
}  // namespace fastinfer::gdn
