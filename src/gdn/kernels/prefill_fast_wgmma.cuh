#pragma once
// wgmma building blocks of the GDN prefill consumers (sm_90a): m64 nN k16 with A from registers
// (the mma.sync m16k16 A fragment layout, warp i of the warpgroup holding rows 16i .. 16i+15) and
// B from a 128-byte-swizzled stage tile (prefill_fast_layout.cuh). The accumulator of warp i is
// the m16n8 C layout of its 16 rows, n tile after n tile: the consumers' acc[8][4] and the state's
// [16][4] fragments, unchanged.
#include <cstdint>
#include <type_traits>
#include <utility>

#include <cute/arch/mma_sm90_gmma.hpp>
#include <cute/arch/mma_sm90_gmma_ext.hpp>

#include "gdn/kernels/prefill_fragments.cuh"
#include "gdn/kernels/wgmma_fences_sm90.cuh"

namespace fastinfer::gdn::kernels::fast {

namespace gmma = cute::SM90::GMMA;

// The RS atom of an operand type, width N and B major-ness.
template <InputType kType, int N, gmma::Major kB>
constexpr auto wgmma_atom() {
  constexpr bool kBf16 = kType == InputType::kBFloat16;
  if constexpr (N == 16) {
    if constexpr (kBf16) return gmma::MMA_64x16x16_F32BF16BF16_RS<gmma::Major::K, kB>{};
    else return gmma::MMA_64x16x16_F32F16F16_RS<gmma::Major::K, kB>{};
  } else if constexpr (N == 32) {
    if constexpr (kBf16) return gmma::MMA_64x32x16_F32BF16BF16_RS<gmma::Major::K, kB>{};
    else return gmma::MMA_64x32x16_F32F16F16_RS<gmma::Major::K, kB>{};
  } else if constexpr (N == 48) {
    if constexpr (kBf16) return gmma::MMA_64x48x16_F32BF16BF16_RS<gmma::Major::K, kB>{};
    else return gmma::MMA_64x48x16_F32F16F16_RS<gmma::Major::K, kB>{};
  } else if constexpr (N == 64) {
    if constexpr (kBf16) return gmma::MMA_64x64x16_F32BF16BF16_RS<gmma::Major::K, kB>{};
    else return gmma::MMA_64x64x16_F32F16F16_RS<gmma::Major::K, kB>{};
  } else {
    static_assert(N == 128);
    if constexpr (kBf16) return gmma::MMA_64x128x16_F32BF16BF16_RS<gmma::Major::K, kB>{};
    else return gmma::MMA_64x128x16_F32F16F16_RS<gmma::Major::K, kB>{};
  }
}

template <class Op, int kFirstTile, int kTiles, int... I>
__device__ __forceinline__ void wgmma_rs_impl(const std::uint32_t (&a)[4], std::uint64_t desc, float (&acc)[kTiles][4],
                                              gmma::ScaleOut scale, std::integer_sequence<int, I...>) {
  Op::fma(a[0], a[1], a[2], a[3], desc, acc[kFirstTile + I / 4][I % 4]..., scale);
}

// acc tiles [kFirstTile, kFirstTile + N / 8) (+)= A (64 x 16, registers) x B (16 x N, descriptor).
template <InputType kType, int N, gmma::Major kB, int kFirstTile, int kTiles>
__device__ __forceinline__ void wgmma_rs(const std::uint32_t (&a)[4], std::uint64_t desc, float (&acc)[kTiles][4],
                                         bool accumulate = true) {
  static_assert(kFirstTile + N / 8 <= kTiles);
  wgmma_rs_impl<decltype(wgmma_atom<kType, N, kB>()), kFirstTile>(
      a, desc, acc, accumulate ? gmma::ScaleOut::One : gmma::ScaleOut::Zero, std::make_integer_sequence<int, N / 2>{});
}

// acc[64][64] (+)= A (64 x 16) x B (16 x 64), both from shared memory, K-major (P = Q K^T).
template <InputType kType, int... I>
__device__ __forceinline__ void wgmma_ss_64_impl(std::uint64_t desc_a, std::uint64_t desc_b, float (&acc)[8][4],
                                                 gmma::ScaleOut scale, std::integer_sequence<int, I...>) {
  using Op = std::conditional_t<kType == InputType::kBFloat16,
                                gmma::MMA_64x64x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>,
                                gmma::MMA_64x64x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>>;
  Op::fma(desc_a, desc_b, acc[I / 4][I % 4]..., scale);
}
template <InputType kType>
__device__ __forceinline__ void wgmma_ss_64(std::uint64_t desc_a, std::uint64_t desc_b, float (&acc)[8][4],
                                            bool accumulate) {
  wgmma_ss_64_impl<kType>(desc_a, desc_b, acc, accumulate ? gmma::ScaleOut::One : gmma::ScaleOut::Zero,
                          std::make_integer_sequence<int, 32>{});
}

// Shared-memory matrix descriptors, 128-byte swizzle (layout type 1 in bits 62-63), start address
// and strides in 16-byte units. K-major ([n][k], 128-byte rows): 8-row atoms 1024 B apart (SBO);
// the k16 step j starts 32 j bytes into the row (the hardware swizzles the address bits, so tiles
// are 1024-byte aligned). MN-major ([k][n], n contiguous): 64-element n blocks `n_block_bytes`
// apart (LBO), 8-row k groups 1024 B apart (SBO).
__device__ __forceinline__ std::uint64_t k_major_desc(std::uint32_t smem_addr) {
  return static_cast<std::uint64_t>((smem_addr >> 4) & 0x3FFF) | (std::uint64_t{1} << 16) |
         (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
}
__device__ __forceinline__ std::uint64_t mn_major_desc(std::uint32_t smem_addr, std::uint32_t n_block_bytes) {
  return static_cast<std::uint64_t>((smem_addr >> 4) & 0x3FFF) | (static_cast<std::uint64_t>(n_block_bytes >> 4) << 16) |
         (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
}

}  // namespace fastinfer::gdn::kernels::fast
