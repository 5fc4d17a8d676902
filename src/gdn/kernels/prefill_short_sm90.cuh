#pragma once
// The GDN prefill kernel for short sequences (docs/GDN_PREFILL_SHORT.md): one CTA per (sequence,
// k head) for sequences of at most kCap (32 or 64) tokens that start from a zero state and write no
// state. With S = 0 the chunk math of docs/GDN_PREFILL.md reduces to
//
//     A[t, j] = beta_t Gamma[t, j] (k_t . k_j)   (j < t),     P = (Q K^T) o Gamma   (j <= t)
//     O = scale P (I + A)^-1 diag(beta) V = W V,   W = scale (P (I + A)^-1) diag(beta)
//
// so each state head needs two small products (Q K^T, K K^T), a right-looking back substitution
// W (I + A) = P in fp32 (one lane per row of W: kCap / 32 warps per state head, warp rb owning
// token rows 32 rb ..), and one product W V with W as a rounded pair hi + lo. The r = Hsab / Hk
// state heads of a k head share K and either Q (GVA) or V (GQA): the CTA loads K and that shared
// tile once; its head slots (kCap / 32 warps each) take state heads s, s + slots, ... with their
// own tile (V for GVA, Q for GQA). Sequences longer than kCap are skipped here; the serial kernel
// (prefill_short_serial_sm90.cuh), launched after this one, computes them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gdn/kernels/prefill_fast_primitives.cuh"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn::kernels::short_seq {

using fast::cp_async_16;
using fast::cp_async_commit;
using fast::cp_async_wait_all;
using fast::ldmatrix_x4;
using fast::ldmatrix_x4_trans;
using fast::smem_address;

template <int kCapTokens>
struct ShortConfig {
  static constexpr int kCap = kCapTokens;    // tokens per item
  static constexpr int kRowBlocks = kCap / 32;  // warps per state head; lane i of warp rb owns token row 32 rb + i
  static constexpr int kMaxWarps = 4;
  static constexpr int kMaxHeads = kMaxWarps / kRowBlocks;  // state heads served at once by one CTA
  static constexpr int kTilePitch = 136;     // 16-bit elements per [token][128] row: +8 spreads ldmatrix rows over the banks
  static constexpr int kF32Pitch = kCap + 4;  // fp32 [kCap][kCap] scratch rows (read by lane as float4s)
  static constexpr int kWPitch = kCap + 8;    // W hi / lo 16-bit rows for ldmatrix
  static constexpr float kMinLog2Alpha = -80.0f * 1.4426950408889634f;  // log alpha clamped at -80 as the main kernel
  static constexpr int kTileBytes = kCap * kTilePitch * 2;
  static constexpr int kABytes = kCap * kF32Pitch * 4;
  static constexpr int kWBlockBytes = 2 * 32 * kWPitch * 2;  // one row block's W: 32 hi rows, then 32 lo rows
  static constexpr int kScratchBytes = kABytes > kRowBlocks * kWBlockBytes ? kABytes : kRowBlocks * kWBlockBytes;
  static constexpr int kGateBytes = 2 * kCap * 4;  // per warp: G (cumulative log2 alpha) and beta
  static constexpr int kHeadBytes = kTileBytes + kScratchBytes + kRowBlocks * kGateBytes;
  // Shared tiles K and Q-or-V, then per head slot: its own tile, scratch, its warps' gates.
  static constexpr int smem_bytes(int heads) { return 2 * kTileBytes + heads * kHeadBytes; }
  static_assert(kCap == 32 || kCap == 64, "one or two row blocks");
  // A staging block of 32 output rows fits in a W block (two row blocks) or goes to the own tile.
  static_assert(kRowBlocks == 1 || kWBlockBytes >= 32 * kTilePitch * 2, "output staging");
};
static_assert(ShortConfig<32>::smem_bytes(4) * 3 <= 227 * 1024, "three CTAs per SM with 32-token items");
static_assert(ShortConfig<64>::smem_bytes(2) * 2 <= 227 * 1024, "two CTAs per SM with 64-token items");

__device__ __forceinline__ std::int64_t read_offset(const void* offsets, bool is_int64, std::int64_t i) {
  return is_int64 ? static_cast<const std::int64_t*>(offsets)[i] : static_cast<const std::int32_t*>(offsets)[i];
}

// Sequence n's token range; invalid offsets (outside [0, T] or decreasing) make it empty.
__device__ __forceinline__ void sequence_range(const PrefillParams& p, std::int64_t n, std::int64_t& bos, int& len) {
  bos = read_offset(p.cu_seqlens, p.offsets_are_int64, n);
  const std::int64_t eos = read_offset(p.cu_seqlens, p.offsets_are_int64, n + 1);
  const bool valid = bos >= 0 && eos >= bos && eos <= p.total_tokens;
  const std::int64_t l = valid ? eos - bos : 0;
  len = l > 0x7fffffff ? 0x7fffffff : static_cast<int>(l);
}

// Rows [0, kCap) of one head of a [T, H, 128] input into a padded tile by cp.async; rows at or past
// `len` are zeros (never read from global).
template <int kCap, class Element>
__device__ __forceinline__ void load_tile(Element* tile, const void* base, std::int64_t stride_token,
                                          std::int64_t stride_head, int head, std::int64_t bos, int len, int tid,
                                          int nthreads) {
  const Element* src0 = static_cast<const Element*>(base) + head * stride_head;
  for (int c = tid; c < kCap * 16; c += nthreads) {
    const int row = c >> 4, chunk = c & 15;
    const bool valid = row < len;
    const Element* src = valid ? src0 + (bos + row) * stride_token + chunk * 8 : src0;
    cp_async_16(tile + row * ShortConfig<kCap>::kTilePitch + chunk * 8, src, valid ? 16 : 0);
  }
}

// x <- x rsqrt(sum x^2 + 1e-6), rounded to the input dtype, for every row of a tile; eight
// consecutive threads share a row (nthreads is a multiple of 32).
template <InputType kType, int kCap>
__device__ __forceinline__ void l2_normalise_rows(typename Operand<kType>::Element* tile, int tid, int nthreads) {
  using Element = typename Operand<kType>::Element;
  for (int task = tid; task < kCap * 8; task += nthreads) {
    Element* x = tile + (task >> 3) * ShortConfig<kCap>::kTilePitch + (task & 7) * 16;
    uint4 raw[2] = {reinterpret_cast<const uint4*>(x)[0], reinterpret_cast<const uint4*>(x)[1]};
    const std::uint32_t* pairs = reinterpret_cast<const std::uint32_t*>(raw);
    float v[16];
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float2 f = fast::unpack_pair<kType>(pairs[i]);
      v[2 * i] = f.x, v[2 * i + 1] = f.y;
      sum += f.x * f.x + f.y * f.y;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    sum += __shfl_xor_sync(0xffffffffu, sum, 4);
    const float inv = rsqrtf(sum + 1e-6f);
    std::uint32_t out[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = fast::pack_pair<kType>(v[2 * i] * inv, v[2 * i + 1] * inv);
    reinterpret_cast<uint4*>(x)[0] = make_uint4(out[0], out[1], out[2], out[3]);
    reinterpret_cast<uint4*>(x)[1] = make_uint4(out[4], out[5], out[6], out[7]);
  }
}

// One warp: G (cumulative log2 alpha, clamped per token) and beta of tokens 0..kCap-1 of state head
// h into gates[0..kCap) and gates[kCap..2 kCap); tokens past len: alpha 1, beta 0.
template <int kCap>
__device__ __forceinline__ void load_gates(float* gates, const PrefillParams& p, std::int64_t bos, int len, int h,
                                           int lane) {
  float carry = 0.0f;
#pragma unroll
  for (int c = 0; c < kCap / 32; ++c) {
    const int i = 32 * c + lane;
    float log2_alpha = 0.0f, beta = 0.0f;
    if (i < len) {
      const std::int64_t t = bos + i;
      if (p.alpha) log2_alpha = fmaxf(__log2f(p.alpha[t * p.alpha_stride_token + h]), ShortConfig<kCap>::kMinLog2Alpha);
      beta = p.beta ? p.beta[t * p.beta_stride_token + h] : 1.0f;
    }
    float g = log2_alpha;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const float o = __shfl_up_sync(0xffffffffu, g, d);
      if (lane >= d) g += o;
    }
    g += carry;
    carry = __shfl_sync(0xffffffffu, g, 31);
    gates[i] = g;
    gates[kCap + i] = beta;
  }
}

// Whether n-tile pair np (columns 16 np ..) of m-tile m of row block kRB lies on or below the diagonal.
template <int kRB>
__device__ __forceinline__ constexpr bool lower_pair(int m, int np) { return np <= 2 * kRB + m; }

// acc (two 16-row blocks x (kRB + 1) * 4 8-column tiles: the lower part of rows 32 kRB .. 32 kRB + 31
// of a product) += A B^T over the 128 columns of two [kCap][kTilePitch] tiles (B's rows are the
// output columns).
template <InputType kType, int kCap, int kRB>
__device__ __forceinline__ void product_rows(float (&acc)[2][4 * kRB + 4][4], const void* a_tile, const void* b_tile,
                                             int lane) {
  constexpr int kPitch = ShortConfig<kCap>::kTilePitch;
  const std::uint32_t a_base = smem_address(a_tile), b_base = smem_address(b_tile);
  // ldmatrix addresses: A rows lane % 16, column half lane / 16; B rows (lane % 8) + 8 (lane / 16),
  // column half (lane / 8) % 2.
  const std::uint32_t a_off = ((32 * kRB + (lane & 15)) * kPitch + (lane >> 4) * 8) * 2;
  const std::uint32_t b_off = (((lane & 7) + ((lane >> 4) << 3)) * kPitch + ((lane >> 3) & 1) * 8) * 2;
#pragma unroll
  for (int k0 = 0; k0 < 128; k0 += 16) {
    std::uint32_t a[2][4], b[2 * kRB + 2][4];
#pragma unroll
    for (int m = 0; m < 2; ++m) ldmatrix_x4(a[m], a_base + a_off + (16 * m * kPitch + k0) * 2);
#pragma unroll
    for (int np = 0; np < 2 * kRB + 2; ++np) ldmatrix_x4(b[np], b_base + b_off + (16 * np * kPitch + k0) * 2);
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int np = 0; np < 2 * kRB + 2; ++np)
        if (lower_pair<kRB>(m, np)) fast::mma_pair<kType>(acc[m][2 * np], acc[m][2 * np + 1], a[m], b[np]);
  }
}

// The accumulator of product_rows into rows 32 kRB .. of a row-major fp32 [kCap][kF32Pitch] scratch.
template <int kCap, int kRB>
__device__ __forceinline__ void store_rows(float* scratch, const float (&acc)[2][4 * kRB + 4][4], int lane) {
  constexpr int kPitch = ShortConfig<kCap>::kF32Pitch;
  const int group = lane >> 2, quad = lane & 3;
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int n = 0; n < 4 * kRB + 4; ++n) {
      if (!lower_pair<kRB>(m, n / 2)) continue;
      float* p = scratch + (32 * kRB + 16 * m + group) * kPitch + 8 * n + 2 * quad;
      *reinterpret_cast<float2*>(p) = make_float2(acc[m][n][0], acc[m][n][1]);
      *reinterpret_cast<float2*>(p + 8 * kPitch) = make_float2(acc[m][n][2], acc[m][n][3]);
    }
}

// Synchronises the warps of one state head (kRowBlocks of them): a warp, or a named barrier.
template <int kCap>
__device__ __forceinline__ void head_sync(int head_slot) {
  if constexpr (ShortConfig<kCap>::kRowBlocks == 1) {
    __syncwarp();
  } else {
    fast::named_barrier_sync(1 + head_slot, 32 * ShortConfig<kCap>::kRowBlocks);
  }
}

// The warp of row block kRB of one state head: O rows 32 kRB .. 32 kRB + 31 = W V, staged in shared
// memory (the own tile with one row block, where each 32-column quarter is written after its own
// products; else the warp's W block once its fragments are in registers), then to global rows < len.
// shared_products: Q K^T then K K^T (fp32 [kCap][kF32Pitch] each), computed once for all the CTA's
// state heads (GVA), or nullptr: the warp computes them from the tiles. own_in_flight: the own tile's
// cp.async group is still pending (waited for before W V).
template <InputType kType, int kCap, int kRB>
__device__ __forceinline__ void head_output(const PrefillParams& p, const void* q_tile, const void* k_tile,
                                            const void* v_tile, void* own_tile, unsigned char* scratch_bytes,
                                            const float* shared_products, const float* gates, std::int64_t bos, int len,
                                            int h, int head_slot, int lane, bool own_in_flight) {
  using Config = ShortConfig<kCap>;
  using Element = typename Operand<kType>::Element;
  constexpr int kCols = 32 * kRB + 32;  // columns j <= i of this warp's rows
  float* scratch = reinterpret_cast<float*>(scratch_bytes);
  const int i = 32 * kRB + lane;
  const float g_i = gates[i], beta_i = gates[kCap + i];
  float* my_row = scratch + i * Config::kF32Pitch;
  // Row i of P = (Q K^T) o Gamma into w; the selects (not products) keep the exponentials above
  // the diagonal out.
  // The exponentials of row i, kept for A where registers allow (one row block), else recomputed.
  constexpr bool kKeepGamma = true;
  float w[kCols], gamma[kKeepGamma ? kCols : 1];
  const float* qk_row = shared_products != nullptr ? shared_products + i * Config::kF32Pitch : my_row;
  const float* kk_row = shared_products != nullptr ? shared_products + (kCap + i) * Config::kF32Pitch : my_row;
  if (shared_products == nullptr) {
    float acc[2][4 * kRB + 4][4] = {};
    product_rows<kType, kCap, kRB>(acc, q_tile, k_tile, lane);
    store_rows<kCap, kRB>(scratch, acc, lane);
    __syncwarp();
  }
#pragma unroll
  for (int c = 0; c < kCols / 4; ++c) {
    const float4 x = reinterpret_cast<const float4*>(qk_row)[c];
    const float xv[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = 4 * c + e;
      const float gam = exp2f(g_i - gates[j]);
      if constexpr (kKeepGamma) gamma[j] = gam;
      w[j] = j <= i ? gam * xv[e] : 0.0f;
    }
  }
  // Row i of A = diag(beta) (K K^T) o Gamma (strictly lower) into this lane's scratch row.
  if (shared_products == nullptr) {
    __syncwarp();
    float acc[2][4 * kRB + 4][4] = {};
    product_rows<kType, kCap, kRB>(acc, k_tile, k_tile, lane);
    store_rows<kCap, kRB>(scratch, acc, lane);
    __syncwarp();
  }
#pragma unroll
  for (int c = 0; c < kCols / 4; ++c) {
    const float4 kk = reinterpret_cast<const float4*>(kk_row)[c];
    const float kv[4] = {kk.x, kk.y, kk.z, kk.w};
    float av[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = 4 * c + e;
      float gam;
      if constexpr (kKeepGamma) gam = gamma[j];
      else gam = exp2f(g_i - gates[j]);
      av[e] = j < i ? beta_i * gam * kv[e] : 0.0f;
    }
    reinterpret_cast<float4*>(my_row)[c] = make_float4(av[0], av[1], av[2], av[3]);
  }
  head_sync<kCap>(head_slot);  // every row of A is written
  // W (I + A) = P, right-looking: once w[t] is final, take its term out of every column j < t.
#pragma unroll
  for (int t = kCols - 1; t > 0; --t) {
    const float4* a_t = reinterpret_cast<const float4*>(scratch + t * Config::kF32Pitch);
#pragma unroll
    for (int c = 0; 4 * c < t; ++c) {
      const float4 a = a_t[c];
      const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (4 * c + e < t) w[4 * c + e] -= w[t] * av[e];
    }
  }
  head_sync<kCap>(head_slot);  // every read of A is done: W takes its place
  // W diag(beta) scale as hi + lo rows of 16-bit elements, in this row block's W block.
  Element* w_hi = reinterpret_cast<Element*>(scratch_bytes + kRB * Config::kWBlockBytes);
  Element* w_lo = w_hi + 32 * Config::kWPitch;
  {
#pragma unroll
    for (int c = 0; c < kCols / 8; ++c) {
      std::uint32_t hi[4], lo[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 8 * c + 2 * e;
        const float x0 = w[j] * gates[kCap + j] * p.scale, x1 = w[j + 1] * gates[kCap + j + 1] * p.scale;
        hi[e] = fast::pack_pair<kType>(x0, x1);
        const float2 r = fast::unpack_pair<kType>(hi[e]);
        lo[e] = fast::pack_pair<kType>(x0 - r.x, x1 - r.y);
      }
      reinterpret_cast<uint4*>(w_hi + lane * Config::kWPitch)[c] = make_uint4(hi[0], hi[1], hi[2], hi[3]);
      reinterpret_cast<uint4*>(w_lo + lane * Config::kWPitch)[c] = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    }
  }
  __syncwarp();
  // A fragments of W (local rows 16 m .., token columns 16 ks ..); blocks above the diagonal are zero.
  std::uint32_t a_hi[2][kCols / 16][4], a_lo[2][kCols / 16][4];
  {
    const std::uint32_t off = ((lane & 15) * Config::kWPitch + (lane >> 4) * 8) * 2;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int ks = 0; ks < kCols / 16; ++ks) {
        if (!lower_pair<kRB>(m, ks)) continue;
        const std::uint32_t at = (16 * m * Config::kWPitch + 16 * ks) * 2 + off;
        ldmatrix_x4(a_hi[m][ks], smem_address(w_hi) + at);
        ldmatrix_x4(a_lo[m][ks], smem_address(w_lo) + at);
      }
  }
  // V as B (token rows, transposed loads): matrices (t 0-7, d 0-7), (t 8-15, d 0-7), (t 0-7, d 8-15),
  // (t 8-15, d 8-15).
  if (own_in_flight) {  // the own tile (V) was left in flight by the item's loads
    cp_async_wait_all();
    head_sync<kCap>(head_slot);
  }
  const std::uint32_t v_base = smem_address(v_tile);
  const std::uint32_t v_off = (((lane & 7) + ((lane >> 3) & 1) * 8) * Config::kTilePitch + (lane >> 4) * 8) * 2;
  Element* staged = Config::kRowBlocks == 1 ? static_cast<Element*>(own_tile) : w_hi;
  if constexpr (Config::kRowBlocks > 1) __syncwarp();  // the W fragments are read before the block is reused
  const int group = lane >> 2, quad = lane & 3;
#pragma unroll
  for (int nq = 0; nq < 4; ++nq) {
    float acc[2][4][4] = {};
#pragma unroll
    for (int ks = 0; ks < kCols / 16; ++ks)
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        std::uint32_t b[4];
        ldmatrix_x4_trans(b, v_base + v_off + (16 * ks * Config::kTilePitch + 32 * nq + 16 * np) * 2);
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          if (!lower_pair<kRB>(m, ks)) continue;
          fast::mma_pair<kType>(acc[m][2 * np], acc[m][2 * np + 1], a_hi[m][ks], b);
          fast::mma_pair<kType>(acc[m][2 * np], acc[m][2 * np + 1], a_lo[m][ks], b);
        }
      }
    __syncwarp();  // every lane's reads of this quarter of V are done before it may be overwritten
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        Element* o = staged + (16 * m + group) * Config::kTilePitch + 32 * nq + 8 * n + 2 * quad;
        *reinterpret_cast<std::uint32_t*>(o) = fast::pack_pair<kType>(acc[m][n][0], acc[m][n][1]);
        *reinterpret_cast<std::uint32_t*>(o + 8 * Config::kTilePitch) = fast::pack_pair<kType>(acc[m][n][2], acc[m][n][3]);
      }
  }
  __syncwarp();
  Element* out = static_cast<Element*>(p.output) + h * p.out_stride_head;
#pragma unroll 4
  for (int it = 0; it < 16; ++it) {
    const int row = 2 * it + (lane >> 4), chunk = lane & 15;
    if (32 * kRB + row < len)
      *reinterpret_cast<uint4*>(out + (bos + 32 * kRB + row) * p.out_stride_token + chunk * 8) =
          *reinterpret_cast<const uint4*>(staged + row * Config::kTilePitch + chunk * 8);
  }
}

// L2 prefetch of rows [0, len) of one head of a [T, H, 128] input: one bulk prefetch per 256-byte row.
template <class Element>
__device__ __forceinline__ void prefetch_rows_l2(const void* base, std::int64_t stride_token, std::int64_t stride_head,
                                                 int head, std::int64_t bos, int len, int tid, int nthreads) {
  const Element* src0 = static_cast<const Element*>(base) + head * stride_head + bos * stride_token;
  for (int row = tid; row < len; row += nthreads)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], 256;\n" ::"l"(src0 + row * stride_token) : "memory");
}

// Every row of item (sequence n, k head g) into the L2: K, and Q and V of its state heads.
template <class Element>
__device__ __forceinline__ void prefetch_item_l2(const PrefillParams& p, int g, std::int64_t bos, int len) {
  const int r = p.num_state_heads / p.num_k_heads;
  const int tid = threadIdx.x, nthreads = blockDim.x;
  prefetch_rows_l2<Element>(p.k, p.k_stride_token, p.k_stride_head, g, bos, len, tid, nthreads);
  const bool gva = p.num_q_heads == p.num_k_heads;
  for (int i = 0; i < r; ++i) {
    if (gva ? i == 0 : true) prefetch_rows_l2<Element>(p.q, p.q_stride_token, p.q_stride_head, gva ? g : g * r + i, bos, len, tid, nthreads);
    if (gva ? true : i == 0) prefetch_rows_l2<Element>(p.v, p.v_stride_token, p.v_stride_head, gva ? g * r + i : g, bos, len, tid, nthreads);
  }
}

// Sequence n's offsets loaded (not yet used: the loads stay in flight), and its range from them.
struct RawRange {
  std::int64_t begin = 0, end = 0;
  __device__ __forceinline__ void load(const PrefillParams& p, std::int64_t n) {
    begin = read_offset(p.cu_seqlens, p.offsets_are_int64, n);
    end = read_offset(p.cu_seqlens, p.offsets_are_int64, n + 1);
  }
  // The length; invalid offsets (outside [0, T] or decreasing) make it 0.
  __device__ __forceinline__ int length(const PrefillParams& p) const {
    const bool valid = begin >= 0 && end >= begin && end <= p.total_tokens;
    const std::int64_t l = valid ? end - begin : 0;
    return l > 0x7fffffff ? 0x7fffffff : static_cast<int>(l);
  }
};

// One item: sequence [bos, bos + len) (0 < len <= kCap) and k head g; `next`: the offsets of the
// item this CTA takes next (k head next_g), prefetched into the L2 once this item's own loads have
// landed.
template <InputType kType, int kCap>
__device__ __forceinline__ void short_item(const PrefillParams& p, unsigned char* smem, int g, std::int64_t bos,
                                           int len, int next_g, const RawRange& next) {
  using Config = ShortConfig<kCap>;
  using Element = typename Operand<kType>::Element;
  const int r = p.num_state_heads / p.num_k_heads;   // state heads per k head
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slots = blockDim.x / (32 * Config::kRowBlocks), slot = warp / Config::kRowBlocks;
  const int rb = warp % Config::kRowBlocks;
  const int head_tid = rb * 32 + lane, head_threads = 32 * Config::kRowBlocks;
  // GVA (Hq == Hk): the state heads share q and k; GQA: they share k and v.
  const bool gva = p.num_q_heads == p.num_k_heads;
  Element* k_tile = reinterpret_cast<Element*>(smem);
  Element* shared_tile = reinterpret_cast<Element*>(smem + Config::kTileBytes);
  unsigned char* mine = smem + 2 * Config::kTileBytes + slot * Config::kHeadBytes;
  Element* own_tile = reinterpret_cast<Element*>(mine);
  unsigned char* scratch = mine + Config::kTileBytes;
  float* gates = reinterpret_cast<float*>(scratch + Config::kScratchBytes + rb * Config::kGateBytes);

  load_tile<kCap>(k_tile, p.k, p.k_stride_token, p.k_stride_head, g, bos, len, threadIdx.x, blockDim.x);
  if (gva) load_tile<kCap>(shared_tile, p.q, p.q_stride_token, p.q_stride_head, g, bos, len, threadIdx.x, blockDim.x);
  else load_tile<kCap>(shared_tile, p.v, p.v_stride_token, p.v_stride_head, g, bos, len, threadIdx.x, blockDim.x);
  const auto load_own = [&](int h) {
    if (gva) load_tile<kCap>(own_tile, p.v, p.v_stride_token, p.v_stride_head, h, bos, len, head_tid, head_threads);
    else load_tile<kCap>(own_tile, p.q, p.q_stride_token, p.q_stride_head, h, bos, len, head_tid, head_threads);
  };
  const int first = g * r;
  // 64-token items, GVA: K and Q in one cp.async group, the slot's own V in the next, so the products
  // start while V is still in flight (head_output waits for it before W V). H200 pshort batch 4:
  // 4096x64 16/64 8.15 -> 7.52-7.75 ms; with 32-token items it lost (8192x32 16/64 3.49 -> 3.64 ms).
  const bool early_products = Config::kRowBlocks > 1 && gva;
  if (early_products) cp_async_commit();
  if (slot < r) load_own(first + slot);
  cp_async_commit();
  if (slot < r) load_gates<kCap>(gates, p, bos, len, first + slot, lane);
  if (early_products) asm volatile("cp.async.wait_group 1;\n" ::: "memory");
  else cp_async_wait_all();
  __syncthreads();
  if (const int next_len = next.length(p); next_len > 0 && next_len <= kCap)
    prefetch_item_l2<Element>(p, next_g, next.begin, next_len);
  if (p.use_qk_l2norm) {
    l2_normalise_rows<kType, kCap>(k_tile, threadIdx.x, blockDim.x);
    if (gva) l2_normalise_rows<kType, kCap>(shared_tile, threadIdx.x, blockDim.x);
    __syncthreads();
  }
  // GVA: Q K^T and K K^T are the same for every state head, so they are computed once, into the
  // place of the Q and K tiles (which nothing reads afterwards): with one row block by the first
  // two warps; with two row blocks by four warps (matrix warp / 2, row block warp % 2) when the
  // CTA serves two heads at a time (else each warp computes its own).
  const float* shared_products = nullptr;
  static_assert(2 * kCap * Config::kF32Pitch * 4 <= 2 * Config::kTileBytes, "products in the tiles' place");
  float* products = reinterpret_cast<float*>(smem);
  if constexpr (Config::kRowBlocks == 1) {
    if (gva) {
      float qk[2][4][4] = {}, kk[2][4][4] = {};
      if (warp == 0) product_rows<kType, kCap, 0>(qk, shared_tile, k_tile, lane);
      if (warp == 0 && slots == 1) product_rows<kType, kCap, 0>(kk, k_tile, k_tile, lane);
      if (warp == 1) product_rows<kType, kCap, 0>(kk, k_tile, k_tile, lane);
      __syncthreads();  // every read of the Q and K tiles is done
      if (warp == 0) store_rows<kCap, 0>(products, qk, lane);
      if (warp == (slots == 1 ? 0 : 1)) store_rows<kCap, 0>(products + kCap * Config::kF32Pitch, kk, lane);
      __syncthreads();
      shared_products = products;
    }
  } else {
    if (gva && slots == 2) {
      const void* a_tile = warp < 2 ? shared_tile : k_tile;
      float* dst = products + (warp < 2 ? 0 : kCap * Config::kF32Pitch);
      float acc0[2][4][4] = {}, acc1[2][8][4] = {};
      if (rb == 0) product_rows<kType, kCap, 0>(acc0, a_tile, k_tile, lane);
      else product_rows<kType, kCap, 1>(acc1, a_tile, k_tile, lane);
      __syncthreads();  // every read of the Q and K tiles is done
      if (rb == 0) store_rows<kCap, 0>(dst, acc0, lane);
      else store_rows<kCap, 1>(dst, acc1, lane);
      __syncthreads();
      shared_products = products;
    }
  }
  for (int i = slot; i < r; i += slots) {
    const int h = first + i;
    const bool own_in_flight = early_products && i == slot;  // the first round's V
    if (i != slot) {  // a later round: this slot's next own tile and gates
      head_sync<kCap>(slot);  // the slot's warps are done with the last head's tile and scratch
      load_own(h);
      cp_async_commit();
      load_gates<kCap>(gates, p, bos, len, h, lane);
      cp_async_wait_all();
      head_sync<kCap>(slot);
    }
    if (p.use_qk_l2norm && !gva) {
      l2_normalise_rows<kType, kCap>(own_tile, head_tid, head_threads);
      head_sync<kCap>(slot);
    }
    const void* q_tile = gva ? shared_tile : own_tile;
    const void* v_tile = gva ? own_tile : shared_tile;
    if (rb == 0) {
      head_output<kType, kCap, 0>(p, q_tile, k_tile, v_tile, own_tile, scratch, shared_products, gates, bos, len, h,
                                  slot, lane, own_in_flight);
    } else if constexpr (Config::kRowBlocks > 1) {
      head_output<kType, kCap, 1>(p, q_tile, k_tile, v_tile, own_tile, scratch, shared_products, gates, bos, len, h,
                                  slot, lane, own_in_flight);
    }
  }
}

// Persistent CTAs over the items (sequence n, k head g), item = n Hk + g, CTA b taking items b,
// b + gridDim.x, ...; 32 * kRowBlocks * min(Hsab / Hk, kMaxHeads) threads,
// ShortConfig::smem_bytes(heads) bytes of dynamic shared memory. Empty sequences and those longer
// than kCap (the serial kernel's) are skipped.
template <InputType kType, int kCap>
__global__ void __launch_bounds__(128) gdn_prefill_short_kernel(const __grid_constant__ PrefillParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const std::int64_t items = static_cast<std::int64_t>(p.num_seqs) * p.num_k_heads;
  RawRange cur;
  if (blockIdx.x < items) cur.load(p, blockIdx.x / p.num_k_heads);
  for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::int64_t next_item = item + gridDim.x;
    RawRange next;  // zeros: no next item
    if (next_item < items) next.load(p, next_item / p.num_k_heads);
    if (const int len = cur.length(p); len > 0 && len <= kCap) {
      short_item<kType, kCap>(p, smem, static_cast<int>(item % p.num_k_heads), cur.begin, len,
                              static_cast<int>(next_item % p.num_k_heads), next);
      __syncthreads();  // the next item's loads overwrite the tiles
    }
    cur = next;
  }
}

}  // namespace fastinfer::gdn::kernels::short_seq
