#pragma once
// The fused_wgmma tactic of the large-M path: NVFP4 decode fused into a warp-specialised wgmma
// kernel, no bf16 copy of W in global memory. Plain declarations (no CUDA headers); the kernel is
// in fused_wgmma_sm90.cuh, one token-tile instantiation per file in instantiations/.
//
// Swap-AB: out^T[N, M] = W[N, K] a[M, K]^T. The weight is wgmma's A operand, decoded from the
// linear packed codes and e4m3 scales straight into registers; a tile of `tokens` activation
// rows is the B operand in shared memory, staged by the image pass in a k order (permuted inside
// each k64 chunk) in which every lane's codes are contiguous; the same permutation on both
// operands leaves the sum unchanged. A CTA owns 128 rows of N (two consumer warpgroups of 64)
// times `tokens` rows of M, over the whole K or (split-K) one K slice of a cluster; every sum has
// a fixed order (bitwise deterministic).
#include <cstddef>

#include "fastinfer/context.h"
#include "gemm/large_m.h"

namespace fastinfer::gemm::detail {

inline constexpr int kFusedRows = 128;  // rows of N per CTA (2 consumer warpgroups x wgmma M 64)
inline constexpr int kFusedChunkK = 64;  // k per pipeline stage (one 128-byte swizzle row of bf16)

// The activation image the kernel's bulk copies read: per (token block of `tokens`, k64 chunk) one
// contiguous tokens x 128-byte tile in wgmma's 128-byte-swizzled K-major layout, rows past M zero.
// Built per call by a small pass (a[M, K] -> image); this is the path's whole workspace.
constexpr std::size_t fused_image_bytes(int m, int k, int tokens) {
  const std::size_t blocks = static_cast<std::size_t>((m + tokens - 1) / tokens);
  return blocks * static_cast<std::size_t>(tokens) * static_cast<std::size_t>(k) * 2;
}

// Launches the image pass, then the fused kernel. Preconditions: can_implement (k % 64 == 0 among
// them) and `image` holds fused_image_bytes(m, k, Tokens) bytes, 256-byte aligned.
// SplitK = C: clusters of C CTAs split K and sum their fp32 tiles through distributed shared memory
// in rank order (more CTAs when N / 128 x M / tokens is small; deterministic).
// Pingpong: the two consumer warpgroups take turns issuing their wgmmas (one decodes while the
// other's tensor-core work runs).
template <int Tokens, int SplitK, bool Pingpong>
void run_fused_wgmma_sm90(const LargeMParams& p, void* image, Stream stream);

}  // namespace fastinfer::gemm::detail
