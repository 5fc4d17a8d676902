#pragma once
// The tensor-core products of a chunk that do not depend on the state, shared by the producer
// warpgroup (A0 and P when it solves T) and the consumer warps (P when T was loaded).
#include <cstdint>

#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"

namespace fastinfer::gdn::kernels::fast {

// acc[16 rows][16 np .. 16 np + 15] = rows 16 block .. +15 of `a` times K^T (swizzled q / k tiles) for the column pairs
// np in [np_first, np_last] (at most the diagonal block); other tiles of acc are left as they are.
template <InputType kType, class Element>
__device__ __forceinline__ void rows_times_k(float (&acc)[8][4], const Element* a, const Element* k, int block,
                                             int np_first, int np_last, int lane) {
  using Cfg = FastConfig;
  const int mat = lane / 8, row = lane % 8;
  // A (row-major, non-transposed): matrix mat covers rows +8 (mat % 2), cols +8 (mat / 2).
  const int a_row = 16 * block + row + 8 * (mat % 2), a_col = 8 * (mat / 2);
  // B (rows j of K as [n][k]): matrix mat covers n +8 (mat / 2), k +8 (mat % 2).
  const int b_row = row + 8 * (mat / 2), b_col = 8 * (mat % 2);
  zero(acc);
#pragma unroll
  for (int kb = 0; kb < Cfg::kDim / 16; ++kb) {
    std::uint32_t fa[4];
    ldmatrix_x4(fa, smem_address(a + swizzled_d(a_row, a_col + 16 * kb)));
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      if (np >= np_first && np <= np_last) {
        std::uint32_t b[4];
        ldmatrix_x4(b, smem_address(k + swizzled_d(b_row + 16 * np, b_col + 16 * kb)));
        mma_pair<kType>(acc[2 * np], acc[2 * np + 1], fa, b);
      }
    }
  }
}

// Rows of `block` of P = (Q K^T) o Gamma from acc (the m16n8 tiles of 16 rows x 64 columns), column
// pairs [np_first, np_last]: row t times q's scale (FastGates::kQScale), rounded, zero above the
// diagonal, into the stage's P tile.
template <InputType kType>
__device__ __forceinline__ void store_p_rows(const float (&acc)[8][4], unsigned char* stage, int block, int np_first,
                                             int np_last, int lane, int p_offset = FastSmem::kP) {
  using Element = typename Operand<kType>::Element;
  Element* p_tile = reinterpret_cast<Element*>(stage + p_offset);
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const int g = lane / 4, quad = lane % 4;
  // Element pairs (j, j + 1) of a row are adjacent in the accumulator: one 32-bit store each.
  float g_row[2], q_scale[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    g_row[h] = gates[FastGates::kG + 16 * block + g + 8 * h];
    q_scale[h] = gates[FastGates::kQScale + 16 * block + g + 8 * h];
  }
#pragma unroll
  for (int n = 0; n < 8; ++n)
    if (n / 2 >= np_first && n / 2 <= np_last) {
      const int j = 8 * n + 2 * quad;
      const float2 g_col = *reinterpret_cast<const float2*>(gates + FastGates::kG + j);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int t = 16 * block + g + 8 * h;
        const float v0 = j <= t ? acc[n][2 * h] * q_scale[h] * __expf(g_row[h] - g_col.x) : 0.0f;
        const float v1 = j + 1 <= t ? acc[n][2 * h + 1] * q_scale[h] * __expf(g_row[h] - g_col.y) : 0.0f;
        *reinterpret_cast<std::uint32_t*>(p_tile + swizzled_c(t, j)) = pack_pair<kType>(v0, v1);
      }
    }
}

// store_p_rows of all column blocks c <= block with Gamma off the diagonal block from the
// producer's tables (FastConfig::kPDecayTables): rowq[c][t] colf[j], no exponential there.
template <InputType kType>
__device__ __forceinline__ void store_p_rows_tables(const float (&acc)[8][4], unsigned char* stage, int block, int lane,
                                                    int p_offset) {
  using Element = typename Operand<kType>::Element;
  Element* p_tile = reinterpret_cast<Element*>(stage + p_offset);
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const int g = lane / 4, quad = lane % 4;
  float g_row[2], q_scale[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    g_row[h] = gates[FastGates::kG + 16 * block + g + 8 * h];
    q_scale[h] = gates[FastGates::kQScale + 16 * block + g + 8 * h];
  }
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const int c = n / 2, j = 8 * n + 2 * quad;
    if (c < block) {  // every j <= t
      const float2 col = *reinterpret_cast<const float2*>(gates + FastGates::kColF + j);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int t = 16 * block + g + 8 * h;
        const float row = gates[FastGates::kRowQ + 64 * c + t];
        *reinterpret_cast<std::uint32_t*>(p_tile + swizzled_c(t, j)) =
            pack_pair<kType>(acc[n][2 * h] * row * col.x, acc[n][2 * h + 1] * row * col.y);
      }
    } else if (c == block) {
      const float2 g_col = *reinterpret_cast<const float2*>(gates + FastGates::kG + j);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int t = 16 * block + g + 8 * h;
        const float v0 = j <= t ? acc[n][2 * h] * q_scale[h] * __expf(g_row[h] - g_col.x) : 0.0f;
        const float v1 = j + 1 <= t ? acc[n][2 * h + 1] * q_scale[h] * __expf(g_row[h] - g_col.y) : 0.0f;
        *reinterpret_cast<std::uint32_t*>(p_tile + swizzled_c(t, j)) = pack_pair<kType>(v0, v1);
      }
    }
  }
}

// P rows of `block`, column pairs [np_first, np_last]: (Q K^T) o Gamma, rounded, zero above the
// diagonal.
template <InputType kType>
__device__ __forceinline__ void compute_p(unsigned char* stage, int block, int np_first, int np_last, int lane) {
  using Element = typename Operand<kType>::Element;
  const Element* q = reinterpret_cast<const Element*>(stage + FastSmem::kQ);
  const Element* k = reinterpret_cast<const Element*>(stage + FastSmem::kK);
  float acc[8][4];
  rows_times_k<kType>(acc, q, k, block, np_first, np_last, lane);
  store_p_rows<kType>(acc, stage, block, np_first, np_last, lane);
}

// P's ten 16x16-column pairs (row block b has b + 1) over the eight consumer warps, at most two
// each: warp 0 block 0; warps 1, 2 pairs 0-1 of blocks 1, 2; warp 3 pair 2 of block 2; warps 4-7
// one pair of block 3 each.
template <InputType kType>
__device__ __forceinline__ void compute_p_consumer_share(unsigned char* stage, int warp, int lane) {
  const int block = warp == 0 ? 0 : warp < 3 ? warp : warp == 3 ? 2 : 3;
  const int first = warp < 3 ? 0 : warp == 3 ? 2 : warp - 4;
  const int last = warp == 0 ? 0 : warp < 3 ? 1 : first;
  compute_p<kType>(stage, block, first, last, lane);
}

}  // namespace fastinfer::gdn::kernels::fast
