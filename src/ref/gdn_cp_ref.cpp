#include "ref/gdn_cp_ref.h"

#include <algorithm>
#include <bit>
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

namespace {

// Rounding of a product operand to the kernel's 16-bit input type, via fp32 as the kernel does.
struct Round16 {
  DType type;
  double operator()(double x) const {
    const float f = static_cast<float>(x);
    return type == DType::kBFloat16 ? bf16_to_float(float_to_bf16(f)) : fp16_to_float(float_to_fp16(f));
  }
};

double f32(double x) { return static_cast<double>(static_cast<float>(x)); }

// The operand pair the kernel feeds a product: hi = round(x), lo = round(x - hi) (or 0).
void split16(const Round16& r, double x, bool hi_lo, double& hi, double& lo) {
  hi = r(x);
  lo = hi_lo ? r(f32(x) - hi) : 0.0;
}

// The kernels' K tile: the (normalised) rows rounded to the 16-bit input type.
void round_rows(DType type, std::vector<double>& rows) {
  const Round16 r16{type};
  for (double& x : rows) x = r16(x);
}

}  // namespace

namespace {
std::vector<double> block_inverse(const gdn::PrefillArgs& args, CpLayout layout, bool round_k);
}

std::vector<double> gdn_cp_block_inverse_ref(const gdn::PrefillArgs& args, CpLayout layout) {
  return block_inverse(args, layout, false);
}

std::vector<double> gdn_cp_block_inverse_mirror(const gdn::PrefillArgs& args, CpLayout layout) {
  return block_inverse(args, layout, true);
}

namespace {
std::vector<double> block_inverse(const gdn::PrefillArgs& args, CpLayout layout, bool round_k) {
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
        if (round_k) round_rows(args.k.dtype, blk.K);
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

// The stage-2 loop shared by the exact reference and its rounding mirror: sizes m and b, and for
// every (sequence, CP chunk, head) starts [M; B] at [I; 0] and hands each 64-token block of the
// chunk (loaded, with its Tinv) to compose(M, B, blk, Tinv), which folds the block's map in.
template <class Compose>
void for_each_chunk_block(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& inverse,
                          std::vector<double>& m, std::vector<double>& b, Compose&& compose) {
  const Shape s = shape_of(args);
  const std::int64_t cps = layout.chunks_per_seq, bps = layout.blocks_per_seq(), bpc = layout.chunk_len / C;
  const std::size_t map_count = static_cast<std::size_t>(s.n_seqs * cps * s.hsab * D * D);
  m.resize(map_count, 0.0);
  b.resize(map_count, 0.0);
  Block blk;
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
          compose(M, B, blk, &inverse[static_cast<std::size_t>(((n * bps + c * bpc + bl) * s.hsab + h) * C * C)]);
        }
      }
    }
}
}  // namespace

void gdn_cp_chunk_maps_ref(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& inverse,
                           std::vector<double>& m, std::vector<double>& b) {
  std::vector<double> TK(C * D), TVd(C * D), next(D * D);
  for_each_chunk_block(args, layout, inverse, m, b, [&](double* M, double* B, Block& blk, const double* Tinv) {
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
  });
}

namespace {
// The kernel's fp16 row scale (cp_chunk_maps_sm90.cuh, fp16_row_scale): 2^(14 - floor(log2 x))
// from x's fp32 exponent bits, clamped to 2^+-100.
double fp16_row_scale(double max_abs) {
  const int biased = static_cast<int>((std::bit_cast<std::uint32_t>(static_cast<float>(max_abs)) >> 23) & 0xffu);
  return std::ldexp(1.0, std::clamp(141 - biased, -100, 100));
}
}  // namespace

void gdn_cp_chunk_maps_mirror(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& inverse,
                              std::vector<double>& m, std::vector<double>& b, CpMapRounding rounding) {
  const Round16 r16{args.k.dtype}, f16{DType::kFloat16};
  const bool fp16 = rounding == CpMapRounding::kFp16Scaled;
  const bool hi_lo = rounding == CpMapRounding::kHiLo16;
  // Tk, Tv: T and T diag(exp(gL - G)) as hi + lo sums; A (= T K) hi + lo sum and its lo part;
  // Ud = T diag(exp(gL - G)) V in fp32; X: the rows of M or B split hi + lo.
  std::vector<double> Tk(C * C), Tv(C * C), A(C * D), A_lo(C * D), Ud(C * D), X_hi(D * D), X_lo(D * D), next(D * D);
  for_each_chunk_block(args, layout, inverse, m, b, [&](double* M, double* B, Block& blk, const double* Tinv) {
    round_rows(args.k.dtype, blk.K);  // the kernel's K tile (V is the exact input)
    if (fp16)
      for (double& x : blk.K) x = f16(x);
    const double gL = blk.G[C - 1], decay = f32(std::exp(gL));
    for (int i = 0; i < C; ++i)
      for (int j = 0; j < C; ++j) {
        const double t_beta = f32(f32(Tinv[i * C + j]) * blk.beta[j]);
        const double t_gated = f32(t_beta * std::exp(gL - blk.G[j]));
        double hi, lo;
        split16(r16, t_beta, hi_lo, hi, lo);
        Tk[i * C + j] = fp16 ? f16(t_beta) : hi + lo;
        split16(r16, t_gated, hi_lo || fp16, hi, lo);
        Tv[i * C + j] = hi + lo;
      }
    for (int i = 0; i < C; ++i)
      for (int d = 0; d < D; ++d) {
        double tk = 0, tv = 0;
        for (int j = 0; j < C; ++j) tk += Tk[i * C + j] * blk.K[j * D + d], tv += Tv[i * C + j] * blk.V[j * D + d];
        double hi, lo;
        split16(r16, f32(tk), hi_lo, hi, lo);
        if (fp16) hi = f16(f32(tk)), lo = 0.0;
        A[i * D + d] = hi + lo;
        A_lo[i * D + d] = lo;
        Ud[i * D + d] = f32(tv);
      }
    for (double* X : {M, B}) {
      double row_max[D] = {};
      if (fp16)
        for (int row = 0; row < D; ++row) {
          for (int col = 0; col < D; ++col) row_max[row] = std::max(row_max[row], std::fabs(X[row * D + col]));
          const double scale = fp16_row_scale(row_max[row]);
          for (int col = 0; col < D; ++col)
            X_hi[row * D + col] = f16(X[row * D + col] * scale) / scale, X_lo[row * D + col] = 0.0;
        }
      else
        for (int i = 0; i < D * D; ++i) split16(r16, X[i], hi_lo, X_hi[i], X_lo[i]);
      for (int row = 0; row < D; ++row) {
        double z[C];
        double z_max = f32(decay * row_max[row]);
        for (int i = 0; i < C; ++i) {
          double y = 0;  // X_hi A_hi + X_lo A_hi + X_hi A_lo = (X_hi + X_lo)(A_hi + A_lo) - X_lo A_lo
          for (int d = 0; d < D; ++d)
            y += (X_hi[row * D + d] + X_lo[row * D + d]) * A[i * D + d] - X_lo[row * D + d] * A_lo[i * D + d];
          z[i] = f32((X == B ? Ud[i * D + row] : 0.0) - decay * f32(y));
          z_max = std::max(z_max, std::fabs(z[i]));
        }
        const double z_scale = fp16_row_scale(z_max);
        for (int i = 0; i < C; ++i) {
          double hi, lo;
          split16(r16, z[i], hi_lo, hi, lo);
          z[i] = fp16 ? f16(z[i] * z_scale) / z_scale : hi + lo;
        }
        for (int col = 0; col < D; ++col) {
          double acc = f32(decay * X[row * D + col]);
          for (int i = 0; i < C; ++i) acc += z[i] * blk.K[i * D + col];
          next[row * D + col] = f32(acc);
        }
      }
      std::copy(next.begin(), next.end(), X);
    }
  });
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
