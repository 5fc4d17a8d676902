#pragma once
// CP stage 2, wgmma variant of the fp16-operand kernel (CpStageParams::wgmma_maps, the default;
// issue 6, docs/GDN_CP.md "Stages and kernels" and Measured, session 5). Same roundings as
// block_products_fp16 / compose_rows_fp16 (T, A, [M; B] and Z once to fp16, [M; B] and Z rows
// scaled by a power of two, T diag(exp(gL - G)) as hi + lo against V), every product a warpgroup
// MMA. Warpgroup w (warps 4w..4w+3) owns 64 rows of [M; B]; per 64-token block:
//     A  = T K, Ud = T_g V   wgmma m64n32k16 from shared memory, head-dim columns 32 w..
//     Y  = rows A^T          wgmma m64n64k16, rows as the register A operand (the m16n8k16
//                            A-fragment layout the accumulators already have), A K-major
//     acc += Z K             wgmma m64n128k16, Z in registers, K MN-major
// K, V, A and T live in core-matrix tiles (CoreTile). Same k16 steps in the same order as the
// mma.sync kernel: the H200 gives the same bits (GPU test WgmmaChunkMapsAgreeWithMmaSync).
#include <cuda_fp16.h>

#include <cstdint>
#include <cute/arch/mma_sm90_gmma.hpp>
#include <utility>

#include "gdn/kernels/cp_common_sm90.cuh"
#include "gdn/kernels/wgmma_fences_sm90.cuh"

namespace fastinfer::gdn::detail::cp {

// A [64 rows][kCols] 16-bit tile as wgmma's core matrices (no swizzle): 8 x 8 blocks of 128
// contiguous bytes (row r % 8 at 16 r bytes, element c % 8 at 2 c), column blocks kColBlock bytes
// apart, row blocks kRowBlock apart. A tile of [token][dim] is both the K-major operand
// [n = token][k = dim] (SBO = row-block, LBO = column-block stride: A in Y = rows A^T) and the
// MN-major operand [k = token][n = dim] (SBO = column-block, LBO = row-block stride: K in A = T K
// and Z K, V in Ud); T [token][token] is the K-major A operand of A = T K and Ud. Every ldmatrix
// matrix, MMA fragment store and wgmma read is one whole core matrix (conflict-free); a row stored
// by one warp spreads over blocks 144 bytes apart (2-way conflicts; 128 apart would be 16-way).
// Offsets are affine in the block indices, so unrolled loops address with immediates (a swizzled
// tile's per-lane XORs cost ~500 bytes of spills around the pinned wgmma accumulators).
template <int kCols>
struct CoreTile {
  static constexpr int kColBlock = 144;
  static constexpr int kRowBlock = (kCols / 8) * kColBlock;
  alignas(16) unsigned char bytes[(kC / 8) * kRowBlock];
  __device__ static int offset(int r, int c) {  // in bytes
    return (r / 8) * kRowBlock + (c / 8) * kColBlock + (r % 8) * 16 + (c % 8) * 2;
  }
  template <class T = __half>
  __device__ T* at(int r, int c) { return reinterpret_cast<T*>(bytes + offset(r, c)); }
  template <class T = __half>
  __device__ const T* at(int r, int c) const { return reinterpret_cast<const T*>(bytes + offset(r, c)); }
};
using CoreMatrixTile = CoreTile<kD>;

// Shared memory of the wgmma variant: the fp16 kernel's tiles, K, V, A and the T tiles as
// core-matrix tiles.
template <class E, bool kPrefetch>
struct ChunkMapsWgmmaSmem {
  CoreTile<kD> k;      // K, [token][dim], fp16
  CoreTile<kD> a;      // A = T K, [token][dim], fp16
  CoreTile<kD> v;      // V, [token][dim], E
  CoreTile<kC> t_k;    // T = Tinv diag(beta), fp16
  CoreTile<kC> t_v[2];  // T diag(exp(gL - G)), hi and lo, E
  alignas(16) float tinv[kC * kC];     // the block's Tinv, staged by cp.async
  // Ud transposed, fp32, [dim][token]; rows 72 floats apart: the composition reads a token pair
  // per 8-byte load, conflict-free per half warp (ncu 1x32k: the Z build was ~20 % of the stall samples).
  alignas(16) float ud_t[kD][kC + 8];
  float gates[kC], beta[kC];
  alignas(16) E k_raw[kPrefetch ? kC : 1][kD];
  alignas(16) E v_raw[1][kD];  // unused: the prefetch copies V straight into its tile
  float alpha_raw[kPrefetch ? kC : 1], beta_raw[kPrefetch ? kC : 1];
};

// Shared-memory matrix descriptor of a core-matrix (non-swizzled) operand: K-major, LBO = the
// distance of the two 8-element k halves, SBO = of 8-row groups; MN-major, LBO = of 8-k groups,
// SBO = of 8-element MN groups.
__device__ inline std::uint64_t core_desc(std::uint32_t smem_addr, std::uint32_t lbo_bytes, std::uint32_t sbo_bytes) {
  return static_cast<std::uint64_t>((smem_addr >> 4) & 0x3FFF) |
         (static_cast<std::uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16) |
         (static_cast<std::uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32);
}

template <class Op, int kTiles, int... I>
__device__ __forceinline__ void wgmma_rs(const std::uint32_t (&a)[4], std::uint64_t desc, float (&d)[kTiles][4],
                                         std::integer_sequence<int, I...>,
                                         cute::SM90::GMMA::ScaleOut scale_d = cute::SM90::GMMA::ScaleOut::One) {
  Op::fma(a[0], a[1], a[2], a[3], desc, d[I / 4][I % 4]..., scale_d);
}

template <class Op, int... I>
__device__ __forceinline__ void wgmma_ss(std::uint64_t desc_a, std::uint64_t desc_b, float (&d)[4][4],
                                         std::integer_sequence<int, I...>, cute::SM90::GMMA::ScaleOut scale_d) {
  Op::fma(desc_a, desc_b, d[I / 4][I % 4]..., scale_d);
}

template <class E>
struct WgmmaN32;  // m64n32k16, A K-major and B MN-major from shared memory
template <>
struct WgmmaN32<__half> {
  using Op = cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::MN>;
};
template <>
struct WgmmaN32<__nv_bfloat16> {
  using Op = cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::MN>;
};

// Block products as wgmma: warpgroup w computes head-dim columns 32 w.. of
//     A  = T K                     (fp16 x fp16, 4 k16 steps)
//     Ud = T diag(exp(gL - G)) V   (hi and lo in the input type x V, 8 k16 steps)
// for all 64 token rows, A into its tile (fp16) and Ud transposed (fp32). Same operands and
// roundings as block_products_fp16; only the fp32 summation order differs.
// k: the block's K tile (s.k, or one of the ready-tile kernel's two K buffers).
template <class In, class Smem>
__device__ inline void block_products_wgmma(Smem& s, const CoreMatrixTile& k, int warp, int lane) {
  using E = typename In::T;
  using Op = Input<CpInputType::kFloat16>;
  using TileT = CoreTile<kC>;
  const int col0 = (warp / 4) * 32, row = (warp % 4) * 16 + lane / 4, t = lane % 4;
  // K-major T (A operand): k16 step = 2 column blocks (LBO one column block), 8-row groups at SBO.
  auto t_desc = [](const TileT& tile, int ks) {
    return core_desc(smem_address_of(tile.bytes) + 2 * ks * TileT::kColBlock, TileT::kColBlock, TileT::kRowBlock);
  };
  // MN-major K / V (B operand): k16 step = 2 row blocks (LBO one row block), 8-dim groups at SBO.
  auto kv_desc = [&](const CoreMatrixTile& tile, int ks) {
    return core_desc(smem_address_of(tile.bytes) + 2 * ks * CoreMatrixTile::kRowBlock + (col0 / 8) * CoreMatrixTile::kColBlock,
                     CoreMatrixTile::kRowBlock, CoreMatrixTile::kColBlock);
  };
  using cute::SM90::GMMA::ScaleOut;
  float a_acc[4][4], ud[4][4];  // no zero fill (the first product overwrites): it would be hoisted
  fence_operands(a_acc);
  fence_operands(ud);
  cute::warpgroup_arrive();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
    wgmma_ss<typename WgmmaN32<__half>::Op>(t_desc(s.t_k, ks), kv_desc(k, ks), a_acc, std::make_integer_sequence<int, 16>{},
                                            ks == 0 ? ScaleOut::Zero : ScaleOut::One);
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
#pragma unroll
    for (int part = 0; part < 2; ++part)
      wgmma_ss<typename WgmmaN32<E>::Op>(t_desc(s.t_v[part], ks), kv_desc(s.v, ks), ud, std::make_integer_sequence<int, 16>{},
                                         ks + part == 0 ? ScaleOut::Zero : ScaleOut::One);
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(a_acc);
  fence_operands(ud);
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row + h * 8, c = col0 + nt * 8 + 2 * t;
      *s.a.template at<std::uint32_t>(r, c) = Op::pack(a_acc[nt][2 * h], a_acc[nt][2 * h + 1]);
      s.ud_t[c][r] = ud[nt][2 * h];
      s.ud_t[c + 1][r] = ud[nt][2 * h + 1];
    }
}

// compose_rows_fp16 for a warpgroup's 64 rows (this warp's 16-row tile in `acc`, the same scales
// and roundings): Y = rows A^T and acc += Z K as wgmma. All four warps of the warpgroup call it.
// The rows are held as acc x held (held[h] a power of two for rows g + 8 h, 1 at the start): the
// composition leaves them in Z's scale and sets held = 1 / zs instead of multiplying the 64
// accumulators back every block (compose_rows_fp16's last loop); every scale is folded into the
// power-of-two multipliers, so the products are those of compose_rows_fp16 exactly (in fp32's
// normal range). The caller multiplies by held once at the end.
template <class Smem>
__device__ inline void compose_rows_wgmma(const Smem& s, const CoreMatrixTile& k, float (&acc)[16][4], float (&held)[2],
                                          float decay, bool rows_of_b, int r0, int lane) {
  using Y64 = cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
  using Z128 = cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::MN>;
  using Op = Input<CpInputType::kFloat16>;
  const int g = lane / 4, t = lane % 4;
  float row_max[2];  // rows g and g + 8
  tile_row_max(acc, row_max);
  row_max[0] *= held[0], row_max[1] *= held[1];  // of the rows themselves
  const float rs[2] = {fp16_row_scale(row_max[0]), fp16_row_scale(row_max[1])};
  const float acc_rs[2] = {rs[0] * held[0], rs[1] * held[1]};  // acc to the rows' fp16 scale

  const std::uint32_t a_tile = smem_address_of(s.a.bytes), k_tile = smem_address_of(k.bytes);
  // Y starts from the first product (scale-d 0): zero-filled accumulators would be hoisted out of
  // the block loop by the compiler and hold 32 registers through it.
  float y[8][4];
  // Y one k16 step (16 head-dim columns) per wgmma, each waited for before the next fragment is
  // built: 4 fragment registers live (acc 64 + Y 32 in aligned blocks leave little room in 128).
  // H200 1x128k (cp7 batch 2): all eight fragments first, one batch: 3.26 ms (332 bytes of
  // spills); two fragments double-buffered: 3.04 ms; one at a time: 2.94 ms.
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    std::uint32_t f[4];
    const float(&l)[4] = acc[2 * ks];
    const float(&r)[4] = acc[2 * ks + 1];
    f[0] = Op::pack(l[0] * acc_rs[0], l[1] * acc_rs[0]);
    f[1] = Op::pack(l[2] * acc_rs[1], l[3] * acc_rs[1]);
    f[2] = Op::pack(r[0] * acc_rs[0], r[1] * acc_rs[0]);
    f[3] = Op::pack(r[2] * acc_rs[1], r[3] * acc_rs[1]);
    fence_operands(y);
    cute::warpgroup_arrive();
    // k16 step ks = dim blocks 2 ks, 2 ks + 1 (LBO one dim block); 8 token blocks (SBO).
    wgmma_rs<Y64>(f, core_desc(a_tile + 2 * ks * CoreMatrixTile::kColBlock, CoreMatrixTile::kColBlock, CoreMatrixTile::kRowBlock), y,
                  std::make_integer_sequence<int, 32>{},
                  ks == 0 ? cute::SM90::GMMA::ScaleOut::Zero : cute::SM90::GMMA::ScaleOut::One);
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<0>();  // the fragment registers are free again
    fence_operands(y);
  }
  // Z in place of Y (fp32), and its scale.
  const float y_back[2] = {decay * inverse_pow2(rs[0]), decay * inverse_pow2(rs[1])};
  float z_max[2] = {decay * row_max[0], decay * row_max[1]};
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    float2 u[2] = {make_float2(0.f, 0.f), make_float2(0.f, 0.f)};
    if (rows_of_b)
#pragma unroll
      for (int h = 0; h < 2; ++h) u[h] = *reinterpret_cast<const float2*>(&s.ud_t[r0 + g + h * 8][nt * 8 + 2 * t]);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float ud = e % 2 ? u[e / 2].y : u[e / 2].x;
      y[nt][e] = ud - y_back[e / 2] * y[nt][e];
      z_max[e / 2] = fmaxf(z_max[e / 2], fabsf(y[nt][e]));
    }
  }
  const float zs[2] = {fp16_row_scale(quad_max(z_max[0])), fp16_row_scale(quad_max(z_max[1]))};
  const float acc_scale[2] = {decay * zs[0] * held[0], decay * zs[1] * held[1]};
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] *= acc_scale[e / 2];
  std::uint32_t z[4][4];
#pragma unroll
  for (int kc = 0; kc < 4; ++kc) {
    const float(&l)[4] = y[2 * kc];
    const float(&r)[4] = y[2 * kc + 1];
    z[kc][0] = Op::pack(l[0] * zs[0], l[1] * zs[0]);
    z[kc][1] = Op::pack(l[2] * zs[1], l[3] * zs[1]);
    z[kc][2] = Op::pack(r[0] * zs[0], r[1] * zs[0]);
    z[kc][3] = Op::pack(r[2] * zs[1], r[3] * zs[1]);
  }
  fence_operands(acc);
  cute::warpgroup_arrive();
#pragma unroll
  for (int kc = 0; kc < 4; ++kc)  // k16 step kc = token blocks 2 kc, 2 kc + 1 (LBO); 16 dim blocks (SBO)
    wgmma_rs<Z128>(z[kc], core_desc(k_tile + 2 * kc * CoreMatrixTile::kRowBlock, CoreMatrixTile::kRowBlock, CoreMatrixTile::kColBlock), acc,
                   std::make_integer_sequence<int, 64>{});
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  fence_operands(acc);
  held[0] = inverse_pow2(zs[0]), held[1] = inverse_pow2(zs[1]);  // acc is in Z's scale now
}

}  // namespace fastinfer::gdn::detail::cp
