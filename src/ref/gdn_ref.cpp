#include "ref/gdn_ref.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "ref/numeric.h"

namespace fastinfer::ref {

std::vector<std::int64_t> read_offsets(const TensorView& offsets) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(offsets.size(0)));
  for (std::int64_t i = 0; i < offsets.size(0); ++i)
    out[i] = static_cast<std::int64_t>(load(offsets, i * offsets.stride(0)));
  return out;
}

namespace {

constexpr int D = gdn::kHeadDim;
constexpr int C = 64;  // chunk length of the chunked form (the GPU kernel's tile)

// The decoded shape of one call, shared by both references.
struct Problem {
  std::int64_t n_seqs = 0, hq = 0, hk = 0, hv = 0, hsab = 0;
  std::vector<std::int64_t> cu, ckpt_starts, slots;  // slots: state row per sequence (-1: none)
  double scale = 0;
};

Problem decode(const gdn::PrefillArgs& a) {
  Problem p;
  p.cu = read_offsets(a.cu_seqlens);
  p.n_seqs = static_cast<std::int64_t>(p.cu.size()) - 1;
  p.hq = a.q.size(1);
  p.hk = a.k.size(1);
  p.hv = a.v.size(1);
  p.hsab = std::max(p.hq, p.hv);
  p.scale = a.scale != 0.0f ? a.scale : 1.0 / std::sqrt(static_cast<double>(D));
  if (a.checkpoint_every_n_tokens > 0 && a.checkpoint_cu_starts) p.ckpt_starts = read_offsets(*a.checkpoint_cu_starts);
  p.slots.resize(p.n_seqs);
  for (std::int64_t n = 0; n < p.n_seqs; ++n)
    p.slots[n] = a.state_indices ? static_cast<std::int64_t>(load(*a.state_indices, n * a.state_indices->stride(0))) : n;
  return p;
}

// Runs f(n, h) for every (sequence, state head) pair on all host cores; pairs write disjoint data.
template <class F>
void for_each_sequence_head(const Problem& p, F f) {
  const std::int64_t total = p.n_seqs * p.hsab;
  const unsigned workers =
      static_cast<unsigned>(std::clamp<std::int64_t>(std::thread::hardware_concurrency(), 1, std::max<std::int64_t>(total, 1)));
  std::atomic<std::int64_t> next{0};
  auto work = [&] {
    for (std::int64_t i = next++; i < total; i = next++) f(i / p.hsab, i % p.hsab);
  };
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

template <class T>
void load_row(const TensorView& x, std::int64_t t, std::int64_t head, T* out) {
  const std::int64_t base = offset_of(x, t, head, 0);
  for (int d = 0; d < D; ++d) out[d] = static_cast<T>(load(x, base + d * x.stride(2)));
}

template <class T>
void l2_normalise(T* x) {
  T sum = 0;
  for (int d = 0; d < D; ++d) sum += x[d] * x[d];
  const T inv = T(1) / std::sqrt(sum + T(1e-6));
  for (int d = 0; d < D; ++d) x[d] *= inv;
}

double gate(const std::optional<TensorView>& g, std::int64_t t, std::int64_t h) {
  return g ? load(*g, offset_of(*g, t, h)) : 1.0;
}

// State [V][K] of slot `slot`, head h of a state tensor (any of the three dtypes).
template <class T>
void load_state(const TensorView& s, std::int64_t slot, std::int64_t h, T* state_VK) {
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) state_VK[i * D + j] = static_cast<T>(load(s, offset_of(s, slot, h, i, j)));
}

template <class T>
void store_state(const TensorView& s, std::int64_t slot, std::int64_t h, const T* state_VK) {
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) store(s, offset_of(s, slot, h, i, j), state_VK[i * D + j]);
}

// Writes checkpoint number `index` (1-based) of sequence n when it has room for it.
template <class T>
void store_checkpoint(const gdn::PrefillArgs& a, const Problem& p, std::int64_t n, std::int64_t h,
                      std::int64_t index, const T* state_VK) {
  const std::int64_t row = p.ckpt_starts[n] + index - 1;
  if (row < p.ckpt_starts[n + 1]) store_state(*a.state_checkpoints, row, h, state_VK);
}

bool has_checkpoints(const gdn::PrefillArgs& a) {
  return a.checkpoint_every_n_tokens > 0 && a.state_checkpoints && a.checkpoint_cu_starts;
}

void serial_head(const gdn::PrefillArgs& a, const Problem& p, std::int64_t n, std::int64_t h) {
  const std::int64_t bos = p.cu[n], eos = p.cu[n + 1];
  if (eos <= bos) return;  // zero-length: nothing written, state untouched
  const std::int64_t slot = p.slots[n];
  std::vector<double> state_VK(D * D, 0.0);
  if (a.initial_state && slot >= 0) load_state(*a.initial_state, slot, h, state_VK.data());
  const std::int64_t hq = h * p.hq / p.hsab, hk = h * p.hk / p.hsab, hv = h * p.hv / p.hsab;
  double q[D], k[D], v[D];
  for (std::int64_t t = bos; t < eos; ++t) {
    load_row(a.q, t, hq, q);
    load_row(a.k, t, hk, k);
    load_row(a.v, t, hv, v);
    if (a.use_qk_l2norm) {
      l2_normalise(q);
      l2_normalise(k);
    }
    const double alpha = gate(a.alpha, t, h), beta = gate(a.beta, t, h);
    // H_t = alpha H (I - beta k k^T) + beta v k^T = alpha H + beta (v - alpha H k) k^T
    for (double& s : state_VK) s *= alpha;
    for (int i = 0; i < D; ++i) {
      double* row = &state_VK[i * D];
      double predicted = 0;
      for (int j = 0; j < D; ++j) predicted += row[j] * k[j];
      const double u = beta * (v[i] - predicted);
      for (int j = 0; j < D; ++j) row[j] += u * k[j];
    }
    const std::int64_t out_base = offset_of(a.output, t, h, 0);
    for (int i = 0; i < D; ++i) {
      double o = 0;
      for (int j = 0; j < D; ++j) o += state_VK[i * D + j] * q[j];
      store(a.output, out_base + i * a.output.stride(2), p.scale * o);
    }
    const std::int64_t done = t - bos + 1;
    if (has_checkpoints(a) && done % a.checkpoint_every_n_tokens == 0)
      store_checkpoint(a, p, n, h, done / a.checkpoint_every_n_tokens, state_VK.data());
  }
  if (a.output_state && slot >= 0) store_state(*a.output_state, slot, h, state_VK.data());
}

// Rounds to the dtype of the matrix-product operands (the input dtype), as the kernel does.
float round_to(DType t, float x) {
  return t == DType::kBFloat16 ? bf16_to_float(float_to_bf16(x)) : fp16_to_float(float_to_fp16(x));
}

void chunked_head(const gdn::PrefillArgs& a, const Problem& p, std::int64_t n, std::int64_t h) {
  const std::int64_t bos = p.cu[n], eos = p.cu[n + 1];
  if (eos <= bos) return;
  const std::int64_t slot = p.slots[n];
  const DType op = a.q.dtype;
  auto rnd = [op](float x) { return round_to(op, x); };
  std::vector<float> state_VK(D * D, 0.0f);
  if (a.initial_state && slot >= 0) load_state(*a.initial_state, slot, h, state_VK.data());
  const std::int64_t hq = h * p.hq / p.hsab, hk = h * p.hk / p.hsab, hv = h * p.hv / p.hsab;

  // Operands that feed the state are hi + lo pairs (X, Tg, the decayed U), as in the kernel.
  std::vector<float> Q(C * D), K(C * D), V(C * D), KS(C * D), QS(C * D), X(C * D), X_lo(C * D), U(C * D),
      Ud(C * D), Ud_lo(C * D), Sb(D * D);
  std::vector<float> A0(C * C), Tinv(C * C), Tg(C * C), Tg_lo(C * C), P(C * C);
  float G[C], beta[C];
  for (std::int64_t c0 = bos; c0 < eos; c0 += C) {
    const int len = static_cast<int>(std::min<std::int64_t>(C, eos - c0));
    std::fill(Q.begin(), Q.end(), 0.0f);
    std::fill(K.begin(), K.end(), 0.0f);
    std::fill(V.begin(), V.end(), 0.0f);
    float cum = 0;
    for (int t = 0; t < C; ++t) {
      float log_alpha = 0;
      beta[t] = 0;
      if (t < len) {
        load_row(a.q, c0 + t, hq, &Q[t * D]);
        load_row(a.k, c0 + t, hk, &K[t * D]);
        load_row(a.v, c0 + t, hv, &V[t * D]);
        if (a.use_qk_l2norm) {
          l2_normalise(&Q[t * D]);
          l2_normalise(&K[t * D]);
          for (int d = 0; d < D; ++d) Q[t * D + d] = rnd(Q[t * D + d]), K[t * D + d] = rnd(K[t * D + d]);
        }
        log_alpha = std::max(std::log(static_cast<float>(gate(a.alpha, c0 + t, h))), kMinLogAlpha);
        beta[t] = static_cast<float>(gate(a.beta, c0 + t, h));
      }
      cum += log_alpha;
      G[t] = cum;  // padded tokens: alpha = 1, beta = 0, zero q/k/v
    }
    // A0 = strict_lower(diag(beta) K K^T); T = (I + A0)^-1 diag(beta) by forward substitution.
    for (int t = 0; t < C; ++t)
      for (int j = 0; j < C; ++j) {
        float dot = 0;
        if (j < t)
          for (int d = 0; d < D; ++d) dot += K[t * D + d] * K[j * D + d];
        A0[t * C + j] = j < t ? beta[t] * dot : 0.0f;
      }
    for (int i = 0; i < C; ++i)
      for (int c = 0; c < C; ++c) {
        float x = i == c ? 1.0f : 0.0f;
        for (int j = c; j < i; ++j) x -= A0[i * C + j] * Tinv[j * C + c];
        Tinv[i * C + c] = c <= i ? x : 0.0f;
      }
    // Gates re-applied: T_gated[t][j] = T[t][j] * beta_j * exp(G_t - G_j) (j <= t, never > 1).
    for (int t = 0; t < C; ++t)
      for (int j = 0; j < C; ++j) {
        const float tg = j <= t ? Tinv[t * C + j] * beta[j] * std::exp(G[t] - G[j]) : 0.0f;
        Tg[t * C + j] = rnd(tg);
        Tg_lo[t * C + j] = rnd(tg - Tg[t * C + j]);
      }
    for (int i = 0; i < D * D; ++i) Sb[i] = rnd(state_VK[i]);
    for (int t = 0; t < C; ++t)
      for (int i = 0; i < D; ++i) {
        float ks = 0, qs = 0;
        for (int j = 0; j < D; ++j) ks += K[t * D + j] * Sb[i * D + j], qs += Q[t * D + j] * Sb[i * D + j];
        KS[t * D + i] = ks;
        QS[t * D + i] = qs;
        const float x = V[t * D + i] - std::exp(G[t]) * ks;
        X[t * D + i] = rnd(x);
        X_lo[t * D + i] = rnd(x - X[t * D + i]);
      }
    const float g_last = G[len - 1];
    for (int t = 0; t < C; ++t)
      for (int i = 0; i < D; ++i) {
        // The kernel's three products: hi hi, then hi lo, then lo hi (lo lo is below fp32 rounding).
        float u = 0;
        for (int j = 0; j <= t; ++j) u += Tg[t * C + j] * X[j * D + i];
        for (int j = 0; j <= t; ++j) u += Tg[t * C + j] * X_lo[j * D + i];
        for (int j = 0; j <= t; ++j) u += Tg_lo[t * C + j] * X[j * D + i];
        U[t * D + i] = rnd(u);
        const float decayed = u * std::exp(g_last - G[t]);
        Ud[t * D + i] = rnd(decayed);
        Ud_lo[t * D + i] = rnd(decayed - Ud[t * D + i]);
      }
    for (int t = 0; t < C; ++t)
      for (int j = 0; j < C; ++j) {
        float dot = 0;
        if (j <= t)
          for (int d = 0; d < D; ++d) dot += Q[t * D + d] * K[j * D + d];
        P[t * C + j] = j <= t ? rnd(dot * std::exp(G[t] - G[j])) : 0.0f;
      }
    for (int t = 0; t < len; ++t) {
      const std::int64_t out_base = offset_of(a.output, c0 + t, h, 0);
      for (int i = 0; i < D; ++i) {
        float o = std::exp(G[t]) * QS[t * D + i];
        for (int j = 0; j <= t; ++j) o += P[t * C + j] * U[j * D + i];
        store(a.output, out_base + i * a.output.stride(2), static_cast<float>(p.scale) * o);
      }
    }
    for (int i = 0; i < D; ++i)
      for (int d = 0; d < D; ++d) {
        float s = std::exp(g_last) * state_VK[i * D + d];
        for (int j = 0; j < len; ++j) s += Ud[j * D + i] * K[j * D + d];
        for (int j = 0; j < len; ++j) s += Ud_lo[j * D + i] * K[j * D + d];
        state_VK[i * D + d] = s;
      }
    const std::int64_t done = c0 + len - bos;
    if (has_checkpoints(a) && done % a.checkpoint_every_n_tokens == 0)
      store_checkpoint(a, p, n, h, done / a.checkpoint_every_n_tokens, state_VK.data());
  }
  if (a.output_state && slot >= 0) store_state(*a.output_state, slot, h, state_VK.data());
}

}  // namespace

void gdn_prefill_serial_fp64(const gdn::PrefillArgs& args) {
  const Problem p = decode(args);
  for_each_sequence_head(p, [&](std::int64_t n, std::int64_t h) { serial_head(args, p, n, h); });
}

void gdn_prefill_chunked_fp32(const gdn::PrefillArgs& args) {
  const Problem p = decode(args);
  for_each_sequence_head(p, [&](std::int64_t n, std::int64_t h) { chunked_head(args, p, n, h); });
}

}  // namespace fastinfer::ref
