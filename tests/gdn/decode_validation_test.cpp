// Every gdn::decode validation error: the message names the op and the argument, the error kind
// is right, and the rejected call wrote nothing (output and pool stay bit-identical).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "decode_problem.h"
#include "fastinfer/error.h"
#include "fastinfer/gdn.h"

namespace fastinfer {
namespace {

using testing::DecodeProblem;
using testing::DecodeShape;
using testing::make_decode_problem;
constexpr int D = 128;

struct Case {
  const char* name;
  std::function<void(gdn::DecodeArgs&, DecodeProblem&)> mutate;
  std::string expected;  // a substring of the message
  Error::Kind kind = Error::Kind::kValue;
};

class GdnDecodeValidation : public ::testing::TestWithParam<Case> {};

TEST_P(GdnDecodeValidation, RejectsWithClearMessageAndWritesNothing) {
  const Case& c = GetParam();
  DecodeShape s;
  s.batch = 3; s.tokens = 2; s.heads_qk = 2; s.heads_v = 4;
  s.out_of_place = true; s.with_intermediate = true;
  DecodeProblem p = make_decode_problem(s, 42);
  gdn::DecodeArgs args = p.args();
  c.mutate(args, p);
  const DecodeProblem before = p;
  try {
    gdn::decode(args);
    FAIL() << "no error for " << c.name;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("gdn::decode: ", 0), 0u) << what;
    EXPECT_NE(what.find(c.expected), std::string::npos) << "message: " << what << "\nexpected to contain: " << c.expected;
    EXPECT_EQ(e.kind(), c.kind) << what;
  }
  EXPECT_EQ(std::memcmp(p.output.data(), before.output.data(), p.output.nbytes()), 0) << "output written";
  EXPECT_EQ(std::memcmp(p.state.data(), before.state.data(), p.state.nbytes()), 0) << "state written";
  EXPECT_EQ(std::memcmp(p.intermediate.data(), before.intermediate.data(), p.intermediate.nbytes()), 0);
}

using A = gdn::DecodeArgs;
using P = DecodeProblem;
const Error::Kind kType = Error::Kind::kType;

std::vector<Case> cases() {
  return {
      {"q_dtype", [](A& a, P&) { a.q.dtype = DType::kFloat32; }, "q must be bfloat16 or float16, got float32", kType},
      {"q_ndim", [](A& a, P&) { a.q.ndim = 3; }, "q must have 4 dimensions, got 3"},
      {"q_head_dim", [](A& a, P&) { a.q.shape[3] = 64; }, "q.shape[3] (head dim) must be 128, got 64"},
      {"q_last_stride", [](A& a, P&) { a.q.strides[3] = 2; }, "q must have a contiguous last dimension"},
      {"q_row_stride", [](A& a, P&) { a.q.strides[2] = 132; a.q.shape[2] = 2; }, "q must have strides that are multiples of 8"},
      {"q_misaligned", [](A& a, P&) { a.q.data = static_cast<char*>(a.q.data) + 2; }, "q must be 16-byte aligned"},
      {"q_null", [](A& a, P&) { a.q.data = nullptr; }, "q must point to memory"},
      {"k_dtype", [](A& a, P&) { a.k.dtype = DType::kFloat16; }, "k must have the same dtype as q (bfloat16), got float16", kType},
      {"k_tokens", [](A& a, P&) { a.k.shape[1] = 1; }, "k.shape[1] (tokens) must be 2, got 1"},
      {"v_dtype", [](A& a, P&) { a.v.dtype = DType::kFloat16; }, "v must have the same dtype as q", kType},
      {"v_batch", [](A& a, P&) { a.v.shape[0] = 2; }, "v.shape[0] (batch) must be 3, got 2"},
      {"v_heads_not_multiple", [](A& a, P&) { a.v.shape[2] = 3; }, "v.shape[2] (value heads) must be a multiple of the q/k heads (2), got 3"},
      {"v_fewer_heads", [](A& a, P&) { a.v.shape[2] = 1; }, "v.shape[2] (value heads) must be a multiple of the q/k heads (2), got 1"},
      {"A_log_dtype", [](A& a, P&) { a.A_log.dtype = DType::kFloat16; }, "A_log must be float32 or bfloat16, got float16", kType},
      {"A_log_shape", [](A& a, P&) { a.A_log.shape[0] = 2; }, "A_log.shape[0] (value heads) must be 4, got 2"},
      {"dt_bias_dtype", [](A& a, P&) { a.dt_bias.dtype = DType::kInt32; }, "dt_bias must be float32 or bfloat16, got int32", kType},
      {"dt_bias_ndim", [](A& a, P&) { a.dt_bias.ndim = 2; a.dt_bias.shape[1] = 1; a.dt_bias.strides[1] = 1; }, "dt_bias must have 1 dimensions, got 2"},
      {"a_shape", [](A& a, P&) { a.a.shape[2] = 2; }, "a.shape[2] (value heads) must be 4, got 2"},
      {"a_dtype", [](A& a, P&) { a.a.dtype = DType::kFloat64; }, "a must be float32 or bfloat16, got float64", kType},
      {"b_shape", [](A& a, P&) { a.b.shape[1] = 3; }, "b.shape[1] (tokens) must be 2, got 3"},
      {"b_null", [](A& a, P&) { a.b.data = nullptr; }, "b must point to memory"},
      {"state_dtype", [](A& a, P&) { a.state.dtype = DType::kFloat16; }, "state must be float32 or bfloat16, got float16", kType},
      {"state_heads", [](A& a, P&) { a.state.shape[1] = 2; }, "state.shape[1] (value heads) must be 4, got 2"},
      {"state_k", [](A& a, P&) { a.state.shape[3] = 64; }, "state.shape[3] (K) must be 128, got 64"},
      {"state_not_contiguous", [](A& a, P&) { a.state.strides[0] *= 2; a.state.shape[0] /= 2; }, "state must be contiguous"},
      {"indices_dtype", [](A& a, P&) { a.initial_state_indices.dtype = DType::kInt64; }, "initial_state_indices must be int32, got int64", kType},
      {"indices_shape", [](A& a, P&) { a.initial_state_indices.shape[0] = 2; }, "initial_state_indices.shape[0] (batch) must be 3, got 2"},
      {"output_indices_shape", [](A& a, P&) { a.output_state_indices->shape[0] = 4; }, "output_state_indices.shape[0] (batch) must be 3, got 4"},
      {"output_dtype", [](A& a, P&) { a.output.dtype = DType::kFloat16; }, "output must have the same dtype as q", kType},
      {"output_heads", [](A& a, P&) { a.output.shape[2] = 2; }, "output.shape[2] (value heads) must be 4, got 2"},
      {"intermediate_tokens", [](A& a, P&) { a.intermediate_states->shape[1] = 1; }, "intermediate_states.shape[1] (tokens) must be 2, got 1"},
      {"intermediate_dtype", [](A& a, P&) { a.intermediate_states->dtype = DType::kFloat16; }, "intermediate_states must be float32 or bfloat16, got float16", kType},
      {"scale_nan", [](A& a, P&) { a.scale = NAN; }, "scale must be finite"},
      {"mixed_devices", [](A& a, P&) { a.b.device = Device::cuda(0); }, "b must be on the same device as q (cpu), got cuda:0"},
      {"slot_out_of_range", [](A& a, P& p) { testing::set_index(p.initial_indices, 1, 1000); }, "initial_state_indices must hold slots in [-1, 9), got 1000 at position 1"},
      {"slot_below_minus_one", [](A& a, P& p) { testing::set_index(p.output_indices, 2, -2); }, "output_state_indices must hold slots in [-1, 9), got -2 at position 2"},
      {"duplicate_output_slot", [](A& a, P& p) { testing::set_index(p.output_indices, 2, static_cast<int>(p.output_indices.get(0))); },
       "output_state_indices must name distinct slots for the sequences it writes, got slot"},
      {"writes_slot_another_reads", [](A& a, P& p) { testing::set_index(p.output_indices, 0, static_cast<int>(p.initial_indices.get(1))); },
       "written by sequence 0 and read by sequence 1"},
  };
}

INSTANTIATE_TEST_SUITE_P(AllErrors, GdnDecodeValidation, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(GdnDecodeValidationExtra, DisabledUpdateAllowsSharedOutputSlots) {
  // Nothing is written with disable_state_update, so output slots may repeat.
  DecodeShape s;
  s.batch = 2; s.out_of_place = true;
  DecodeProblem p = make_decode_problem(s, 43);
  testing::set_index(p.output_indices, 1, static_cast<int>(p.output_indices.get(0)));
  p.disable_state_update = true;
  EXPECT_NO_THROW(gdn::decode(p.args()));
}

TEST(GdnDecodeValidationExtra, GateDtypesFollowTheActivationDtype) {
  // float16 activations accept float16 gates; bfloat16 gates are then rejected.
  DecodeShape s;
  s.act = DType::kFloat16; s.gate = DType::kFloat16; s.head_gate = DType::kFloat16;
  DecodeProblem p = make_decode_problem(s, 44);
  EXPECT_NO_THROW(gdn::decode(p.args()));
  gdn::DecodeArgs args = p.args();
  args.b.dtype = DType::kBFloat16;
  try {
    gdn::decode(args);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "gdn::decode: b must be float32 or float16, got bfloat16");
  }
}

}  // namespace
}  // namespace fastinfer
