#include "ref/gdn_cp_ref.h"

#include <algorithm>
#include <cmath>

#include "ref/numeric.h"

namespace fastinfer::ref {
namespace {

constexpr int D = gdn::kHeadDim;
constexpr int C = 64;                    // block length (the prefill kernel's chunk)
constexpr double kMinLogAlphaCp = -80.0;  // same clamp as the chunked form: alpha < 1e-35 acts as 0

struct Shape {
  std::int64_t n_seqs, hk, hv, hsab;
  std::vector<std::int64_t> cu;
};

Shape shape_of(const gdn::PrefillArgs& a) {
  Shape s;
  s.cu.resize(static_cast<std::size_t>(a.cu_seqlens.size(0)));
  for (std::size_t i = 0; i < s.cu.size(); ++i)
    s.cu[i] = static_cast<std::int64_t>(load(a.cu_seqlens, static_cast<std::int64_t>(i) * a.cu_seqlens.stride(0)));
  s.n_seqs = static_cast<std::int64_t>(s.cu.size()) - 1;
  s.hk = a.k.size(1);
  s.hv = a.v.size(1);
  s.hsab = std::max(a.q.size(1), s.hv);
  return s;
}

// k row of token t for state head h, L2-normalised when the call asks for it.
void load_k(const gdn::PrefillArgs& a, const Shape& s, std::int64_t t, std::int64_t h, double* k) {
  const std::int64_t base = offset_of(a.k, t, h * s.hk / s.hsab, 0);
  double sum = 0;
  for (int d = 0; d < D; ++d) {
    k[d] = load(a.k, base + d * a.k.stride(2));
    sum += k[d] * k[d];
  }
  if (a.use_qk_l2norm) {
    const double inv = 1.0 / std::sqrt(sum + 1e-6);
    for (int d = 0; d < D; ++d) k[d] *= inv;
  }
}

void load_v(const gdn::PrefillArgs& a, const Shape& s, std::int64_t t, std::int64_t h, double* v) {
  const std::int64_t base = offset_of(a.v, t, h * s.hv / s.hsab, 0);
  for (int d = 0; d < D; ++d) v[d] = load(a.v, base + d * a.v.stride(2));
}

double gate(const std::optional<TensorView>& g, std::int64_t t, std::int64_t h) {
  return g ? load(*g, offset_of(*g, t, h)) : 1.0;
}

// Tokens [t0, t0 + len) of one block: K rows (zero past len), beta (zero past len), G = running
// sum of clamped log alpha (constant past len).
struct Block {
  std::vector<double> K = std::vector<double>(C * D, 0.0), V = std::vector<double>(C * D, 0.0);
  double beta[C] = {}, G[C] = {};
  int len = 0;
};

void load_block(const gdn::PrefillArgs& a, const Shape& s, std::int64_t t0, int len, std::int64_t h, Block& blk) {
  blk.len = len;
  std::fill(blk.K.begin(), blk.K.end(), 0.0);
  std::fill(blk.V.begin(), blk.V.end(), 0.0);
  double cum = 0;
  for (int t = 0; t < C; ++t) {
    blk.beta[t] = 0;
    if (t < len) {
      load_k(a, s, t0 + t, h, &blk.K[t * D]);
      load_v(a, s, t0 + t, h, &blk.V[t * D]);
      blk.beta[t] = gate(a.beta, t0 + t, h);
      cum += std::max(std::log(gate(a.alpha, t0 + t, h)), kMinLogAlphaCp);
    }
    blk.G[t] = cum;
  }
}

std::int64_t slot_of(const gdn::PrefillArgs& a, std::int64_t n) {
  return a.state_indices ? static_cast<std::int64_t>(load(*a.state_indices, n * a.state_indices->stride(0))) : n;
}

}  // namespace

std::vector<double> gdn_cp_block_inverse_ref(const gdn::PrefillArgs& args, CpLayout layout) {
  const Shape s = shape_of(args);
  const std::int64_t bps = layout.blocks_per_seq();
  std::vector<double> out(static_cast<std::size_t>(s.n_seqs * bps * s.hsab * C * C), 0.0);
  Block blk;
  std::vector<double> A0(C * C);
  for (std::int64_t n = 0; n < s.n_seqs; ++n)
    for (std::int64_t b = 0; b < bps; ++b) {
      const std::int64_t t0 = s.cu[n] + b * C;
      if (t0 >= s.cu[n + 1]) break;
      const int len = static_cast<int>(std::min<std::int64_t>(C, s.cu[n + 1] - t0));
      for (std::int64_t h = 0; h < s.hsab; ++h) {
        load_block(args, s, t0, len, h, blk);
        for (int i = 0; i < C; ++i)
          for (int j = 0; j < C; ++j) {
            double dot = 0;
            if (j < i)
              for (int d = 0; d < D; ++d) dot += blk.K[i * D + d] * blk.K[j * D + d];
            A0[i * C + j] = j < i ? blk.beta[i] * dot : 0.0;
          }
        double* T = &out[static_cast<std::size_t>(((n * bps + b) * s.hsab + h) * C * C)];
        for (int i = 0; i < C; ++i)  // forward substitution, one row at a time
          for (int c = 0; c < C; ++c) {
            double x = i == c ? 1.0 : 0.0;
            for (int j = c; j < i; ++j) x -= A0[i * C + j] * T[j * C + c];
            T[i * C + c] = c <= i ? x : 0.0;
          }
      }
    }
  return out;
}

void gdn_cp_chunk_maps_ref(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& inverse,
                           std::vector<double>& m, std::vector<double>& b) {
  const Shape s = shape_of(args);
  const std::int64_t cps = layout.chunks_per_seq, bps = layout.blocks_per_seq(), bpc = layout.chunk_len / C;
  const std::size_t map_count = static_cast<std::size_t>(s.n_seqs * cps * s.hsab * D * D);
  m.resize(map_count, 0.0);
  b.resize(map_count, 0.0);
  Block blk;
  std::vector<double> TK(C * D), TVd(C * D), next(D * D);
  for (std::int64_t n = 0; n < s.n_seqs; ++n)
    for (std::int64_t c = 0; c < cps; ++c) {
      const std::int64_t c0 = s.cu[n] + c * layout.chunk_len;
      if (c0 >= s.cu[n + 1]) break;
      for (std::int64_t h = 0; h < s.hsab; ++h) {
        double* M = &m[static_cast<std::size_t>(((n * cps + c) * s.hsab + h) * D * D)];
        double* B = &b[static_cast<std::size_t>(((n * cps + c) * s.hsab + h) * D * D)];
        for (int i = 0; i < D * D; ++i) M[i] = (i / D == i % D) ? 1.0 : 0.0, B[i] = 0.0;
        for (std::int64_t bl = 0; bl < bpc; ++bl) {
          const std::int64_t t0 = c0 + bl * C;
          if (t0 >= s.cu[n + 1]) break;
          const int len = static_cast<int>(std::min<std::int64_t>(C, s.cu[n + 1] - t0));
          load_block(args, s, t0, len, h, blk);
          const double* Tinv = &inverse[static_cast<std::size_t>(((n * bps + c * bpc + bl) * s.hsab + h) * C * C)];
          const double gL = blk.G[C - 1];
          // TK = T K and TVd = T diag(exp(gL - G)) V with T = Tinv diag(beta).
          for (int i = 0; i < C; ++i)
            for (int d = 0; d < D; ++d) {
              double tk = 0, tv = 0;
              for (int j = 0; j <= i; ++j) {
                const double t = Tinv[i * C + j] * blk.beta[j];
                tk += t * blk.K[j * D + d];
                tv += t * std::exp(gL - blk.G[j]) * blk.V[j * D + d];
              }
              TK[i * D + d] = tk;
              TVd[i * D + d] = tv;
            }
          // Block map: P = exp(gL) (I - TK^T K), Bv = TVd^T K. Compose: M <- M P, B <- B P + Bv.
          for (double* X : {M, B}) {
            for (int r = 0; r < D; ++r) {
              double y[C];
              for (int i = 0; i < C; ++i) {
                double dot = 0;
                for (int d = 0; d < D; ++d) dot += X[r * D + d] * TK[i * D + d];
                y[i] = dot;
              }
              for (int col = 0; col < D; ++col) {
                double acc = X[r * D + col];
                for (int i = 0; i < C; ++i) acc -= y[i] * blk.K[i * D + col];
                next[r * D + col] = std::exp(gL) * acc;
              }
            }
            std::copy(next.begin(), next.end(), X);
          }
          for (int r = 0; r < D; ++r)
            for (int col = 0; col < D; ++col) {
              double acc = 0;
              for (int i = 0; i < C; ++i) acc += TVd[i * D + r] * blk.K[i * D + col];
              B[r * D + col] += acc;
            }
        }
      }
    }
}

void gdn_cp_fixup_ref(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& m,
                      const std::vector<double>& b, std::vector<double>& chunk_states,
                      std::vector<double>& final_states) {
  const Shape s = shape_of(args);
  const std::int64_t cps = layout.chunks_per_seq;
  chunk_states.resize(static_cast<std::size_t>(s.n_seqs * cps * s.hsab * D * D), 0.0);
  final_states.assign(static_cast<std::size_t>(s.n_seqs * s.hsab * D * D), 0.0);
  std::vector<double> H(D * D), next(D * D);
  for (std::int64_t n = 0; n < s.n_seqs; ++n) {
    const std::int64_t len = s.cu[n + 1] - s.cu[n];
    if (len <= 0) continue;
    const std::int64_t chunks = (len + layout.chunk_len - 1) / layout.chunk_len;
    const std::int64_t slot = slot_of(args, n);
    for (std::int64_t h = 0; h < s.hsab; ++h) {
      std::fill(H.begin(), H.end(), 0.0);
      if (args.initial_state && slot >= 0)
        for (int i = 0; i < D; ++i)
          for (int j = 0; j < D; ++j) H[i * D + j] = load(*args.initial_state, offset_of(*args.initial_state, slot, h, i, j));
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::size_t row = static_cast<std::size_t>(((n * cps + c) * s.hsab + h) * D * D);
        std::copy(H.begin(), H.end(), chunk_states.begin() + static_cast<std::ptrdiff_t>(row));
        for (int i = 0; i < D; ++i)
          for (int j = 0; j < D; ++j) {
            double acc = b[row + i * D + j];
            for (int k = 0; k < D; ++k) acc += H[i * D + k] * m[row + k * D + j];
            next[i * D + j] = acc;
          }
        H.swap(next);
      }
      std::copy(H.begin(), H.end(), final_states.begin() + static_cast<std::ptrdiff_t>((n * s.hsab + h) * D * D));
    }
  }
}

}  // namespace fastinfer::ref
