#pragma once
// CP stage 2, the mma.sync kernels' pieces (CpStageParams::wgmma_maps false; chunk_maps_kernel in
// cp_chunk_maps_sm90.cuh): their shared-memory tiles, and the per-warp block products and row
// composition of the fp16-operand variant. Numerics in cp_chunk_maps_sm90.cuh and docs/GDN_CP.md.
#include "gdn/kernels/cp_common_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

// E: the input type; KE: the type of K, T and A in the products (E, or fp16 with kFp16Operands).
template <class E, class KE, bool kPrefetch>
struct ChunkMapsSmem {
  // Paddings keep the MMA fragment loads bank-conflict free (rows 144 B / 272 B apart).
  alignas(16) KE k[kC][kD + 8];     // K, [token][dim] (B operands via ldmatrix.trans)
  alignas(16) E v[kC][kD + 8];      // V, [token][dim]
  alignas(16) float tinv[kC * kC];  // the block's Tinv, staged by cp.async
  alignas(16) KE t_k[2][kC][kC + 8];  // T = Tinv diag(beta), hi and lo (fp16 operands: [0] only)
  alignas(16) E t_v[2][kC][kC + 8];   // T diag(exp(gL - G)), hi and lo
  alignas(16) KE a[2][kC][kD + 8];    // A = T K, [token][dim], hi and lo (fp16 operands: [0] only)
  alignas(16) float ud_t[kD][kC + 1];  // Ud transposed, fp32
  float gates[kC], beta[kC];
  // kPrefetch: the next block's K and V rows as loaded (cp.async behind the current block's work).
  alignas(16) E k_raw[kPrefetch ? kC : 1][kD];
  alignas(16) E v_raw[kPrefetch ? kC : 1][kD];
  float alpha_raw[kPrefetch ? kC : 1], beta_raw[kPrefetch ? kC : 1];  // its gates (cp.async, 4 bytes)
};

// Element (r, c) of the padded K and A tiles of the mma.sync kernels.
template <class E, class KE, bool kPrefetch>
__device__ inline KE* k_at(ChunkMapsSmem<E, KE, kPrefetch>& s, int r, int c) { return &s.k[r][c]; }
template <class E, class KE, bool kPrefetch>
__device__ inline const KE* k_at(const ChunkMapsSmem<E, KE, kPrefetch>& s, int r, int c) { return &s.k[r][c]; }
template <class E, class KE, bool kPrefetch>
__device__ inline KE* a_at(ChunkMapsSmem<E, KE, kPrefetch>& s, int r, int c) { return &s.a[0][r][c]; }

// The m16n8k16 A fragment of two adjacent 16x8 fp32 C tiles (k columns 0-7 in `left`, 8-15 in
// `right`; C-fragment == A-fragment layout) as hi = round(x) and lo = round(x - hi).
template <class In>
__device__ inline void split_a_fragment(const float (&left)[4], const float (&right)[4], std::uint32_t (&hi)[4],
                                        std::uint32_t (&lo)[4]) {
  auto split = [](float x0, float x1, std::uint32_t& h, std::uint32_t& l) {
    const float h0 = In::to_float(In::from_float(x0)), h1 = In::to_float(In::from_float(x1));
    h = In::pack(h0, h1);
    l = In::pack(x0 - h0, x1 - h1);
  };
  split(left[0], left[1], hi[0], lo[0]);
  split(left[2], left[3], hi[1], lo[1]);
  split(right[0], right[1], hi[2], lo[2]);
  split(right[2], right[3], hi[3], lo[3]);
}

// kFp16Operands, block products: warp w computes rows 16 (w % 4).. of A = T K (T and K fp16, one
// MMA) and Ud = T diag(exp(gL - G)) V (T hi + lo in the input type, V exact: two MMAs) for the
// head-dim quarter w / 4 (32 columns), so the 16 warps share both products evenly.
template <class In, class Smem>
__device__ inline void block_products_fp16(Smem& s, int warp, int lane) {
  using Op = Input<CpInputType::kFloat16>;
  const int mt = warp % 4, col0 = (warp / 4) * 32, g = lane / 4, t = lane % 4;
  {  // Ud
    float o[4][4] = {};
    std::uint32_t a[2][4][4];
#pragma unroll
    for (int part = 0; part < 2; ++part)
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int row = mt * 16 + g, col = ks * 16 + 2 * t;
        a[part][ks][0] = lds_pair(&s.t_v[part][row][col]);
        a[part][ks][1] = lds_pair(&s.t_v[part][row + 8][col]);
        a[part][ks][2] = lds_pair(&s.t_v[part][row][col + 8]);
        a[part][ks][3] = lds_pair(&s.t_v[part][row + 8][col + 8]);
      }
#pragma unroll
    for (int ntp = 0; ntp < 2; ++ntp)
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        std::uint32_t b[4];
        load_b_pair_trans(&s.v[ks * 16][col0 + ntp * 16], kD + 8, lane, b);
#pragma unroll
        for (int part = 0; part < 2; ++part) {
          In::mma(o[2 * ntp], a[part][ks], b[0], b[1]);
          In::mma(o[2 * ntp + 1], a[part][ks], b[2], b[3]);
        }
      }
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s.ud_t[col0 + nt * 8 + 2 * t + (e % 2)][mt * 16 + g + (e / 2) * 8] = o[nt][e];
  }
  __syncwarp();
  {  // A
    float o[4][4] = {};
    std::uint32_t a[4][4];
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      const int row = mt * 16 + g, col = ks * 16 + 2 * t;
      a[ks][0] = lds_pair(&s.t_k[0][row][col]);
      a[ks][1] = lds_pair(&s.t_k[0][row + 8][col]);
      a[ks][2] = lds_pair(&s.t_k[0][row][col + 8]);
      a[ks][3] = lds_pair(&s.t_k[0][row + 8][col + 8]);
    }
#pragma unroll
    for (int ntp = 0; ntp < 2; ++ntp)
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        std::uint32_t b[4];
        ldsm_x4_trans(k_at(s, ks * 16 + lane % 16, col0 + ntp * 16 + (lane / 16) * 8), b);
        Op::mma(o[2 * ntp], a[ks], b[0], b[1]);
        Op::mma(o[2 * ntp + 1], a[ks], b[2], b[3]);
      }
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        *a_at(s, mt * 16 + g + (e / 2) * 8, col0 + nt * 8 + 2 * t + (e % 2)) = Op::from_float(o[nt][e]);
  }
}

// kFp16Operands, one 16-row tile of [M; B] (rows r0.., fp32 accumulators `acc` in the m16n8k16
// C layout over the 128 columns) composed with the block:
//     rows <- exp(gL) rows + Z K,   Z = [0; Ud^T] - exp(gL) rows A^T
// rows and Z go to the MMAs rounded once to fp16 after a power-of-two scale per row (Y = rows A^T
// comes out in the rows' scale and is scaled back; Z K is accumulated onto the rows scaled by Z's
// scale, then the row is scaled back). Z's scale is taken over Z and exp(gL) rows together, so
// the scaled accumulators cannot overflow either.
template <class Smem>
__device__ inline void compose_rows_fp16(const Smem& s, float (&acc)[16][4], float decay, bool rows_of_b, int r0,
                                         int lane) {
  using Op = Input<CpInputType::kFloat16>;
  const int g = lane / 4, t = lane % 4;
  float row_max[2];  // rows g and g + 8
  tile_row_max(acc, row_max);
  const float rs[2] = {fp16_row_scale(row_max[0]), fp16_row_scale(row_max[1])};

  float y[8][4] = {};
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    __syncwarp();  // one k-step at a time (the 8-warp version spilled without it: ptxas hoisted the next steps' loads)
    const float(&l)[4] = acc[2 * ks];
    const float(&r)[4] = acc[2 * ks + 1];
    const std::uint32_t x[4] = {Op::pack(l[0] * rs[0], l[1] * rs[0]), Op::pack(l[2] * rs[1], l[3] * rs[1]),
                                Op::pack(r[0] * rs[0], r[1] * rs[0]), Op::pack(r[2] * rs[1], r[3] * rs[1])};
#pragma unroll
    for (int ntp = 0; ntp < 4; ++ntp) {  // A^T's fragments straight from A's rows: one ldmatrix per two tiles
      std::uint32_t b[4];
      load_b_pair(&s.a[0][ntp * 16][ks * 16], kD + 8, lane, b);
      Op::mma(y[2 * ntp], x, b[0], b[1]);
      Op::mma(y[2 * ntp + 1], x, b[2], b[3]);
    }
  }
  __syncwarp();  // keeps Y's MMAs apart from Z's build (the 8-warp version spilled more without it)
  // Z in place of Y (fp32), and its scale.
  const float y_back[2] = {decay * inverse_pow2(rs[0]), decay * inverse_pow2(rs[1])};
  float z_max[2] = {decay * row_max[0], decay * row_max[1]};
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float ud = rows_of_b ? s.ud_t[r0 + g + (e / 2) * 8][nt * 8 + 2 * t + (e % 2)] : 0.f;
      y[nt][e] = ud - y_back[e / 2] * y[nt][e];
      z_max[e / 2] = fmaxf(z_max[e / 2], fabsf(y[nt][e]));
    }
  const float zs[2] = {fp16_row_scale(quad_max(z_max[0])), fp16_row_scale(quad_max(z_max[1]))};
  const float acc_scale[2] = {decay * zs[0], decay * zs[1]};
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] *= acc_scale[e / 2];
#pragma unroll
  for (int kc = 0; kc < 4; ++kc) {
    const float(&l)[4] = y[2 * kc];
    const float(&r)[4] = y[2 * kc + 1];
    const std::uint32_t z[4] = {Op::pack(l[0] * zs[0], l[1] * zs[0]), Op::pack(l[2] * zs[1], l[3] * zs[1]),
                                Op::pack(r[0] * zs[0], r[1] * zs[0]), Op::pack(r[2] * zs[1], r[3] * zs[1])};
#pragma unroll
    for (int ntp = 0; ntp < 8; ++ntp) {
      std::uint32_t b[4];
      load_b_pair_trans(&s.k[kc * 16][ntp * 16], kD + 8, lane, b);
      Op::mma(acc[2 * ntp], z, b[0], b[1]);
      Op::mma(acc[2 * ntp + 1], z, b[2], b[3]);
    }
  }
  const float back[2] = {inverse_pow2(zs[0]), inverse_pow2(zs[1])};
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] *= back[e / 2];
}

}  // namespace fastinfer::gdn::detail::cp
