#pragma once
// A random GDN problem on the host and the token-serial fp64 recurrence that records the state
// entering every CP chunk: shared by the CP CPU and GPU tests.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "fastinfer/gdn_prefill.h"
#include "ref/host_tensor.h"

namespace fastinfer::cp_test {

using ref::HostTensor;
inline constexpr int D = 128;

// A random problem on the host: bf16 q/k/v, fp32 gates in [alpha_lo, alpha_hi], beta in (0, 1).
struct Problem {
  std::vector<std::int64_t> lengths;
  std::int64_t hk = 1, hv = 1, hq = 1, hsab = 1;
  HostTensor q, k, v, alpha, beta, cu, state, indices;
  gdn::PrefillArgs args;

  Problem(std::vector<std::int64_t> lens, std::int64_t hq_, std::int64_t hk_, std::int64_t hv_, double alpha_lo,
          double alpha_hi, std::uint64_t seed, DType input = DType::kBFloat16)
      : lengths(std::move(lens)), hk(hk_), hv(hv_), hq(hq_), hsab(std::max(hq_, hv_)) {
    std::mt19937_64 rng(seed);
    std::int64_t total = 0;
    for (auto l : lengths) total += l;
    const std::int64_t n = static_cast<std::int64_t>(lengths.size());
    q = HostTensor(input, {total, hq, D});
    k = HostTensor(input, {total, hk, D});
    v = HostTensor(input, {total, hv, D});
    alpha = HostTensor(DType::kFloat32, {total, hsab});
    beta = HostTensor(DType::kFloat32, {total, hsab});
    cu = HostTensor(DType::kInt32, {n + 1});
    q.fill_uniform(rng, -1, 1);
    k.fill_uniform(rng, -1, 1);
    v.fill_uniform(rng, -1, 1);
    alpha.fill_uniform(rng, alpha_lo, alpha_hi);
    beta.fill_uniform(rng, 0.05, 1.0);
    std::int64_t off = 0;
    for (std::int64_t i = 0; i <= n; ++i) {
      static_cast<std::int32_t*>(cu.data())[i] = static_cast<std::int32_t>(off);  // ref::store writes floats only
      if (i < n) off += lengths[i];
    }
    args.q = q;
    args.k = k;
    args.v = v;
    args.cu_seqlens = cu;
    args.alpha = alpha.view();
    args.beta = beta.view();
    args.use_qk_l2norm = true;
    
  }

  void packed_initial_state(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    state = HostTensor(DType::kFloat32, {static_cast<std::int64_t>(lengths.size()), hsab, D, D});
    state.fill_uniform(rng, -0.5, 0.5);
    args.initial_state = state.view();
  }

  // Pool of lengths.size() + 2 slots; sequence i uses slot (i * 3 + 1) % pool, the first one -1.
  void pool_initial_state(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const std::int64_t n = static_cast<std::int64_t>(lengths.size()), pool = n + 2;
    state = HostTensor(DType::kBFloat16, {pool, hsab, D, D});
    state.fill_uniform(rng, -0.5, 0.5);
    indices = HostTensor(DType::kInt32, {n});
    for (std::int64_t i = 0; i < n; ++i) static_cast<std::int32_t*>(indices.data())[i] = i == 0 ? -1 : static_cast<std::int32_t>((i * 3 + 1) % pool);
    args.initial_state = state.view();
    args.state_indices = indices.view();
  }
};

// One token of the fp64 recurrence for state head h: H <- alpha H (I - beta k k^T) + beta v k^T.
inline void serial_step(const Problem& p, std::int64_t tok, std::int64_t h, std::vector<double>& H) {
  const auto& a = p.args;
  double k[D], v[D], sum = 0;
  for (int d = 0; d < D; ++d) {
    k[d] = ref::load(a.k, ref::offset_of(a.k, tok, h * p.hk / p.hsab, d));
    v[d] = ref::load(a.v, ref::offset_of(a.v, tok, h * p.hv / p.hsab, d));
    sum += k[d] * k[d];
  }
  if (a.use_qk_l2norm)
    for (double& x : k) x /= std::sqrt(sum + 1e-6);
  const double al = ref::load(*a.alpha, ref::offset_of(*a.alpha, tok, h));
  const double be = ref::load(*a.beta, ref::offset_of(*a.beta, tok, h));
  for (int i = 0; i < D; ++i) {
    double pred = 0;
    for (int j = 0; j < D; ++j) pred += H[i * D + j] * k[j];
    const double u = be * (v[i] - al * pred);
    for (int j = 0; j < D; ++j) H[i * D + j] = al * H[i * D + j] + u * k[j];
  }
}

// Token-serial fp64 recurrence; records the state entering every chunk and the final state.
inline void serial_states(const Problem& p, std::int64_t chunk_len, std::int64_t cps, std::vector<double>& chunk_states,
                   std::vector<double>& final_states) {
  const auto& a = p.args;
  const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size());
  chunk_states.assign(static_cast<std::size_t>(n_seqs * cps * p.hsab * D * D), 0.0);
  final_states.assign(static_cast<std::size_t>(n_seqs * p.hsab * D * D), 0.0);
  std::int64_t bos = 0;
  std::vector<double> H(D * D);
  for (std::int64_t n = 0; n < n_seqs; ++n) {
    const std::int64_t len = p.lengths[n];
    std::int64_t slot = n;
    if (a.state_indices) slot = static_cast<std::int64_t>(ref::load(*a.state_indices, n));
    for (std::int64_t h = 0; h < p.hsab; ++h) {
      for (int i = 0; i < D * D; ++i)
        H[i] = (a.initial_state && slot >= 0) ? ref::load(*a.initial_state, ref::offset_of(*a.initial_state, slot, h, i / D, i % D)) : 0.0;
      for (std::int64_t t = 0; t < len; ++t) {
        if (t % chunk_len == 0)
          std::copy(H.begin(), H.end(), chunk_states.begin() + ((n * cps + t / chunk_len) * p.hsab + h) * D * D);
        serial_step(p, bos + t, h, H);
      }
      if (len > 0) std::copy(H.begin(), H.end(), final_states.begin() + (n * p.hsab + h) * D * D);
    }
    bos += len;
  }
}

inline double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace fastinfer::cp_test
