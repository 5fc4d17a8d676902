// Every constraint gdn::prefill checks, one test each: the error names the op and the argument,
// and nothing is written (output and state keep their poison).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "fastinfer/error.h"
#include "gdn/prefill_runner.h"
#include "prefill_test_util.h"

namespace fastinfer::testing {
namespace {

using A = gdn::PrefillArgs;
using P = PrefillProblem;

struct BadCase {
  std::string name;
  std::function<void(A&, P&)> mutate;
  std::string message;  // substring of the error
};

PrefillCase valid_case() {
  PrefillCase c;
  c.hq = 2, c.hk = 2, c.hv = 4;
  c.lengths = {70, 0, 64};
  c.state = StateForm::kPool;
  c.checkpoint_every = 64;
  return c;
}

class PrefillValidation : public ::testing::TestWithParam<BadCase> {};

TEST_P(PrefillValidation, RejectsBeforeWriting) {
  const BadCase& bad = GetParam();
  P p = make_problem(valid_case(), 1);
  A a = p.args();
  bad.mutate(a, p);
  const ref::HostTensor output_before = p.output, state_before = p.final_state, ckpt_before = p.checkpoints;
  try {
    gdn::prefill(a);
    FAIL() << "no error for " << bad.name;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("gdn::prefill: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(bad.message), std::string::npos) << "expected '" << bad.message << "' in: " << msg;
  }
  EXPECT_EQ(0, std::memcmp(p.output.data(), output_before.data(), p.output.nbytes()));
  EXPECT_EQ(0, std::memcmp(p.final_state.data(), state_before.data(), p.final_state.nbytes()));
  EXPECT_EQ(0, std::memcmp(p.checkpoints.data(), ckpt_before.data(), p.checkpoints.nbytes()));
}

TensorView reshaped(const TensorView& t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(t.data, t.dtype, shape, t.device);
}

INSTANTIATE_TEST_SUITE_P(
    Errors, PrefillValidation,
    ::testing::Values(
        BadCase{"q_dtype", [](A& a, P&) { a.q.dtype = DType::kFloat32; }, "q must be bfloat16 or float16, got float32"},
        BadCase{"k_dtype_mismatch", [](A& a, P&) { a.k.dtype = DType::kFloat16; }, "k must have the same dtype as q"},
        BadCase{"q_ndim", [](A& a, P&) { a.q = reshaped(a.q, {134 * 2 * 128}); }, "q must have 3 dimensions"},
        BadCase{"head_dim", [](A& a, P&) { a.v = reshaped(a.v, {134, 8, 64}); }, "v.shape[2] (head dim) must be 128"},
        BadCase{"tokens_mismatch", [](A& a, P&) { a.k = reshaped(a.k, {100, 2, 128}); }, "k.shape[0] (tokens) must be 134"},
        BadCase{"heads_not_gqa_gva", [](A& a, P&) { a.q = reshaped(a.q, {134, 3, 128}); }, "q, k, v heads must be GQA"},
        BadCase{"q_last_dim_stride", [](A& a, P&) { a.q.strides = {256, 128, 2}; }, "q must have a contiguous last dimension"},
        BadCase{"q_misaligned", [](A& a, P&) { a.q.data = static_cast<char*>(a.q.data) + 2; }, "q must be 16-byte aligned"},
        BadCase{"q_null", [](A& a, P&) { a.q.data = nullptr; }, "q must point to memory"},
        BadCase{"q_row_stride", [](A& a, P&) { a.q.strides[0] = 260; }, "q must have token and head strides"},
        BadCase{"q_too_many_tokens", [](A& a, P&) { a.q.shape[0] = std::int64_t{1} << 31; },
                "q must have at most 2^31-1 tokens"},
        BadCase{"k_zero_token_stride", [](A& a, P&) { a.k.strides[0] = 0; }, "k must have a positive token stride"},
        BadCase{"v_negative_head_stride", [](A& a, P&) { a.v.strides[1] = -128; },
                "v must have a positive token stride and a non-negative head stride"},
        BadCase{"cu_dtype", [](A& a, P&) { a.cu_seqlens.dtype = DType::kFloat32; }, "cu_seqlens must be int32 or int64"},
        BadCase{"cu_ndim", [](A& a, P&) { a.cu_seqlens = reshaped(a.cu_seqlens, {2, 2}); }, "cu_seqlens must have 1 dimensions"},
        BadCase{"cu_decreasing", [](A& a, P& p) { set_int(p.cu, 2, 60); }, "cu_seqlens must be non-decreasing"},
        BadCase{"cu_past_end", [](A& a, P& p) { set_int(p.cu, 3, 135); }, "cu_seqlens must end at most at T = 134"},
        BadCase{"cu_negative_start", [](A& a, P& p) { set_int(p.cu, 0, -1); }, "cu_seqlens must start at 0 or later"},
        BadCase{"alpha_dtype", [](A& a, P&) { a.alpha->dtype = DType::kBFloat16; }, "alpha must be float32"},
        BadCase{"alpha_heads", [](A& a, P&) { a.alpha = reshaped(*a.alpha, {134 * 2, 2}); }, "alpha.shape[0] (tokens) must be 134"},
        BadCase{"beta_heads", [](A& a, P&) { a.beta = reshaped(*a.beta, {67, 8}); }, "beta.shape[0] (tokens) must be 134"},
        BadCase{"scale_nan", [](A& a, P&) { a.scale = NAN; }, "scale must be finite"},
        BadCase{"output_dtype", [](A& a, P&) { a.output.dtype = DType::kFloat16; }, "output must have the same dtype as q"},
        BadCase{"output_heads", [](A& a, P&) { a.output = reshaped(a.output, {134, 2, 256}); }, "output.shape[1] (state heads) must be 4"},
        BadCase{"output_overlaps_q", [](A& a, P&) { a.output.data = a.q.data; }, "output must not overlap q"},
        BadCase{"state_dtype", [](A& a, P&) { a.initial_state->dtype = DType::kInt32; }, "initial_state must be float32, bfloat16 or float16"},
        BadCase{"state_inner_strides", [](A& a, P&) { a.output_state->strides[2] = 256; }, "output_state must have contiguous [Hsab, 128, 128] rows"},
        BadCase{"state_heads", [](A& a, P&) { a.initial_state = reshaped(*a.initial_state, {6, 8, 128, 128}); }, "initial_state.shape[1] (state heads) must be 4"},
        BadCase{"packed_state_rows", [](A& a, P&) { a.state_indices.reset(); }, "initial_state.shape[0] (sequences) must be 3"},
        BadCase{"indices_dtype", [](A& a, P&) { a.state_indices->dtype = DType::kInt64; }, "state_indices must be int32"},
        BadCase{"indices_length", [](A& a, P&) { a.state_indices = reshaped(*a.state_indices, {2}); }, "state_indices.shape[0] (sequences) must be 3"},
        BadCase{"index_out_of_pool", [](A& a, P& p) { set_int(p.indices, 1, 6); }, "state_indices must be below the pool size 6"},
        BadCase{"indices_without_state", [](A& a, P&) { a.initial_state.reset(); a.output_state.reset(); }, "state_indices must come with initial_state or output_state"},
        BadCase{"partial_state_overlap", [](A& a, P&) { a.output_state->data = static_cast<char*>(a.initial_state->data) + 4 * 128 * 128 * 4; }, "output_state must be exactly initial_state"},
        BadCase{"state_misaligned_stride", [](A& a, P&) { a.initial_state = TensorView::strided(a.initial_state->data, DType::kFloat32, {5, 4, 128, 128}, {4 * 128 * 128 + 2, 128 * 128, 128, 1}); }, "first-dimension stride of a multiple of 16 bytes"},
        BadCase{"checkpoint_every_not_64", [](A& a, P&) { a.checkpoint_every_n_tokens = 100; }, "checkpoint_every_n_tokens must be 0 or a positive multiple of 64"},
        BadCase{"checkpoint_without_buffer", [](A& a, P&) { a.state_checkpoints.reset(); }, "state_checkpoints must be given"},
        BadCase{"checkpoint_without_starts", [](A& a, P&) { a.checkpoint_cu_starts.reset(); }, "checkpoint_cu_starts must be given"},
        BadCase{"checkpoint_buffer_without_every", [](A& a, P&) { a.checkpoint_every_n_tokens = 0; }, "state_checkpoints must be absent"},
        BadCase{"checkpoint_starts_dtype", [](A& a, P&) { a.checkpoint_cu_starts->dtype = DType::kInt64; }, "checkpoint_cu_starts must have the same dtype as cu_seqlens"},
        BadCase{"checkpoint_starts_too_far", [](A& a, P& p) { set_int(p.checkpoint_starts, 3, 9); }, "checkpoint_cu_starts must end at most at state_checkpoints.shape[0]"},
        BadCase{"checkpoint_overlaps_state", [](A& a, P&) { a.state_checkpoints->data = a.output_state->data; }, "state_checkpoints must not overlap the states"},
        BadCase{"mixed_devices", [](A& a, P&) { a.output.device = Device::cuda(0); }, "must be on the same device as q"},
        BadCase{"use_cp_value", [](A& a, P&) { a.use_cp = static_cast<gdn::UseCp>(7); }, "use_cp must be Auto, On or Off, got 7"},
        BadCase{"max_seqlen_negative", [](A& a, P&) { a.max_seqlen = -5; }, "max_seqlen must be 0 (unknown) or the longest sequence length, got -5"},
        BadCase{"use_cp_on_cpu", [](A& a, P&) { a.use_cp = gdn::UseCp::kOn; }, "use_cp must be Auto or Off for CPU tensors"},
        BadCase{"use_cp_on_too_many_sequences", [](A& a, P&) {
                  a.use_cp = gdn::UseCp::kOn;
                  a.initial_state.reset(), a.output_state.reset(), a.state_indices.reset();
                  a.checkpoint_every_n_tokens = 0, a.state_checkpoints.reset(), a.checkpoint_cu_starts.reset();
                  a.cu_seqlens = reshaped(a.cu_seqlens, {65537});  // shape only: rejected before any value is read
                }, "use_cp must be Auto or Off for more than 65535 sequences"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

// The tiny-call rule of the default inverse source: at most kTinyCallChunksPerCta chunks per
// persistent CTA, bounded by T / 64 + N chunks per head.
TEST(GdnPrefillTinyCall, RuleBoundsChunksPerCta) {
  gdn::PrefillParams p;
  p.num_state_heads = 32;
  const auto tiny = [&](int seqs, std::int64_t tokens, int sms) {
    p.num_seqs = seqs, p.total_tokens = tokens;
    return gdn::tiny_prefill_call(p, sms);
  };
  EXPECT_TRUE(tiny(1, 64, 132));     // (1 + 1) x 32 chunks on 32 CTAs
  EXPECT_TRUE(tiny(2, 128, 132));    // (2 + 2) x 32 on 64
  EXPECT_FALSE(tiny(1, 128, 132));   // (2 + 1) x 32 on 32
  EXPECT_FALSE(tiny(1, 1024, 132));  // 17 x 32 on 32
  EXPECT_TRUE(tiny(4, 256, 132));    // (4 + 4) x 32 = 256 on 128 CTAs
  EXPECT_FALSE(tiny(4, 256, 100));   // 256 on 100
  EXPECT_FALSE(tiny(8, 64, 132));    // (1 + 8) x 32 = 288 on 132
  EXPECT_FALSE(tiny(64, 65536, 132));
}

}  // namespace
}  // namespace fastinfer::testing
