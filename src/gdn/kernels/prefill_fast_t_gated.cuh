#pragma once
// T_g = (T diag(beta)) o Gamma of one chunk as a rounded pair hi + lo, written into the stage by a
// group of `kThreads` threads: the producer warpgroup (T solved in the kernel) or the consumer
// warps (T loaded: they wait for the producer most of the time, H200 profile of session 3 batch 2).
#include <cstdint>

#include "gdn/kernels/prefill_fast_layout.cuh"
#include "gdn/kernels/prefill_fast_primitives.cuh"

namespace fastinfer::gdn::kernels::fast {

// T_g[t][j] = T[t][j] beta_j e^{G_t - G_j} (j <= t, else 0) as a rounded pair hi + lo (cp4's
// numerics, 0ce9fd6: everything that feeds the state). Thread tid owns columns j0 .. j0 + 3
// (j0 = 4 (tid % 16)) of rows tid / 16 + (kThreads / 16) r: beta and G of its columns are read
// once, T as one 4-vector per row by `inverse4(t, j0)` (only where j0 <= t), all into registers
// before `sync()` (a loaded Tinv shares its shared memory with T_g), then written as 8-byte
// vectors. One element at a time with the gates re-read took ~5.3k cycles per chunk in the
// producer (H200 profile, session 3 batch 2).
template <InputType kType, int kThreads, class InverseAt, class Sync>
__device__ __forceinline__ void write_t_gated(unsigned char* stage, InverseAt inverse4, int tid, Sync sync) {
  using Cfg = FastConfig;
  using Element = typename Operand<kType>::Element;
  constexpr int kColumnsPerThread = 4, kGroupsPerRow = Cfg::kChunk / kColumnsPerThread;
  constexpr int kRowStep = kThreads / kGroupsPerRow, kRows = Cfg::kChunk / kRowStep;
  static_assert(kThreads % kGroupsPerRow == 0 && Cfg::kChunk % kRowStep == 0);
  const float* gates = reinterpret_cast<const float*>(stage + FastSmem::kGates);
  const int j0 = kColumnsPerThread * (tid % kGroupsPerRow), t0 = tid / kGroupsPerRow;
  const float4 beta = *reinterpret_cast<const float4*>(gates + FastGates::kBeta + j0);
  const float4 g_col = *reinterpret_cast<const float4*>(gates + FastGates::kG + j0);
  const float beta_j[4] = {beta.x, beta.y, beta.z, beta.w}, g_j[4] = {g_col.x, g_col.y, g_col.z, g_col.w};
  float4 inv[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int t = t0 + kRowStep * r;
    inv[r] = j0 <= t ? inverse4(t, j0) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  float value[kRows][4];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int t = t0 + kRowStep * r;
    const float g_t = gates[FastGates::kG + t];
    const float in[4] = {inv[r].x, inv[r].y, inv[r].z, inv[r].w};
#pragma unroll
    for (int c = 0; c < 4; ++c) value[r][c] = j0 + c <= t ? in[c] * beta_j[c] * __expf(g_t - g_j[c]) : 0.0f;
  }
  sync();
  Element* t_gated = reinterpret_cast<Element*>(stage + FastSmem::kTGated);
  Element* t_gated_lo = reinterpret_cast<Element*>(stage + FastSmem::kTGatedLo);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int t = t0 + kRowStep * r;
    std::uint32_t hi[2], lo[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      hi[h] = pack_pair<kType>(value[r][2 * h], value[r][2 * h + 1]);
      const float2 rounded = unpack_pair<kType>(hi[h]);
      lo[h] = pack_pair<kType>(value[r][2 * h] - rounded.x, value[r][2 * h + 1] - rounded.y);
    }
    *reinterpret_cast<uint2*>(t_gated + swizzled_c(t, j0)) = make_uint2(hi[0], hi[1]);
    *reinterpret_cast<uint2*>(t_gated_lo + swizzled_c(t, j0)) = make_uint2(lo[0], lo[1]);
  }
}

// T_g from a loaded Tinv (fp32 [64][64] at FastSmem::kInverseIn, lower triangle).
template <InputType kType, int kThreads, class Sync>
__device__ __forceinline__ void write_t_gated_from_loaded(unsigned char* stage, int tid, Sync sync) {
  const float* loaded = reinterpret_cast<const float*>(stage + FastSmem::kInverseIn);
  write_t_gated<kType, kThreads>(
      stage, [&](int t, int j) { return *reinterpret_cast<const float4*>(loaded + t * FastConfig::kChunk + j); }, tid,
      sync);
}

}  // namespace fastinfer::gdn::kernels::fast
