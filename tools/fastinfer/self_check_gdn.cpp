// `fastinfer check` cases for GDN prefill and decode (see self_check.h).
#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "device_copy.h"
#include "fastinfer/gdn.h"
#include "ref/gdn_decode_ref.h"
#include "ref/gdn_ref.h"
#include "self_check.h"

namespace fastinfer::cli {
namespace {

using ref::HostTensor;
constexpr std::int64_t D = 128;

// A prefill problem with random inputs, gates in [0.9, 1) and a random initial state.
struct PrefillCase {
  DType act = DType::kBFloat16;
  DType state = DType::kFloat32;
  std::int64_t hq = 2, hv = 4;
  std::vector<std::int64_t> lengths;
  std::vector<std::int32_t> slots;  // empty: packed states; else a pool used in place
  int checkpoint_every = 0;
  gdn::UseCp use_cp = gdn::UseCp::kOff;
};

struct PrefillProblem {
  HostTensor q, k, v, cu, alpha, beta, output, state_in, state_out, slots, checkpoints, checkpoint_starts;
  PrefillCase c;

  PrefillProblem(const PrefillCase& pc, std::uint64_t seed) : c(pc) {
    // GVA (Hq == Hk, Hv = r Hq) or GQA (Hk == Hv, Hq = r Hk): k has the smaller head count.
    const std::int64_t n = static_cast<std::int64_t>(c.lengths.size()), hk = std::min(c.hq, c.hv);
    const std::int64_t hsab = std::max(c.hq, c.hv);
    std::int64_t t = 0, rows = 0;
    for (auto l : c.lengths) t += l, rows += gdn::checkpoint_count(l, c.checkpoint_every);
    q = HostTensor(c.act, {t, c.hq, D}), k = HostTensor(c.act, {t, hk, D}), v = HostTensor(c.act, {t, c.hv, D});
    cu = HostTensor(DType::kInt32, {n + 1});
    alpha = HostTensor(DType::kFloat32, {t, hsab}), beta = HostTensor(DType::kFloat32, {t, hsab});
    output = HostTensor(c.act, {t, hsab, D});
    const std::int64_t state_rows = c.slots.empty() ? n : 8;
    state_in = HostTensor(c.state, {state_rows, hsab, D, D});
    state_out = HostTensor(c.state, {state_rows, hsab, D, D});
    std::mt19937_64 rng(seed);
    for (HostTensor* x : {&q, &k, &v}) x->fill_uniform(rng, -1, 1);
    alpha.fill_uniform(rng, 0.9, 1.0);
    beta.fill_uniform(rng, 0.05, 1.0);
    state_in.fill_uniform(rng, -0.1, 0.1);
    for (std::int64_t i = 0; i < n; ++i) cu.set(i + 1, cu.get(i) + static_cast<double>(c.lengths[i]));
    if (!c.slots.empty()) {
      slots = HostTensor(DType::kInt32, {n});
      for (std::int64_t i = 0; i < n; ++i) slots.set(i, c.slots[i]);
    }
    if (c.checkpoint_every > 0) {
      checkpoints = HostTensor(c.state, {rows, hsab, D, D});
      checkpoint_starts = HostTensor(DType::kInt32, {n + 1});
      for (std::int64_t i = 0; i < n; ++i)
        checkpoint_starts.set(i + 1, checkpoint_starts.get(i) + gdn::checkpoint_count(c.lengths[i], c.checkpoint_every));
    }
  }

  // Packed: state_in -> state_out. Pool: state_in updated in place through the slots.
  gdn::PrefillArgs args() const {
    gdn::PrefillArgs a;
    a.q = q, a.k = k, a.v = v, a.cu_seqlens = cu, a.output = output;
    a.alpha = alpha.view(), a.beta = beta.view(), a.use_qk_l2norm = true, a.use_cp = c.use_cp;
    a.initial_state = state_in.view();
    a.output_state = c.slots.empty() ? state_out.view() : state_in.view();
    if (!c.slots.empty()) a.state_indices = slots.view();
    if (c.checkpoint_every > 0) {
      a.checkpoint_every_n_tokens = c.checkpoint_every;
      a.state_checkpoints = checkpoints.view(), a.checkpoint_cu_starts = checkpoint_starts.view();
    }
    return a;
  }
  const HostTensor& final_states() const { return c.slots.empty() ? state_out : state_in; }
};

// FlashInfer's prefill tolerances; a 16-bit stored state adds its own rounding.
struct Tolerance {
  double out_atol, out_rtol, state_atol, state_rtol;
};
Tolerance prefill_tolerance(const PrefillCase& c) {
  Tolerance t = c.act == DType::kBFloat16 ? Tolerance{1e-2, 1e-2, 5e-3, 1e-3} : Tolerance{2e-3, 1e-3, 1e-3, 1e-4};
  if (c.state == DType::kBFloat16) t.state_rtol = 8e-3;
  if (c.state == DType::kFloat16) t.state_rtol = std::max(t.state_rtol, 1e-3);
  return t;
}

CheckOutcome judge_prefill(const PrefillProblem& got, const PrefillProblem& want) {
  const Tolerance tol = prefill_tolerance(want.c);
  const Closeness out = compare(got.output, want.output, tol.out_atol, tol.out_rtol);
  const Closeness st = compare(got.final_states(), want.final_states(), tol.state_atol, tol.state_rtol);
  Closeness ck;
  if (want.c.checkpoint_every > 0) ck = compare(got.checkpoints, want.checkpoints, tol.state_atol, tol.state_rtol);
  std::string detail = describe("output", out) + ", " + describe("state", st);
  if (want.c.checkpoint_every > 0) detail += ", " + describe("checkpoints", ck);
  return {out.ok && st.ok && ck.ok, detail};
}

// GPU: the kernel against the fp64 oracle. CPU: the fp64 oracle (the public CPU path) against the
// fp32 chunked form, which is what the kernel computes.
CheckOutcome check_prefill(const PrefillCase& c, bool on_gpu) {
  PrefillProblem want(c, 2026);
  PrefillProblem got = want;
  if (on_gpu) {
    DeviceCopy q(got.q), k(got.k), v(got.v), cu(got.cu), alpha(got.alpha), beta(got.beta), out(got.output);
    DeviceCopy s_in(got.state_in), s_out(got.state_out);
    std::unique_ptr<DeviceCopy> slots, checkpoints, starts;
    gdn::PrefillArgs a = got.args();
    a.q = q, a.k = k, a.v = v, a.cu_seqlens = cu, a.alpha = alpha.view(), a.beta = beta.view(), a.output = out;
    a.initial_state = s_in.view();
    a.output_state = c.slots.empty() ? s_out.view() : s_in.view();
    if (!c.slots.empty()) slots = std::make_unique<DeviceCopy>(got.slots), a.state_indices = slots->view();
    if (c.checkpoint_every > 0) {
      checkpoints = std::make_unique<DeviceCopy>(got.checkpoints), a.state_checkpoints = checkpoints->view();
      starts = std::make_unique<DeviceCopy>(got.checkpoint_starts), a.checkpoint_cu_starts = starts->view();
    }
    gdn::prefill(a);
    out.download(got.output);
    s_in.download(got.state_in);
    s_out.download(got.state_out);
    if (checkpoints) checkpoints->download(got.checkpoints);
    ref::gdn_prefill_serial_fp64(want.args());
  } else {
    gdn::prefill(want.args());
    ref::gdn_prefill_chunked_fp32(got.args());
  }
  return judge_prefill(got, want);
}

// A decode / MTP problem: B sequences of T tokens against a pool of 8 slots.
struct DecodeProblem {
  HostTensor q, k, v, A_log, a, dt_bias, b, pool, slots, output, intermediate;
  bool with_intermediate = false;
  DecodeProblem(std::int64_t batch, std::int64_t tokens, DType state, const std::vector<std::int32_t>& slot_of,
                bool with_intermediate, std::uint64_t seed)
      : q(DType::kBFloat16, {batch, tokens, 2, D}), k(DType::kBFloat16, {batch, tokens, 2, D}),
        v(DType::kBFloat16, {batch, tokens, 4, D}), A_log(DType::kFloat32, {4}), a(DType::kFloat32, {batch, tokens, 4}),
        dt_bias(DType::kFloat32, {4}), b(DType::kFloat32, {batch, tokens, 4}), pool(state, {8, 4, D, D}),
        slots(DType::kInt32, {batch}), output(DType::kBFloat16, {batch, tokens, 4, D}) {
    std::mt19937_64 rng(seed);
    for (HostTensor* x : {&q, &k, &v, &pool}) x->fill_uniform(rng, -1, 1);
    A_log.fill_uniform(rng, -3, 1), dt_bias.fill_uniform(rng, -1, 1);
    a.fill_uniform(rng, -3, 3), b.fill_uniform(rng, -4, 4);
    for (std::int64_t i = 0; i < batch; ++i) slots.set(i, slot_of[i]);
    if (with_intermediate) intermediate = HostTensor(DType::kFloat32, {batch, tokens, 4, D, D});
    this->with_intermediate = with_intermediate;
  }
  gdn::DecodeArgs args() const {
    gdn::DecodeArgs x;
    x.q = q, x.k = k, x.v = v, x.A_log = A_log, x.a = a, x.dt_bias = dt_bias, x.b = b;
    x.state = pool, x.initial_state_indices = slots, x.output = output;
    if (with_intermediate) x.intermediate_states = intermediate.view();
    return x;
  }
};

// GPU only: the kernel against the fp64 reference (FlashInfer's bf16 decode tolerances).
CheckOutcome check_decode_gpu(std::int64_t tokens, DType state) {
  const std::vector<std::int32_t> slot_of{3, -1, 0, 7, 5};
  DecodeProblem want(5, tokens, state, slot_of, tokens > 1, 7);
  DecodeProblem got = want;
  {
    DeviceCopy q(got.q), k(got.k), v(got.v), A_log(got.A_log), a(got.a), dt_bias(got.dt_bias), b(got.b);
    DeviceCopy pool(got.pool), slots(got.slots), out(got.output);
    gdn::DecodeArgs x = got.args();
    x.q = q, x.k = k, x.v = v, x.A_log = A_log, x.a = a, x.dt_bias = dt_bias, x.b = b;
    x.state = pool, x.initial_state_indices = slots, x.output = out;
    std::unique_ptr<DeviceCopy> inter;
    if (tokens > 1) inter = std::make_unique<DeviceCopy>(got.intermediate), x.intermediate_states = inter->view();
    gdn::decode(x);
    out.download(got.output);
    pool.download(got.pool);
    if (inter) inter->download(got.intermediate);
  }
  ref::gdn_decode(want.args());
  const double state_rtol = state == DType::kBFloat16 ? 8e-3 : 5e-3;
  const Closeness out = compare(got.output, want.output, 0.016, 5e-3);
  const Closeness pool = compare(got.pool, want.pool, 0.016, state_rtol);
  std::string detail = describe("output", out) + ", " + describe("pool", pool);
  bool ok = out.ok && pool.ok;
  if (tokens > 1) {
    const Closeness inter = compare(got.intermediate, want.intermediate, 0.016, 5e-3);
    detail += ", " + describe("intermediate states", inter);
    ok = ok && inter.ok;
  }
  return {ok, detail};
}

// CPU: an MTP call (T = 4, intermediate states) against four chained T = 1 calls.
CheckOutcome check_decode_cpu() {
  const std::vector<std::int32_t> slot_of{3, -1, 0};
  DecodeProblem mtp(3, 4, DType::kFloat32, slot_of, true, 11);
  DecodeProblem step(3, 1, DType::kFloat32, slot_of, false, 11);
  step.pool = mtp.pool;
  gdn::decode(mtp.args());
  bool ok = true;
  Closeness worst_out, worst_state;
  for (std::int64_t t = 0; t < 4; ++t) {
    for (auto [whole, one] : {std::pair{&mtp.q, &step.q}, {&mtp.k, &step.k}, {&mtp.v, &step.v}, {&mtp.a, &step.a}, {&mtp.b, &step.b}}) {
      const std::int64_t per_token = one->numel() / 3;
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t e = 0; e < per_token; ++e) one->set(i * per_token + e, whole->get((i * 4 + t) * per_token + e));
    }
    step.A_log = mtp.A_log, step.dt_bias = mtp.dt_bias;
    gdn::decode(step.args());
    for (std::int64_t i = 0; i < 3; ++i) {
      if (slot_of[i] < 0) continue;
      HostTensor o_mtp(DType::kBFloat16, {4, D}), o_step(DType::kBFloat16, {4, D});
      HostTensor s_mtp(DType::kFloat32, {4, D, D}), s_step(DType::kFloat32, {4, D, D});
      for (std::int64_t e = 0; e < 4 * D; ++e)
        o_mtp.set(e, mtp.output.get((i * 4 + t) * 4 * D + e)), o_step.set(e, step.output.get(i * 4 * D + e));
      for (std::int64_t e = 0; e < 4 * D * D; ++e)
        s_mtp.set(e, mtp.intermediate.get((i * 4 + t) * 4 * D * D + e)), s_step.set(e, step.pool.get(slot_of[i] * 4 * D * D + e));
      const Closeness o = compare(o_step, o_mtp, 1e-2, 1e-2), s = compare(s_step, s_mtp, 1e-5, 1e-5);
      ok = ok && o.ok && s.ok;
      if (o.max_abs >= worst_out.max_abs) worst_out = o;
      if (s.max_abs >= worst_state.max_abs) worst_state = s;
    }
  }
  return {ok, "MTP vs chained single steps: " + describe("output", worst_out) + ", " + describe("state", worst_state)};
}

}  // namespace

std::vector<SelfCheck> gdn_self_checks(bool on_gpu) {
  const PrefillCase gva{DType::kBFloat16, DType::kFloat32, 2, 4, {130, 0, 257, 64}, {}, 0};
  const PrefillCase pool{DType::kFloat16, DType::kBFloat16, 4, 2, {200, 50, 64}, {4, -1, 1}, 64};
  PrefillCase cp{DType::kBFloat16, DType::kFloat32, 2, 4, {1500, 0, 700, 65}, {}, 128};
  cp.use_cp = gdn::UseCp::kOn;
  std::vector<SelfCheck> checks{
      {"gdn_prefill bf16, heads 2/4, lengths 130,0,257,64, packed fp32 states",
       [=] { return check_prefill(gva, on_gpu); }},
      {"gdn_prefill fp16, heads 4/2, pool of bf16 states in place (slot -1), checkpoints every 64",
       [=] { return check_prefill(pool, on_gpu); }},
  };
  if (on_gpu) {
    checks.push_back({"gdn_prefill context-parallel (use_cp On), bf16, heads 2/4, lengths 1500,0,700,65, checkpoints",
                      [=] { return check_prefill(cp, true); }});
    checks.push_back({"gdn_decode T=1, 5 sequences (one padded), fp32 pool", [] { return check_decode_gpu(1, DType::kFloat32); }});
    checks.push_back({"gdn_decode MTP T=4, bf16 pool, intermediate states", [] { return check_decode_gpu(4, DType::kBFloat16); }});
  } else {
    checks.push_back({"gdn_decode MTP T=4 vs four T=1 steps, fp32 pool", [] { return check_decode_cpu(); }});
  }
  return checks;
}

}  // namespace fastinfer::cli
