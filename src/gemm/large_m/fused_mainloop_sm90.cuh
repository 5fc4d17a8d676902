#pragma once
// The consumer side of the fused NVFP4 x bf16 wgmma kernels (fused_wgmma_sm90.cuh and the
// persistent form, fused_persistent_sm90.cuh): e2m1 x e4m3 decode of a lane's codes into bf16 A
// fragments, and a consumer warpgroup's main loop over a range of ring stages in one of three issue
// orders (FusedIssue).
#include "gemm/large_m/fused_common_sm90.cuh"

namespace fastinfer::gemm::detail {
namespace fused {

// Decoded weights are e2m1 * sf * 2^-kDecodeExponent (exact: at most 2 x 4 significant bits, and
// normal in bf16 for every code and finite e4m3 scale); the epilogue multiplies alpha by this.
inline constexpr float kDecodeCompensation = 256.0f;  // 2^kDecodeExponent, kDecodeExponent = 8

// A fragment of one k16 step from word x: byte 0 / 2 = codes of row g, byte 1 / 3 = row g + 8, each
// byte's low nibble the lower storage k. Register i takes nibbles n and n + 4 (n = 0, 2, 1, 3 for
// A registers 0..3), so one shift per half places both codes: a code c = (sign, e1 e0 m) put at
// bf16 bits 15 and 8..6 is the bf16 number e2m1(c) * 2^-126 (e1 e0 = exponent field, m = the top
// mantissa bit; the subnormal codes 0, 0.5 come out as bf16 zero / subnormal). The image pass
// orders the activations to match (wgmma k 2t + 8h + e <- storage k 16t + 4j + h + 2e). Scales:
// s_g / s_g8 = bf16(sf * 2^(126 - kDecodeExponent)) pairs of rows g / g + 8; products are exact.
__device__ __forceinline__ void decode_fragment(std::uint32_t x, std::uint32_t s_g, std::uint32_t s_g8,
                                                std::uint32_t (&a)[4]) {
  constexpr std::uint32_t kMagnitude = 0x01C001C0u, kSign = 0x80008000u;
  a[0] = mul_bf16x2(((x << 6) & kMagnitude) | ((x << 12) & kSign), s_g);   // nibbles 0, 4: row g, k 2t, 2t+1
  a[1] = mul_bf16x2(((x >> 2) & kMagnitude) | ((x << 4) & kSign), s_g8);   // nibbles 2, 6: row g + 8
  a[2] = mul_bf16x2(((x << 2) & kMagnitude) | ((x << 8) & kSign), s_g);    // nibbles 1, 5: row g, k 2t+8, 2t+9
  a[3] = mul_bf16x2(((x >> 6) & kMagnitude) | (x & kSign), s_g8);          // nibbles 3, 7: row g + 8
}

// A consumer lane's decode inputs of one stage: its 8 code bytes of rows g and g + 8 and their
// scale pairs bf16(sf * 2^118) (one block scale per lane and stage, see the k order below).
struct StageCodes {
  uint2 w0, w8;
  std::uint32_t s_g, s_g8;
};

// K order of the image pass: step j, wgmma k (2t, 2t+1, 2t+8, 2t+9) = storage k 16t + 4j + (0, 2,
// 1, 3), so the lane's 16 codes per row are bytes 8t .. 8t+7 (one 8-byte load) under one block
// scale (t).
__device__ __forceinline__ StageCodes load_stage_codes(const unsigned char* codes, int row_g, int t, int sw) {
  const std::uint8_t* scales = codes + kCodeBytes;
  const std::uint32_t sc_g = *reinterpret_cast<const std::uint32_t*>(scales + row_g * 4);
  const std::uint32_t sc_g8 = *reinterpret_cast<const std::uint32_t*>(scales + (row_g + 8) * 4);
  const int offset = (((t >> 1) ^ sw) << 4) + (t & 1) * 8;
  StageCodes c;
  c.w0 = *reinterpret_cast<const uint2*>(codes + row_g * 32 + offset);
  c.w8 = *reinterpret_cast<const uint2*>(codes + (row_g + 8) * 32 + offset);
  // bf16(sf * 2^-120) = (e4m3 & 0x7f) << 4 for rows g and g + 8 (e4m3 subnormals become exact bf16
  // subnormals), times 2^119 twice (exact: powers of two, normal results) = sf * 2^(126 - 8).
  const std::uint32_t sf = (prmt(sc_g, sc_g8, static_cast<std::uint32_t>(t | ((t + 4) << 8))) << 4) & 0x07F007F0u;
  constexpr std::uint32_t kTwoTo119 = 0x7B007B00u;  // bf16x2(2^119)
  const std::uint32_t scaled = mul_bf16x2(mul_bf16x2(sf, kTwoTo119), kTwoTo119);
  c.s_g = prmt(scaled, 0u, 0x1010u), c.s_g8 = prmt(scaled, 0u, 0x3232u);
  return c;
}

// A fragment of k16 step j: bytes 2j, 2j + 1 of the lane's 8 (word j / 2) of rows g and g + 8.
__device__ __forceinline__ void decode_step(const StageCodes& c, int j, std::uint32_t (&a)[4]) {
  constexpr std::uint32_t kSel[2] = {0x5140u, 0x7362u};
  const std::uint32_t x = j < 2 ? prmt(c.w0.x, c.w8.x, kSel[j & 1]) : prmt(c.w0.y, c.w8.y, kSel[j & 1]);
  decode_fragment(x, c.s_g, c.s_g8, a);
}

// A consumer warpgroup's main loop over ring positions [i0, i1) of its CTA's stage sequence,
// accumulating into acc (the caller zeroes it). On return every wgmma retired and every stage of
// the range was released; `total` is the CTA's stage count (kInterleaved decodes stage i1 ahead
// when i1 < total; stage 0 is decoded on entry when i0 == 0).
template <int Tokens, FusedIssue Issue>
struct Mainloop {
  using P = Plan<Tokens>;
  using Op = typename Wgmma<Tokens>::Op;
  static constexpr int S = P::kStages;
  static constexpr int kAcc = Tokens / 2;

  unsigned char* smem;
  std::uint64_t* full;
  std::uint64_t* empty;
  int row_g, t, sw, wg;
  std::uint32_t afrag[2][4][4];  // A fragments of stages i and i - 1 (the latter may still be read)

  __device__ __forceinline__ StageCodes codes(int i) {
    const int s = i % S;
    mbarrier_wait(&full[s], (i / S) & 1);
    return load_stage_codes(smem + s * P::kStageBytes + P::kActBytes, row_g, t, sw);
  }
  __device__ __forceinline__ std::uint32_t act(int i) const { return smem_address(smem + (i % S) * P::kStageBytes); }
  // Release stage i: every consumer thread arrives (release) after its own loads of it. One
  // arrival per warp after __syncwarp is as correct, but compute-sanitizer racecheck credits a
  // barrier only with the arriving thread's accesses and reports the other lanes' loads against
  // the refill (docs/GEMM_LARGE_M.md, "Racecheck finding").
  __device__ __forceinline__ void release(int i) { mbarrier_arrive(&empty[i % S]); }
  __device__ __forceinline__ static void fence(float (&acc)[kAcc]) {
#pragma unroll
    for (int e = 0; e < kAcc; ++e) cute::warpgroup_fence_operand(acc[e]);
  }
  __device__ __forceinline__ static void fence(std::uint32_t (&a)[4]) {
#pragma unroll
    for (int q = 0; q < 4; ++q) cute::warpgroup_fence_operand(a[q]);
  }

  // kInterleaved: one k16 wgmma per commit group. After issuing step j of stage i, wait until at
  // most 4 groups are pending: step j of stage i - 1 retired, so its fragment slot takes step j of
  // stage i + 1, decoded while stage i's wgmmas run; after step 3 stage i - 1 is wholly retired.
  template <int b>
  __device__ __forceinline__ void interleaved_stage(float (&acc)[kAcc], int i, int i0, int total) {
    const std::uint32_t a = act(i);
    StageCodes next{};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      fence(acc);
      cute::warpgroup_arrive();
      wgmma_rs<Op>(afrag[b][j], swizzled_desc(a + 32 * j), acc, std::make_integer_sequence<int, kAcc>{});
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<4>();
      fence(acc);
      fence(afrag[b ^ 1][j]);
      if (j == 3 && i > i0) release(i - 1);
      if (i + 1 < total) {
        if (j == 0) next = codes(i + 1);
        decode_step(next, j, afrag[b ^ 1][j]);
      }
    }
  }

  // kTogether / kPingpong: decode stage i's four k16 steps while stage i - 1's wgmmas run, issue
  // its wgmmas as one commit group, then wait until stage i - 1's group retired.
  template <int b>
  __device__ __forceinline__ void together_stage(float (&acc)[kAcc], int i, int i0, int i1) {
    const StageCodes c = codes(i);
#pragma unroll
    for (int j = 0; j < 4; ++j) decode_step(c, j, afrag[b][j]);
    // Pingpong: the two warpgroups take turns issuing (named barriers 2 and 3), so one decodes
    // while the other's wgmmas run instead of both decoding at once.
    if constexpr (Issue == FusedIssue::kPingpong) named_barrier_sync(2 + wg, 256);
    fence(acc);
    cute::warpgroup_arrive();
    const std::uint32_t a = act(i);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      wgmma_rs<Op>(afrag[b][j], swizzled_desc(a + 32 * j), acc, std::make_integer_sequence<int, kAcc>{});
    cute::warpgroup_commit_batch();
    if constexpr (Issue == FusedIssue::kPingpong)  // the other warpgroup's turn (warpgroup 1 skips it after the last stage)
      if (wg == 0 || i + 1 < i1) named_barrier_arrive(2 + (wg ^ 1), 256);
    cute::warpgroup_wait<1>();
    fence(acc);
#pragma unroll
    for (int j = 0; j < 4; ++j) fence(afrag[b ^ 1][j]);
    if (i > i0) release(i - 1);
  }

  template <int b>
  __device__ __forceinline__ void stage(float (&acc)[kAcc], int i, int i0, int i1, int total) {
    if constexpr (Issue == FusedIssue::kInterleaved)
      interleaved_stage<b>(acc, i, i0, total);
    else
      together_stage<b>(acc, i, i0, i1);
  }

  __device__ __forceinline__ void run(float (&acc)[kAcc], int i0, int i1, int total) {
    if (i1 <= i0) return;
    if constexpr (Issue == FusedIssue::kInterleaved) {
      if (i0 == 0) {
        const StageCodes first = codes(0);
#pragma unroll
        for (int j = 0; j < 4; ++j) decode_step(first, j, afrag[0][j]);
      }
    }
    if constexpr (Issue == FusedIssue::kPingpong)
      if (wg == 1) named_barrier_arrive(2, 256);  // warpgroup 0 issues first
    // Fragment buffer: kInterleaved decodes one stage ahead across ranges, so buffer = i % 2; the
    // other orders start each range with nothing in flight (buffer = (i - i0) % 2, no peeled copy).
    int i = i0;
    if constexpr (Issue == FusedIssue::kInterleaved)
      if (i & 1) stage<1>(acc, i++, i0, i1, total);
    for (; i + 1 < i1; i += 2) {
      stage<0>(acc, i, i0, i1, total);
      stage<1>(acc, i + 1, i0, i1, total);
    }
    if (i < i1) stage<0>(acc, i, i0, i1, total);
    cute::warpgroup_wait<0>();
    fence(acc);
    release(i1 - 1);
  }
};

}  // namespace fused
}  // namespace fastinfer::gemm::detail
