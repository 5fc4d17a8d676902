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
#include "runtime/workspace_carver.h"

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
// Issue: how a consumer warpgroup orders its decode and its wgmmas (FusedIssue below).
enum class FusedIssue {
  kTogether,     // decode a whole k64 stage, then issue its four wgmmas (both warpgroups at once)
  kPingpong,     // as kTogether, but the two warpgroups take turns issuing (named barriers)
  kInterleaved,  // after each k16 wgmma, decode the same k16 step of the next stage (one stage of
                 // wgmmas stays in flight while the decode runs, as CUTLASS's mixed-input mainloop)
};
template <int Tokens, int SplitK, FusedIssue Issue>
void run_fused_wgmma_sm90(const LargeMParams& p, void* image, Stream stream);

// Persistent stream-K form (fused_persistent_sm90.cuh): `ctas` CTAs (at most one per SM) share the
// (tile, k64 chunk) units equally. Workspace: the activation image, then one flag per CTA and one
// fp32 partial tile (tokens x 128) per CTA for the pieces of tiles split between CTAs. One layout
// function for counting (base == nullptr) and carving.
struct FusedPersistentLayout {
  void* image;
  int* flags;
  void* partials;
  std::size_t bytes;
};
inline FusedPersistentLayout fused_persistent_layout(int m, int k, int tokens, int ctas, void* base) {
  WorkspaceCarver carver(base);
  FusedPersistentLayout layout{};
  layout.image = carver.take<unsigned char>(fused_image_bytes(m, k, tokens));
  layout.flags = carver.take<int>(static_cast<std::size_t>(ctas));
  layout.partials = carver.take<float>(static_cast<std::size_t>(ctas) * static_cast<std::size_t>(tokens) * kFusedRows);
  layout.bytes = carver.bytes();
  return layout;
}
// CTAs of the persistent form: one per SM, at most one per (tile, k64 chunk) unit of work; 0 when
// the unit count does not fit in int (the kernel's unit arithmetic).
inline int fused_persistent_ctas(int m, int n, int k, int tokens, int sm_count) {
  const long long units = static_cast<long long>((m + tokens - 1) / tokens) * ((n + kFusedRows - 1) / kFusedRows) * (k / kFusedChunkK);
  if (units >= (1LL << 31)) return 0;
  return static_cast<int>(units < sm_count ? units : sm_count);
}
template <int Tokens, FusedIssue Issue>
void run_fused_persistent_sm90(const LargeMParams& p, void* workspace, int ctas, Stream stream);

}  // namespace fastinfer::gemm::detail
