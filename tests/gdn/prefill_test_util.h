#pragma once
// Random GDN prefill problems on the host for the CPU and GPU tests: inputs, gates, states in
// every form, checkpoints, and an allclose helper that reports where it failed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fastinfer/gdn_prefill.h"
#include "ref/gdn_ref.h"
#include "ref/host_tensor.h"

namespace fastinfer::testing {

enum class StateForm { kNone, kPacked, kPool };

struct PrefillCase {
  std::int64_t hq = 1, hk = 1, hv = 1;
  std::vector<std::int64_t> lengths{64};
  DType dtype = DType::kBFloat16;
  bool with_alpha = true, with_beta = true;
  double alpha_lo = 0.9, alpha_hi = 1.0;  // alpha uniform in [lo, hi]
  float scale = 0.0f;
  bool l2norm_in_kernel = false;  // false: q and k are L2-normalised on the host
  StateForm state = StateForm::kNone;
  DType state_dtype = DType::kFloat32;
  bool write_state = true;
  bool offsets_int64 = false;
  int checkpoint_every = 0;
  // Off by default so the prefill suites test the chunked kernel itself; the CP suites set On.
  gdn::UseCp use_cp = gdn::UseCp::kOff;
  std::int64_t max_seqlen = 0;  // the host-side hint (0 = unknown)

  std::int64_t hsab() const { return std::max(hq, hv); }
  std::int64_t tokens() const {
    std::int64_t t = 0;
    for (auto l : lengths) t += l;
    return t;
  }
  std::string name() const {
    std::string s = "H" + std::to_string(hq) + "/" + std::to_string(hk) + "/" + std::to_string(hv) + " L[";
    for (std::size_t i = 0; i < lengths.size(); ++i) s += (i ? "," : "") + std::to_string(lengths[i]);
    s += "] " + std::string(dtype == DType::kBFloat16 ? "bf16" : "fp16");
    s += with_alpha ? " alpha[" + std::to_string(alpha_lo) + "," + std::to_string(alpha_hi) + "]" : " no-alpha";
    s += with_beta ? " beta" : " no-beta";
    s += state == StateForm::kNone ? " no-state" : state == StateForm::kPacked ? " packed" : " pool";
    if (state != StateForm::kNone) s += std::string(" ") + std::string(dtype_name(state_dtype));
    if (checkpoint_every) s += " ckpt" + std::to_string(checkpoint_every);
    if (l2norm_in_kernel) s += " l2norm";
    if (scale != 0.0f) s += " scale" + std::to_string(scale);
    if (use_cp == gdn::UseCp::kOn) s += " cp";
    return s;
  }
};

struct PrefillProblem {
  PrefillCase c;
  ref::HostTensor q, k, v, cu, alpha, beta, output, initial_state, final_state, indices, checkpoints, checkpoint_starts;
  std::int64_t pool_rows = 0;

  gdn::PrefillArgs args() const {
    gdn::PrefillArgs a;
    a.q = q;
    a.k = k;
    a.v = v;
    a.cu_seqlens = cu;
    if (c.with_alpha) a.alpha = alpha.view();
    if (c.with_beta) a.beta = beta.view();
    a.scale = c.scale;
    a.use_qk_l2norm = c.l2norm_in_kernel;
    a.use_cp = c.use_cp;
    a.max_seqlen = c.max_seqlen;
    a.output = output;
    if (c.state != StateForm::kNone) {
      a.initial_state = initial_state.view();
      if (c.write_state) a.output_state = final_state.view();
      if (c.state == StateForm::kPool) a.state_indices = indices.view();
    } else if (c.write_state) {
      a.output_state = final_state.view();
    }
    if (c.checkpoint_every > 0) {
      a.checkpoint_every_n_tokens = c.checkpoint_every;
      a.state_checkpoints = checkpoints.view();
      a.checkpoint_cu_starts = checkpoint_starts.view();
    }
    return a;
  }
};

// ref::store writes float dtypes only; integer tensors are written here.
inline void set_int(ref::HostTensor& t, std::int64_t i, std::int64_t value) {
  if (t.view().dtype == DType::kInt64) static_cast<std::int64_t*>(t.data())[i] = value;
  else static_cast<std::int32_t*>(t.data())[i] = static_cast<std::int32_t>(value);
}

inline void normalise_rows(ref::HostTensor& x) {
  const std::int64_t rows = x.numel() / gdn::kHeadDim;
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int d = 0; d < gdn::kHeadDim; ++d) sum += x.get(r * gdn::kHeadDim + d) * x.get(r * gdn::kHeadDim + d);
    const double inv = 1.0 / std::sqrt(sum + 1e-12);
    for (int d = 0; d < gdn::kHeadDim; ++d) x.set(r * gdn::kHeadDim + d, x.get(r * gdn::kHeadDim + d) * inv);
  }
}

inline PrefillProblem make_problem(const PrefillCase& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  PrefillProblem p;
  p.c = c;
  const std::int64_t T = c.tokens(), N = static_cast<std::int64_t>(c.lengths.size()), H = c.hsab(), D = gdn::kHeadDim;
  p.q = ref::HostTensor(c.dtype, {T, c.hq, D});
  p.k = ref::HostTensor(c.dtype, {T, c.hk, D});
  p.v = ref::HostTensor(c.dtype, {T, c.hv, D});
  p.q.fill_uniform(rng, -1.0, 1.0);
  p.k.fill_uniform(rng, -1.0, 1.0);
  p.v.fill_uniform(rng, -1.0, 1.0);
  if (!c.l2norm_in_kernel) {  // as FlashInfer's tests: q and k L2-normalised
    normalise_rows(p.q);
    normalise_rows(p.k);
  }
  const DType offset_type = c.offsets_int64 ? DType::kInt64 : DType::kInt32;
  p.cu = ref::HostTensor(offset_type, {N + 1});
  std::int64_t acc = 0;
  set_int(p.cu, 0, 0);
  for (std::int64_t n = 0; n < N; ++n) set_int(p.cu, n + 1, acc += c.lengths[n]);
  p.alpha = ref::HostTensor(DType::kFloat32, {T, H});
  p.alpha.fill_uniform(rng, c.alpha_lo, c.alpha_hi);
  p.beta = ref::HostTensor(DType::kFloat32, {T, H});
  p.beta.fill_uniform(rng, 0.05, 1.0);
  p.output = ref::HostTensor(c.dtype, {T, H, D});
  p.output.fill(NAN);
  p.pool_rows = c.state == StateForm::kPool ? N + 3 : N;
  p.initial_state = ref::HostTensor(c.state_dtype, {p.pool_rows, H, D, D});
  p.initial_state.fill_uniform(rng, -0.5, 0.5);
  p.final_state = ref::HostTensor(c.state_dtype, {p.pool_rows, H, D, D});
  p.final_state.fill(NAN);
  p.indices = ref::HostTensor(DType::kInt32, {N});
  for (std::int64_t n = 0; n < N; ++n) set_int(p.indices, n, p.pool_rows - 1 - n);  // distinct slots, reversed
  if (c.checkpoint_every > 0) {
    p.checkpoint_starts = ref::HostTensor(offset_type, {N + 1});
    std::int64_t rows = 0;
    set_int(p.checkpoint_starts, 0, 0);
    for (std::int64_t n = 0; n < N; ++n)
      set_int(p.checkpoint_starts, n + 1, rows += gdn::checkpoint_count(c.lengths[n], c.checkpoint_every));
    p.checkpoints = ref::HostTensor(c.state_dtype, {std::max<std::int64_t>(rows, 1), H, D, D});
    p.checkpoints.fill(NAN);
  }
  return p;
}

struct Closeness {
  bool ok = true;
  double max_abs = 0, rel_l2 = 0;
  double worst = 0;  // max |got - want| / (atol + rtol |want|): <= 1 passes, the margin is 1 - worst
  std::string first_failure;
};

// |got - want| <= atol + rtol |want| everywhere; elements with skip(i) true are ignored, and
// elements NaN in both (poison left unwritten by both) agree.
template <class Skip>
Closeness allclose(const ref::HostTensor& got, const ref::HostTensor& want, double atol, double rtol, Skip skip) {
  Closeness r;
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    if (skip(i)) continue;
    const double g = got.get(i), w = want.get(i), d = std::fabs(g - w);
    if (std::isnan(w) && std::isnan(g)) continue;  // both unwritten (poison): the same
    num += (g - w) * (g - w);
    den += w * w;
    if (!(d <= atol + rtol * std::fabs(w))) {  // NaN fails
      if (r.ok) r.first_failure = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
      r.ok = false;
    }
    if (!(d <= r.max_abs)) r.max_abs = d;
    if (!(d / (atol + rtol * std::fabs(w)) <= r.worst)) r.worst = d / (atol + rtol * std::fabs(w));
  }
  r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return r;
}

inline Closeness allclose(const ref::HostTensor& got, const ref::HostTensor& want, double atol, double rtol) {
  return allclose(got, want, atol, rtol, [](std::int64_t) { return false; });
}

}  // namespace fastinfer::testing
