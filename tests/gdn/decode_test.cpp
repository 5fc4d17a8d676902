// gdn::decode on the CPU: the semantics of the fp64 reference (delta-rule retrieval, gating,
// MTP chaining, padding, slots, GVA mapping, normalisation) and every validation error, with the
// check that a rejected call writes nothing.
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

double max_abs_diff(const ref::HostTensor& x, const ref::HostTensor& y) {
  double m = 0.0;
  for (std::int64_t i = 0; i < x.numel(); ++i) m = std::max(m, std::fabs(x.get(i) - y.get(i)));
  return m;
}

bool bit_identical(const ref::HostTensor& x, const ref::HostTensor& y) {
  return x.nbytes() == y.nbytes() && std::memcmp(x.data(), y.data(), x.nbytes()) == 0;
}

double state_at(const DecodeProblem& p, int slot, int h, int r, int c) {
  const std::int64_t HV = p.shape.heads_v;
  return p.state.get(((slot * HV + h) * D + r) * D + c);
}

// --- semantics -----------------------------------------------------------------------------------

TEST(GdnDecodeRef, DeltaRuleRetrievesValueWithoutForgetting) {
  // alpha = 1 (exp(A_log) = 0), beta = 1 (b = 40), unit k: H' k = v, and with q = k, o = scale v.
  DecodeShape s;
  s.batch = 3; s.heads_qk = 2; s.heads_v = 2;
  s.act = DType::kFloat16;
  DecodeProblem p = make_decode_problem(s, 1);
  p.A_log.fill(-1e30);
  p.b.fill(40.0);
  for (std::int64_t i = 0; i < p.q.numel(); ++i) p.q.set(i, p.k.get(i));
  p.scale = 0.5f;
  gdn::decode(p.args());
  for (int i = 0; i < s.batch; ++i)
    for (int h = 0; h < s.heads_v; ++h) {
      double kk = 0;
      for (int c = 0; c < D; ++c) kk += p.k.get((i * 2 + h) * D + c) * p.k.get((i * 2 + h) * D + c);
      const double inv = 1.0 / std::sqrt(kk + 1e-6);
      for (int r = 0; r < D; ++r) {
        double hk = 0;
        for (int c = 0; c < D; ++c) hk += state_at(p, p.slot_out(i), h, r, c) * p.k.get((i * 2 + h) * D + c) * inv;
        const double v = p.v.get((i * 2 + h) * D + r);
        ASSERT_NEAR(hk, v, 1e-4) << "i=" << i << " h=" << h << " r=" << r;  // fp32 state rounding
        ASSERT_NEAR(p.output.get((i * 2 + h) * D + r), 0.5 * v, 2e-3);     // fp16 output rounding
      }
    }
}

TEST(GdnDecodeRef, GatingFormula) {
  // beta ~ 0 (b = -60): H' = alpha H, o = scale alpha H q, with
  // alpha = exp(-exp(A_log) softplus(a + dt_bias)), softplus linear above 20.
  DecodeShape s;
  s.batch = 2; s.heads_qk = 1; s.heads_v = 1; s.tokens = 1;
  DecodeProblem p = make_decode_problem(s, 2);
  const DecodeProblem before = p;
  p.b.fill(-60.0);
  p.A_log.set(0, std::log(0.5));
  p.dt_bias.set(0, 0.25);
  p.a.set(0, 0.5);   // softplus(0.75) = log1p(e^0.75)
  p.a.set(1, 30.0);  // softplus(30.25) = 30.25 (threshold)
  p.use_qk_l2norm = false;
  p.scale = 1.0f;
  gdn::decode(p.args());
  const double alpha[2] = {std::exp(-0.5 * std::log1p(std::exp(0.75))), std::exp(-0.5 * 30.25)};
  for (int i = 0; i < 2; ++i)
    for (int r = 0; r < D; r += 7) {
      double hq = 0;
      for (int c = 0; c < D; ++c) hq += state_at(before, p.slot_in(i), 0, r, c) * p.q.get(i * D + c);
      EXPECT_NEAR(state_at(p, p.slot_in(i), 0, r, 5), alpha[i] * state_at(before, p.slot_in(i), 0, r, 5),
                  1e-6 * std::fabs(state_at(before, p.slot_in(i), 0, r, 5)) + 1e-30);
      EXPECT_NEAR(p.output.get(i * D + r), alpha[i] * hq, 1e-2 * std::fabs(alpha[i] * hq) + 1e-7);
    }
}

TEST(GdnDecodeRef, MtpEqualsSequentialDecodeSteps) {
  DecodeShape s;
  s.batch = 3; s.tokens = 3; s.heads_qk = 1; s.heads_v = 2;
  s.with_intermediate = true;
  s.out_of_place = true;
  const DecodeProblem original = make_decode_problem(s, 3);
  DecodeProblem mtp = original;
  DecodeProblem steps = original;
  gdn::decode(mtp.args());

  // Token by token, in place on the copy's initial slots.
  DecodeShape one = s;
  one.tokens = 1;
  for (int t = 0; t < s.tokens; ++t) {
    DecodeProblem p = make_decode_problem(one, 99);
    auto take = [&](ref::HostTensor& dst, const ref::HostTensor& src, std::int64_t per_token, std::int64_t tokens) {
      for (std::int64_t i = 0; i < dst.numel(); ++i) {
        const std::int64_t outer = i / per_token, inner = i % per_token;
        dst.set(i, src.get((outer * tokens + t) * per_token + inner));
      }
    };
    take(p.q, steps.q, 1 * D, s.tokens);
    take(p.k, steps.k, 1 * D, s.tokens);
    take(p.v, steps.v, 2 * D, s.tokens);
    take(p.a, steps.a, 2, s.tokens);
    take(p.b, steps.b, 2, s.tokens);
    p.A_log = steps.A_log;
    p.dt_bias = steps.dt_bias;
    p.state = steps.state;
    p.shape.out_of_place = false;
    p.shape.with_intermediate = false;
    p.initial_indices = steps.initial_indices;
    gdn::decode(p.args());
    steps.state = p.state;
    for (int i = 0; i < s.batch; ++i)
      for (int h = 0; h < 2; ++h)
        for (int r = 0; r < D; ++r) {
          const double o_step = p.output.get((i * 2 + h) * D + r);
          const double o_mtp = mtp.output.get(((i * s.tokens + t) * 2 + h) * D + r);
          ASSERT_NEAR(o_step, o_mtp, 1e-2 * std::fabs(o_mtp) + 1e-6);
          for (int c = 0; c < D; c += 31) {
            const double inter = mtp.intermediate.get(((((i * s.tokens + t) * 2 + h) * D) + r) * D + c);
            ASSERT_NEAR(state_at(steps, steps.slot_in(i), h, r, c), inter, 1e-6 * std::fabs(inter) + 1e-7);
          }
        }
  }
  // The MTP call wrote the final state to the output slots and left the initial slots alone.
  for (int i = 0; i < s.batch; ++i)
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < D; r += 13)
        for (int c = 0; c < D; c += 17) {
          EXPECT_NEAR(state_at(mtp, mtp.slot_out(i), h, r, c), state_at(steps, steps.slot_in(i), h, r, c), 1e-6);
          EXPECT_EQ(state_at(mtp, mtp.slot_in(i), h, r, c), state_at(original, mtp.slot_in(i), h, r, c));
        }
}

TEST(GdnDecodeRef, DisableStateUpdateKeepsPoolButNotOutputs) {
  DecodeShape s;
  s.batch = 2; s.tokens = 2; s.with_intermediate = true;
  DecodeProblem updated = make_decode_problem(s, 4);
  DecodeProblem verify = updated;
  verify.disable_state_update = true;
  gdn::decode(updated.args());
  gdn::decode(verify.args());
  EXPECT_TRUE(bit_identical(verify.state, make_decode_problem(s, 4).state));
  EXPECT_FALSE(bit_identical(updated.state, verify.state));
  EXPECT_TRUE(bit_identical(verify.output, updated.output));
  EXPECT_TRUE(bit_identical(verify.intermediate, updated.intermediate));
}

TEST(GdnDecodeRef, PaddedSequencesOutputZeroAndTouchNothing) {
  DecodeShape s;
  s.batch = 5; s.tokens = 2; s.padded = 2; s.with_intermediate = true;
  DecodeProblem p = make_decode_problem(s, 5);
  const DecodeProblem before = p;
  gdn::decode(p.args());
  int padded = 0;
  for (int i = 0; i < s.batch; ++i) {
    const std::int64_t per_seq = std::int64_t{s.tokens} * s.heads_v * D;
    if (p.slot_in(i) >= 0) continue;
    ++padded;
    for (std::int64_t e = 0; e < per_seq; ++e) ASSERT_EQ(p.output.get(i * per_seq + e), 0.0);
    for (std::int64_t e = 0; e < per_seq * D; ++e) ASSERT_TRUE(std::isnan(p.intermediate.get(i * per_seq * D + e)));
  }
  EXPECT_EQ(padded, 2);
  // Only the slots of live sequences changed.
  const std::int64_t slot_elems = std::int64_t{s.heads_v} * D * D;
  for (std::int64_t slot = 0; slot < p.state.view().size(0); ++slot) {
    bool live = false;
    for (int i = 0; i < s.batch; ++i) live = live || p.slot_in(i) == slot;
    bool same = true;
    for (std::int64_t e = 0; e < slot_elems; ++e) same = same && p.state.get(slot * slot_elems + e) == before.state.get(slot * slot_elems + e);
    EXPECT_EQ(same, !live) << "slot " << slot;
  }
}

TEST(GdnDecodeRef, GvaUsesRepeatInterleavedQkHeads) {
  // HV = 4 with 2 q/k heads equals HV = 4 with 4 q/k heads where q/k head h copies head h / 2.
  DecodeShape gva;
  gva.batch = 2; gva.heads_qk = 2; gva.heads_v = 4;
  DecodeProblem p = make_decode_problem(gva, 6);
  DecodeShape equal = gva;
  equal.heads_qk = 4;
  DecodeProblem e = make_decode_problem(equal, 7);
  for (int i = 0; i < 2; ++i)
    for (int h = 0; h < 4; ++h)
      for (int c = 0; c < D; ++c) {
        e.q.set((i * 4 + h) * D + c, p.q.get((i * 2 + h / 2) * D + c));
        e.k.set((i * 4 + h) * D + c, p.k.get((i * 2 + h / 2) * D + c));
      }
  e.v = p.v; e.a = p.a; e.b = p.b; e.A_log = p.A_log; e.dt_bias = p.dt_bias;
  e.state = p.state; e.initial_indices = p.initial_indices;
  gdn::decode(p.args());
  gdn::decode(e.args());
  EXPECT_TRUE(bit_identical(p.output, e.output));
  EXPECT_TRUE(bit_identical(p.state, e.state));
}

TEST(GdnDecodeRef, NormalisationAndDefaultScale) {
  DecodeShape s;
  s.batch = 2; s.act = DType::kFloat16;
  DecodeProblem p = make_decode_problem(s, 8);
  DecodeProblem doubled = p, explicit_scale = p, raw = p, raw_doubled = p;
  for (std::int64_t i = 0; i < p.q.numel(); ++i) {
    doubled.q.set(i, 2 * p.q.get(i));
    raw_doubled.q.set(i, 2 * p.q.get(i));
  }
  explicit_scale.scale = static_cast<float>(1.0 / std::sqrt(128.0));
  raw.use_qk_l2norm = raw_doubled.use_qk_l2norm = false;
  for (auto* x : {&p, &doubled, &explicit_scale, &raw, &raw_doubled}) gdn::decode(x->args());
  EXPECT_LT(max_abs_diff(p.output, doubled.output), 1e-3);  // normalised q: scale-free
  EXPECT_TRUE(bit_identical(p.output, explicit_scale.output));
  double worst = 0;
  for (std::int64_t i = 0; i < raw.output.numel(); ++i)
    worst = std::max(worst, std::fabs(raw_doubled.output.get(i) - 2 * raw.output.get(i)) / (std::fabs(raw.output.get(i)) + 1e-3));
  EXPECT_LT(worst, 2e-3);  // raw q: output linear in q (fp16 rounding)
  EXPECT_GT(max_abs_diff(p.output, raw.output), 1e-2);
}

TEST(GdnDecodeRef, StridedInputsMatchContiguous) {
  // q, k, v as head slices of wider tensors, a/b transposed views: same results.
  DecodeShape s;
  s.batch = 3; s.tokens = 2; s.heads_qk = 2; s.heads_v = 2;
  DecodeProblem p = make_decode_problem(s, 9);
  DecodeProblem c = p;
  ref::HostTensor wide(DType::kBFloat16, {3, 2, 6, D});  // [q | k | v] heads
  ref::HostTensor ab(DType::kFloat32, {2, 3, 2, 2});      // [a/b][T][B][HV]
  for (int i = 0; i < 3; ++i)
    for (int t = 0; t < 2; ++t)
      for (int h = 0; h < 2; ++h) {
        for (int e = 0; e < D; ++e) {
          const std::int64_t src = ((i * 2 + t) * 2 + h) * D + e;
          wide.set((((i * 2 + t) * 6) + h) * D + e, p.q.get(src));
          wide.set((((i * 2 + t) * 6) + 2 + h) * D + e, p.k.get(src));
          wide.set((((i * 2 + t) * 6) + 4 + h) * D + e, p.v.get(src));
        }
        ab.set(((0 * 2 + t) * 3 + i) * 2 + h, p.a.get((i * 2 + t) * 2 + h));
        ab.set(((1 * 2 + t) * 3 + i) * 2 + h, p.b.get((i * 2 + t) * 2 + h));
      }
  gdn::DecodeArgs args = c.args();
  auto* base = static_cast<std::uint16_t*>(wide.data());
  args.q = TensorView::strided(base, DType::kBFloat16, {3, 2, 2, D}, {2 * 6 * D, 6 * D, D, 1});
  args.k = TensorView::strided(base + 2 * D, DType::kBFloat16, {3, 2, 2, D}, {2 * 6 * D, 6 * D, D, 1});
  args.v = TensorView::strided(base + 4 * D, DType::kBFloat16, {3, 2, 2, D}, {2 * 6 * D, 6 * D, D, 1});
  auto* g = static_cast<float*>(ab.data());
  args.a = TensorView::strided(g, DType::kFloat32, {3, 2, 2}, {2, 6, 1});
  args.b = TensorView::strided(g + 12, DType::kFloat32, {3, 2, 2}, {2, 6, 1});
  gdn::decode(p.args());
  gdn::decode(args);
  EXPECT_TRUE(bit_identical(p.output, c.output));
  EXPECT_TRUE(bit_identical(p.state, c.state));
}

TEST(GdnDecodeRef, BFloat16StateAndGatesRoundOnce) {
  // A bf16 pool and bf16 gates give the fp32-pool result rounded to bf16 (within one bf16 ulp).
  DecodeShape s;
  s.batch = 2; s.tokens = 2; s.state = DType::kBFloat16; s.gate = DType::kBFloat16; s.head_gate = DType::kBFloat16;
  DecodeProblem p = make_decode_problem(s, 10);
  DecodeShape s32 = s;
  s32.state = DType::kFloat32; s32.gate = DType::kFloat32; s32.head_gate = DType::kFloat32;
  DecodeProblem f = make_decode_problem(s32, 10);
  for (std::int64_t i = 0; i < p.state.numel(); ++i) f.state.set(i, p.state.get(i));
  for (std::int64_t i = 0; i < p.a.numel(); ++i) { f.a.set(i, p.a.get(i)); f.b.set(i, p.b.get(i)); }
  for (std::int64_t i = 0; i < p.A_log.numel(); ++i) { f.A_log.set(i, p.A_log.get(i)); f.dt_bias.set(i, p.dt_bias.get(i)); }
  gdn::decode(p.args());
  gdn::decode(f.args());
  EXPECT_TRUE(bit_identical(p.output, f.output));
  for (std::int64_t i = 0; i < p.state.numel(); ++i)
    ASSERT_EQ(p.state.get(i), ref::bf16_to_float(ref::float_to_bf16(static_cast<float>(f.state.get(i))))) << i;
}

TEST(GdnDecodeRef, EmptyBatchIsANoOp) {
  DecodeShape s;
  s.batch = 0;
  DecodeProblem p = make_decode_problem(s, 11);
  const DecodeProblem before = p;
  EXPECT_NO_THROW(gdn::decode(p.args()));
  EXPECT_TRUE(bit_identical(p.state, before.state));
}

}  // namespace
}  // namespace fastinfer
