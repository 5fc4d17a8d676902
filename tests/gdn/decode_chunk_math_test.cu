// CPU replay of the chunked (WY) decode math (src/gdn/kernels/decode_chunk_math.cuh) against the
// fp64 sequential reference: the same coefficient and row-solve functions the tensor-core kernel
// runs, with the kernel's numerics (fp32, q/k split into bf16 hi + lo for the state products).
// Runs without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "decode_problem.h"
#include "gdn/kernels/decode_chunk_math.cuh"
#include "ref/gdn_decode_ref.h"
#include "ref/numeric.h"

namespace fastinfer {
namespace {

using testing::DecodeProblem;
using testing::DecodeShape;
using testing::make_decode_problem;
constexpr int D = 128;
constexpr int kTokens = 8;

float bf16_round(float x) { return ref::bf16_to_float(ref::float_to_bf16(x)); }

struct Emulated {
  std::vector<float> out;    // [B, T, HV, D], unscaled times scale
  std::vector<float> state;  // [B, HV, D, D]: the final state of each sequence (unrounded)
};

// The chunked kernel's arithmetic for every (sequence, head) of `p` (no padding).
Emulated emulate_chunked(const DecodeProblem& p) {
  const int B = p.shape.batch, T = p.shape.tokens, H = p.shape.heads_qk, HV = p.shape.heads_v;
  const float scale = p.scale != 0.0f ? p.scale : 1.0f / std::sqrt(float(D));
  Emulated e{std::vector<float>(std::size_t(B) * T * HV * D), std::vector<float>(std::size_t(B) * HV * D * D)};
  for (int i = 0; i < B; ++i)
    for (int h = 0; h < HV; ++h) {
      const int hq = h / (HV / H);
      std::vector<std::vector<float>> q(T, std::vector<float>(D)), k(T, std::vector<float>(D));
      float alpha[kTokens] = {}, beta[kTokens] = {};
      for (int t = 0; t < T; ++t) {
        float qq = 0, kk = 0;
        for (int c = 0; c < D; ++c) {
          q[t][c] = float(p.q.get(((std::int64_t(i) * T + t) * H + hq) * D + c));
          k[t][c] = float(p.k.get(((std::int64_t(i) * T + t) * H + hq) * D + c));
          qq += q[t][c] * q[t][c];
          kk += k[t][c] * k[t][c];
        }
        const float qs = p.use_qk_l2norm ? 1.0f / std::sqrt(qq + 1e-6f) : 1.0f;
        const float ks = p.use_qk_l2norm ? 1.0f / std::sqrt(kk + 1e-6f) : 1.0f;
        for (int c = 0; c < D; ++c) q[t][c] *= qs, k[t][c] *= ks;
        const float x = float(p.a.get((std::int64_t(i) * T + t) * HV + h)) + float(p.dt_bias.get(h));
        const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
        alpha[t] = std::exp(-std::exp(float(p.A_log.get(h))) * softplus);
        beta[t] = 1.0f / (1.0f + std::exp(-float(p.b.get((std::int64_t(i) * T + t) * HV + h))));
      }
      gdn::decode_sm90::ChunkCoefficients<kTokens> coef{};
      for (int t = 0; t < T; ++t) {
        float kk_dot[kTokens] = {}, kq_dot[kTokens] = {};
        for (int s = 0; s <= t; ++s)
          for (int c = 0; c < D; ++c) kk_dot[s] += k[s][c] * k[t][c], kq_dot[s] += k[s][c] * q[t][c];
        gdn::decode_sm90::chunk_coefficient_row<kTokens>(t, T, alpha, beta[t], kk_dot, kq_dot, coef);
      }
      // The tensor-core operands: k and q as bf16 hi + lo.
      auto hi = [](float x) { return bf16_round(x); };
      auto lo = [&](float x) { return bf16_round(x - hi(x)); };
      const std::int64_t slot = p.slot_in(i);
      for (int r = 0; r < D; ++r) {
        const auto H0 = [&](int c) { return float(p.state.get(((slot * HV + h) * D + r) * D + c)); };
        float hk[kTokens] = {}, hq[kTokens] = {}, v[kTokens] = {}, u[kTokens], o[kTokens];
        for (int t = 0; t < T; ++t) {
          for (int c = 0; c < D; ++c) {
            hk[t] += H0(c) * hi(k[t][c]) + H0(c) * lo(k[t][c]);
            hq[t] += H0(c) * hi(q[t][c]) + H0(c) * lo(q[t][c]);
          }
          v[t] = float(p.v.get(((std::int64_t(i) * T + t) * HV + h) * D + r));
        }
        gdn::decode_sm90::chunk_row_solve<kTokens>(coef, T, hk, hq, v, u, o);
        for (int t = 0; t < T; ++t) e.out[((std::int64_t(i) * T + t) * HV + h) * D + r] = scale * o[t];
        for (int c = 0; c < D; ++c) {
          float x = coef.decay_from_start[T - 1] * H0(c);
          for (int s = 0; s < T; ++s) x += coef.decay_to_end[s] * u[s] * k[s][c];
          e.state[((std::int64_t(i) * HV + h) * D + r) * D + c] = x;
        }
      }
    }
  return e;
}

// |x - ref| <= atol + rtol |ref| (FlashInfer's bf16 decode tolerances) for every element.
void expect_close(const char* what, const std::vector<float>& x, const ref::HostTensor& ref_values, std::int64_t ref_offset) {
  int bad = 0;
  double worst = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double r = ref_values.get(ref_offset + std::int64_t(j));
    const double err = std::fabs(x[j] - r) / (0.016 + 5e-3 * std::fabs(r));
    worst = std::max(worst, err);
    bad += !(err <= 1.0);
  }
  EXPECT_EQ(bad, 0) << what << ": worst err/tol " << worst;
}

void check(const DecodeShape& shape, std::uint64_t seed, void (*tweak)(DecodeProblem&) = nullptr) {
  DecodeProblem p = make_decode_problem(shape, seed);
  if (tweak) tweak(p);
  const Emulated e = emulate_chunked(p);
  ref::gdn_decode(p.args());
  expect_close("outputs", e.out, p.output, 0);
  // Final states: slot_out(i) of each sequence, compared sequence by sequence.
  const std::int64_t per_seq = std::int64_t(shape.heads_v) * D * D;
  for (int i = 0; i < shape.batch; ++i) {
    std::vector<float> mine(e.state.begin() + i * per_seq, e.state.begin() + (i + 1) * per_seq);
    expect_close("final state", mine, p.state, std::int64_t(p.slot_out(i)) * per_seq);
  }
}

TEST(GdnDecodeChunkMath, MatchesSequentialReference) {
  for (int T : {1, 2, 3, 4, 5, 8}) {
    SCOPED_TRACE(T);
    DecodeShape s;
    s.batch = 2; s.tokens = T; s.heads_qk = 1; s.heads_v = 2;
    s.state = DType::kBFloat16;
    s.spare_slots = 0;
    check(s, 100 + T);
  }
}

TEST(GdnDecodeChunkMath, StrongAndWeakGates) {
  // alpha underflows to 0 (cumulative decays 0/0 if formed as ratios), beta near 0 and 1.
  DecodeShape s;
  s.batch = 2; s.tokens = 8; s.heads_qk = 2; s.heads_v = 2;
  s.state = DType::kBFloat16;
  check(s, 7, [](DecodeProblem& p) {
    p.A_log.fill(5.0);
    for (std::int64_t j = 0; j < p.a.numel(); ++j) p.a.set(j, j % 3 == 0 ? 30.0 : -30.0);
    for (std::int64_t j = 0; j < p.b.numel(); ++j) p.b.set(j, j % 2 == 0 ? 12.0 : -12.0);
  });
}

TEST(GdnDecodeChunkMath, WithoutNormalisationFp32Pool) {
  DecodeShape s;
  s.batch = 1; s.tokens = 4; s.heads_qk = 1; s.heads_v = 1;
  check(s, 11, [](DecodeProblem& p) {
    p.use_qk_l2norm = false;
    for (std::int64_t j = 0; j < p.q.numel(); ++j) p.q.set(j, p.q.get(j) * 0.1);
    for (std::int64_t j = 0; j < p.k.numel(); ++j) p.k.set(j, p.k.get(j) * 0.1);
  });
}

}  // namespace
}  // namespace fastinfer
