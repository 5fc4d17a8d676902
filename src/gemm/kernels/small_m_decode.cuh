#pragma once
// e2m1 x e4m3 -> bf16 decode in registers for the small-M kernels (layout in small_m_params.h).
//
// Element: placing the 3 magnitude bits of a code at bf16 bits 6..8 (exponent LSBs + mantissa MSB)
// and the sign at bit 15 gives the bf16 e2m1 * 2^-126 exactly (code 1, 0.5, becomes a subnormal).
// Scale: 0x7000 | (byte << 4) is the bf16 sf * 2^106 for the re-encoded byte. Their product
// e2m1 * sf * 2^-20 is exact and normal (between 2^-30 and 2688 * 2^-20); bf16 multiplies keep
// subnormal inputs (no flush-to-zero on HMUL2.BF16), which the GPU codec test checks.
#include <cstdint>

#include "nvfp4/nvfp4_codec.h"

namespace fastinfer::gemm::detail {

// Repack side: where each of the 8 codes of one word goes (see decode_word).
FASTINFER_HD std::uint32_t place_code(std::uint32_t code, int slot) {
  const std::uint32_t mag = code & 7, sign = (code >> 3) & 1;
  switch (slot) {
    case 0: return (mag << 6) | (sign << 15);           // reg 0 lo: taken in place
    case 1: return (mag << 22) | (sign << 31);          // reg 0 hi
    case 2: return (mag << 3) | (sign << 12);           // reg 1 lo: << 3
    case 3: return (mag << 19) | (sign << 28);          // reg 1 hi
    case 4: return mag | (sign << 9);                   // reg 2 lo: << 6
    case 5: return (mag << 16) | (sign << 25);          // reg 2 hi
    case 6: return ((mag & 3) << 10) | ((mag >> 2) << 13) | (sign << 14);  // reg 3 lo: split fields
    default: return ((mag & 3) << 26) | ((mag >> 2) << 29) | (sign << 30); // reg 3 hi
  }
}

// Scale byte re-encoding: e4m3 (non-negative, finite) -> (c << 3) | mantissa, sf = 2^(c-9) * 1.m.
FASTINFER_HD std::uint8_t encode_scale(std::uint8_t e4m3) {
  const int e = (e4m3 >> 3) & 15, m = e4m3 & 7;
  if (e == 0) {
    if (m == 0) return 0;  // zero scale: its block has only zero codes, any finite scale works
    const int sh = m >= 4 ? 2 : (m >= 2 ? 1 : 0);  // m * 2^-9 = 2^(sh-9) * 1.xx
    return static_cast<std::uint8_t>((sh << 3) | ((m << (3 - sh)) & 7));
  }
  return static_cast<std::uint8_t>(((e + 2) << 3) | m);
}

#if defined(__CUDACC__)
// bf16x2 pair (both halves) of re-encoded scale byte `byte_index` of `word`.
__device__ __forceinline__ std::uint32_t scale_pair(std::uint32_t word, int byte_index) {
  const std::uint32_t selector = 0x4040u | static_cast<std::uint32_t>(byte_index) | (static_cast<std::uint32_t>(byte_index) << 8);
  return __byte_perm(word, 0u, selector) * 16u + 0x70007000u;
}

__device__ __forceinline__ std::uint32_t bf16x2_mul(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// One word -> the four A registers of one k16 step: rows (g, g+8) x k pairs, scaled.
__device__ __forceinline__ void decode_word(std::uint32_t w, std::uint32_t scale_g, std::uint32_t scale_g8,
                                            std::uint32_t (&a)[4]) {
  constexpr std::uint32_t kMask = 0x81C081C0u;  // sign 15/31, magnitude 6..8 / 22..24
  const std::uint32_t r0 = w & kMask;
  const std::uint32_t r1 = (w << 3) & kMask;
  const std::uint32_t r2 = (w << 6) & kMask;
  const std::uint32_t r3 = ((w >> 4) & 0x00C000C0u) | ((w >> 5) & 0x01000100u) | ((w << 1) & 0x80008000u);
  a[0] = bf16x2_mul(r0, scale_g);   // row g,   k 4t, 4t+1
  a[1] = bf16x2_mul(r1, scale_g8);  // row g+8, k 4t, 4t+1
  a[2] = bf16x2_mul(r2, scale_g);   // row g,   k 4t+2, 4t+3
  a[3] = bf16x2_mul(r3, scale_g8);  // row g+8, k 4t+2, 4t+3
}
#endif

}  // namespace fastinfer::gemm::detail
