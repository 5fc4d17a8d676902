// CPU tests of the CP plan and of the CP stage references: composing stage 1 (block inverses),
// stage 2 (chunk maps) and stage 3 (fix-up scan) reproduces the token-serial fp64 recurrence at
// every chunk boundary and at the end, for ragged lengths, extreme gates and all state forms.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gdn/cp_plan.h"
#include "ref/gdn_cp_ref.h"
#include "ref/host_tensor.h"
#include "gdn/cp_problem.h"

namespace fastinfer {
namespace {

using namespace cp_test;

void expect_stages_match_serial(Problem& p, std::int64_t chunk_len) {
  std::int64_t max_len = 1;
  for (auto l : p.lengths) max_len = std::max(max_len, l);
  const ref::CpLayout layout{chunk_len, (max_len + chunk_len - 1) / chunk_len};
  const auto inverse = ref::gdn_cp_block_inverse_ref(p.args, layout);
  std::vector<double> m, b, states, finals, want_states, want_finals;
  ref::gdn_cp_chunk_maps_ref(p.args, layout, inverse, m, b);
  ref::gdn_cp_fixup_ref(p.args, layout, m, b, states, finals);
  serial_states(p, chunk_len, layout.chunks_per_seq, want_states, want_finals);
  EXPECT_LT(rel_l2(states, want_states), 1e-9);
  EXPECT_LT(rel_l2(finals, want_finals), 1e-9);
  double norm = 0;
  for (double x : want_finals) norm += x * x;
  EXPECT_GT(norm, 1.0);  // the check compares real states, not zeros
}

TEST(GdnCpRef, RaggedLengthsGatesNearOne) {
  Problem p({1, 63, 64, 65, 0, 300}, 1, 1, 1, 0.99, 1.0, 1);
  expect_stages_match_serial(p, 128);
}

TEST(GdnCpRef, GatesVeryNearOneGva) {
  Problem p({200, 129}, 1, 1, 2, 0.9995, 1.0, 2);
  expect_stages_match_serial(p, 64);
}

TEST(GdnCpRef, SmallGatesGqaPackedState) {
  Problem p({190, 7}, 2, 1, 1, 0.02, 0.1, 3);
  p.packed_initial_state(30);
  expect_stages_match_serial(p, 128);
}

TEST(GdnCpRef, PoolStateWithNegativeSlot) {
  Problem p({150, 70, 260}, 1, 1, 1, 0.9, 1.0, 4);
  p.pool_initial_state(40);
  expect_stages_match_serial(p, 192);
}

TEST(GdnCpRef, InverseSolvesTheBlockSystem) {
  Problem p({100}, 1, 1, 1, 0.9, 1.0, 5);
  const ref::CpLayout layout{64, 2};
  const auto inverse = ref::gdn_cp_block_inverse_ref(p.args, layout);
  // Block 1 has 36 tokens; (I + A0) Tinv must be I, with A0 rebuilt independently here.
  for (int blk = 0; blk < 2; ++blk) {
    const int t0 = blk * 64, len = blk == 0 ? 64 : 36;
    std::vector<double> K(64 * D, 0.0), beta(64, 0.0);
    for (int t = 0; t < len; ++t) {
      double s = 0;
      for (int d = 0; d < D; ++d) K[t * D + d] = ref::load(p.args.k, (t0 + t) * D + d), s += K[t * D + d] * K[t * D + d];
      for (int d = 0; d < D; ++d) K[t * D + d] /= std::sqrt(s + 1e-6);
      beta[t] = ref::load(*p.args.beta, t0 + t);
    }
    const double* T = &inverse[blk * 64 * 64];
    double worst = 0;
    for (int i = 0; i < 64; ++i)
      for (int c = 0; c < 64; ++c) {
        double x = T[i * 64 + c];
        for (int j = 0; j < i; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += K[i * D + d] * K[j * D + d];
          x += beta[i] * dot * T[j * 64 + c];
        }
        worst = std::max(worst, std::fabs(x - (i == c ? 1.0 : 0.0)));
      }
    EXPECT_LT(worst, 1e-12) << "block " << blk;
  }
}

TEST(GdnCpPlan, ChunkRuleFillsOneWaveAndCoversTheLongestSequence) {
  using gdn::detail::make_cp_plan;
  const auto one = make_cp_plan(1, 32, 131072, 132);  // 132 / 32 = 4 chunks of 32k
  EXPECT_EQ(one.chunks_per_seq, 4);
  EXPECT_EQ(one.chunk_len, 32768);
  const auto small = make_cp_plan(1, 8, 65536, 132);  // 16 chunks
  EXPECT_EQ(small.chunks_per_seq, 16);
  const auto ragged = make_cp_plan(2, 8, 9999, 132);  // 8 chunks of <= 1280 tokens, real max length
  EXPECT_EQ(ragged.chunk_len % 64, 0);
  EXPECT_GE(ragged.chunk_len * ragged.chunks_per_seq, 9999);
  EXPECT_EQ(ragged.chunks_per_seq, 8);
  const auto short_seq = make_cp_plan(1, 8, 700, 132);  // the minimum chunk length wins
  EXPECT_EQ(short_seq.chunks_per_seq, 1);
  const auto forced = make_cp_plan(3, 4, 1000, 132, 100);
  EXPECT_EQ(forced.chunk_len, 128);
  EXPECT_EQ(forced.chunks_per_seq, 8);
  EXPECT_EQ(forced.blocks_per_seq(), 16);
}

TEST(GdnCpPlan, AutoRule) {
  using gdn::detail::should_use_cp;
  EXPECT_TRUE(should_use_cp(1, 32, 8192, 132));
  EXPECT_FALSE(should_use_cp(4, 32, 8192, 132));    // 256 CTAs already fill the GPU
  EXPECT_FALSE(should_use_cp(1, 32, 600, 132));     // too short to cut
  EXPECT_TRUE(should_use_cp(2, 8, 65536, 132));
}

}  // namespace
}  // namespace fastinfer
