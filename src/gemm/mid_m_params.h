#pragma once
// Plan of the mid-M mm_bf16_fp4 kernels (fused decode + wgmma, kernels/mid_m_sm90.cuh); host
// visible, no CUDA headers. The kernels take SmallMParams (same operands, same tiled weights).
#include "gemm/small_m_params.h"

namespace fastinfer::gemm::detail {

inline constexpr int kMidMWarps = 8;                    // two warpgroups
inline constexpr int kMidMRows = kMidMWarps * kTileRows;  // 128 rows of N per CTA, one tile per warp

// One stage = one k64 chunk: the TN-token activation block in wgmma's K-major layout (TN x 128 B),
// then the 8 warps' weight tiles (512 B each) and their scales (64 B each).
constexpr int mid_m_act_bytes(int tokens) { return tokens * 128; }
constexpr int mid_m_stage_bytes(int tokens) { return mid_m_act_bytes(tokens) + kMidMWarps * (512 + 64); }
// Stages in the ring; two chunks are being consumed/retired, the rest in flight (unmeasured first
// choice: ~80 KB per CTA so two CTAs share an SM).
constexpr int mid_m_stages(int tokens) { return tokens <= 64 ? 6 : 4; }
// Partial sums [128][TN + 8] fp32 after the loop (row pitch padded against bank conflicts).
constexpr int mid_m_partial_pitch(int tokens) { return tokens + 8; }
constexpr int mid_m_smem_bytes(int tokens) {
  const int ring = mid_m_stages(tokens) * mid_m_stage_bytes(tokens);
  const int partial = kMidMRows * mid_m_partial_pitch(tokens) * 4;
  return ring > partial ? ring : partial;
}

// Token tiles compiled (wgmma N).
inline constexpr int kMidMTokenTiles[] = {64, 128};

// Launches the mid-M kernel with `tokens` per CTA (64 or 128) and `cluster` CTAs splitting K.
void launch_mid_m(const SmallMParams& p, int tokens, int cluster, int device, bool enable_pdl, void* stream);

}  // namespace fastinfer::gemm::detail
