#pragma once
// e2m1 x e4m3 -> bf16 decode in registers for the small- and mid-M kernels (layout in small_m_params.h).
//
// Element: placing the 3 magnitude bits of a code at bf16 bits 6..8 (exponent LSBs + mantissa MSB)
// and the sign at bit 15 gives the bf16 e2m1 * 2^-126 exactly (code 1, 0.5, becomes a subnormal).
// Scale: 0x7000 | (byte << 4) is the bf16 sf * 2^106 for the re-encoded byte. Their product
// e2m1 * sf * 2^-20 is exact and normal (between 2^-30 and 2688 * 2^-20); bf16 multiplies keep
// subnormal inputs (no flush-to-zero on HMUL2.BF16), which the GPU codec test checks.
//
// Word layout: register i of a k16 step is rotl(word, kRot[i]) & 0x81C081C0 for i = 0..2 (three
// disjoint rotations of the bf16 bit pattern); the 8 bits left over need two rotations (6 and 14)
// merged under a mask for register 3. 9 integer ops per 8 codes (the session-2 layout needed 11).
#include <cstdint>

#include "nvfp4/nvfp4_codec.h"

namespace fastinfer::gemm::detail {

// Repack side: where the 4 bits of one code go in its word (see decode_word). Per slot (register
// i = slot / 2, half = slot % 2), the word bits of {magnitude bit 0, bit 1, bit 2, sign}: target bit
// p of register i comes from word bit (p - rotation) mod 32.
FASTINFER_HD std::uint32_t place_code(std::uint32_t code, int slot) {
  constexpr int kSlotBits[8][4] = {
      {6, 7, 8, 15},   {22, 23, 24, 31},  // reg 0: in place
      {2, 3, 4, 11},   {18, 19, 20, 27},  // reg 1: rotl 4
      {28, 29, 30, 5}, {12, 13, 14, 21},  // reg 2: rotl 10
      {0, 1, 26, 9},   {16, 17, 10, 25},  // reg 3: rotl 6 (magnitude bits 0, 1, sign), rotl 14 (bit 2)
  };
  std::uint32_t word = 0;
  for (int b = 0; b < 4; ++b) word |= ((code >> b) & 1u) << kSlotBits[slot][b];
  return word;
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

__device__ __forceinline__ std::uint32_t rotl(std::uint32_t w, int n) { return __funnelshift_l(w, w, n); }

// One word -> the four A registers of one k16 step: rows (g, g+8) x k pairs, scaled.
__device__ __forceinline__ void decode_word(std::uint32_t w, std::uint32_t scale_g, std::uint32_t scale_g8,
                                            std::uint32_t (&a)[4]) {
  constexpr std::uint32_t kMask = 0x81C081C0u;    // sign 15/31, magnitude 6..8 / 22..24
  constexpr std::uint32_t kMask3a = 0x80C080C0u;  // register 3: magnitude bits 0, 1 and sign from rotl 6
  constexpr std::uint32_t kMask3b = 0x01000100u;  // register 3: magnitude bit 2 from rotl 14
  const std::uint32_t r0 = w & kMask;
  const std::uint32_t r1 = rotl(w, 4) & kMask;
  const std::uint32_t r2 = rotl(w, 10) & kMask;
  const std::uint32_t r3 = (rotl(w, 6) & kMask3a) | (rotl(w, 14) & kMask3b);
  a[0] = bf16x2_mul(r0, scale_g);   // row g,   k pair 0 of the lane's four
  a[1] = bf16x2_mul(r1, scale_g8);  // row g+8, k pair 0
  a[2] = bf16x2_mul(r2, scale_g);   // row g,   k pair 1
  a[3] = bf16x2_mul(r3, scale_g8);  // row g+8, k pair 1
}
#endif

}  // namespace fastinfer::gemm::detail
