#pragma once
// The chunked (WY) form of T decode tokens on one state, used by the tensor-core decode kernel
// (decode_chunked_sm90.cuh) and replayed on the CPU by tests/gdn/decode_chunk_math_test.cu.
//
// With P(t, s) = alpha_{s+1} ... alpha_t (P(t, t) = 1, P(t, -1) the decay since the call began),
// the sequential recurrence H_t = alpha_t H_{t-1} + u_t k_t^T, u_t = beta_t (v_t - alpha_t H_{t-1} k_t)
// unrolls to
//   u_t = beta_t (v_t - P(t,-1) H0 k_t - sum_{s<t} P(t,s) (k_s.k_t) u_s)      (per row: a T x T
//   o_t = scale (P(t,-1) H0 q_t + sum_{s<=t} P(t,s) (k_s.q_t) u_s)             triangular solve)
//   H_T = P(T-1,-1) H0 + sum_s P(T-1,s) u_s k_s^T
// so the only products with the state are H0 [k_0..k_{T-1} q_0..q_{T-1}] (one tensor-core product
// for all tokens) and the rank-T update. The decays are products of alphas (never a ratio of
// cumulative products, which underflow to 0/0 for strong gates).
#if defined(__CUDACC__)
#define FASTINFER_DECODE_HD __host__ __device__ __forceinline__
#else
#define FASTINFER_DECODE_HD inline
#endif

namespace fastinfer::gdn::decode_sm90 {

// The per-tile coefficients, uniform over the state rows (kTokens: the most tokens of a window).
template <int kTokens>
struct ChunkCoefficients {
  float decay_from_start[kTokens];  // P(t, -1)
  float decay_to_end[kTokens];      // P(T-1, s); 0 for s >= T
  float beta[kTokens];
  float kk[kTokens][kTokens];       // P(t, s) (k_s . k_t) for s < t, else 0
  float kq[kTokens][kTokens];       // P(t, s) (k_s . q_t) for s <= t, else 0
};

// Row t of the coefficients from the gates and the dot products kk_dot[s] = k_s . k_t and
// kq_dot[s] = k_s . q_t (s <= t). The thread of the last token (t == tokens - 1) also writes
// decay_to_end.
template <int kTokens>
FASTINFER_DECODE_HD void chunk_coefficient_row(int t, int tokens, const float* alpha, float beta, const float* kk_dot,
                                               const float* kq_dot, ChunkCoefficients<kTokens>& c) {
  float decay = 1.0f;  // P(t, s), s going down from t
#pragma unroll
  for (int s = kTokens - 1; s >= 0; --s) {
    const bool on = s <= t;
    c.kk[t][s] = on && s < t ? decay * kk_dot[s] : 0.0f;
    c.kq[t][s] = on ? decay * kq_dot[s] : 0.0f;
    if (t == tokens - 1) c.decay_to_end[s] = on ? decay : 0.0f;
    if (on) decay *= alpha[s];
  }
  c.decay_from_start[t] = decay;
  c.beta[t] = beta;
}

// One state row: from hk[t] = H0[row] . k_t, hq[t] = H0[row] . q_t and v[t] (the row's v entry),
// u[t] (the rank-T update's coefficients, 0 for t >= tokens) and o[t] = H_t[row] . q_t (unscaled).
template <int kTokens>
FASTINFER_DECODE_HD void chunk_row_solve(const ChunkCoefficients<kTokens>& c, int tokens, const float* hk, const float* hq,
                                         const float* v, float* u, float* o) {
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    float x = v[t] - c.decay_from_start[t] * hk[t];
    float y = c.decay_from_start[t] * hq[t];
#pragma unroll
    for (int s = 0; s < t; ++s) {
      x -= c.kk[t][s] * u[s];
      y += c.kq[t][s] * u[s];
    }
    u[t] = t < tokens ? c.beta[t] * x : 0.0f;
    o[t] = y + c.kq[t][t] * u[t];
  }
}

}  // namespace fastinfer::gdn::decode_sm90
