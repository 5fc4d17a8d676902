#pragma once
// The large-M (M >= ~64) compute path of mm_bf16_fp4: out = alpha * w_dequant * (a @ decode(W)^T).
//
// Internal API used by the mm_bf16_fp4 dispatch (src/gemm/). Plain structs and declarations only:
// no CUDA or CuTe headers, so the dispatch and the autotuner can include it anywhere.
//
// Tactic "dequant_gemm" (path 1): one memory-bound pass decodes the NVFP4 weight into a bf16
// [N, K] workspace holding e2m1(q) * float(e4m3 sf) (exact in bf16: 2 x 4 significant bits), then
// a CUTLASS 3.x sm90a bf16 GEMM (TMA + wgmma, warp-specialised, persistent) computes the product;
// w_dequant and alpha are applied in fp32 in the epilogue. See docs/GEMM_LARGE_M.md.
//
// Contract of every entry point: no allocation, no host sync, no device-property query (the SM
// count comes from device_info(params.device), read once per device). Scratch comes from the
// caller, sized by workspace_bytes(); its contents are undefined on entry.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fastinfer/context.h"
#include "fastinfer/dtype.h"

namespace fastinfer::gemm::detail {

struct LargeMParams {
  const void* a = nullptr;            // [M, K] bf16, row stride lda (elements), 16-byte aligned
  const std::uint8_t* w_packed = nullptr;  // [N, K/2] contiguous, low nibble = even k
  const std::uint8_t* w_scales = nullptr;  // linear e4m3 block scales [N, K/16] contiguous
  float w_dequant = 1.0f;             // dequant(q) = e2m1(q) * float(sf) * w_dequant (= 1/global_scale)
  float alpha = 1.0f;                 // extra output scale: out = alpha * (a @ dequant(W)^T)
  void* out = nullptr;                // [M, N] row stride ldo (elements), 16-byte aligned
  DType out_dtype = DType::kBFloat16;  // kBFloat16 or kFloat16
  int m = 0, n = 0, k = 0;
  int lda = 0, ldo = 0;
  int device = 0;                     // CUDA ordinal the pointers live on (current device at launch)
  bool enable_pdl = false;            // launch with programmatic dependent launch
};

// How a tactic computes the product.
enum class LargeMAlgo : std::uint8_t {
  kDequantGemm,  // decode W to a bf16 workspace, then a bf16 tensor-core GEMM
  kFusedWgmma,   // decode W in registers inside a warp-specialised wgmma kernel (no bf16 W in memory)
};

// One tactic. `id` is stable (the autotuner may persist it); `name` is for logs and benchmarks.
struct LargeMConfig {
  int id;
  const char* name;
  LargeMAlgo algo;
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  int split_k = 1;  // CTAs of a cluster that split K (fused_wgmma only; reduced in shared memory)
  bool pingpong = false;  // fused_wgmma: the consumer warpgroups take turns issuing wgmmas
  bool interleave = false;  // fused_wgmma: the next stage's decode interleaved with the k16 wgmmas
  bool persistent = false;  // fused_wgmma: one CTA per SM, stream-K split of the (tile, k64) units
};

// Every compiled tactic, in id order. The list is immutable for the life of the process.
std::span<const LargeMConfig> large_m_configs();

// Shape constraints (docs/GEMM_LARGE_M.md):
//   m, n >= 1; k >= 16 and k % 16 == 0; n % 8 == 0; lda >= k, lda % 8 == 0; ldo >= n, ldo % 8 == 0;
//   a, out 16-byte aligned; w_packed 16-byte aligned; out_dtype bf16 or fp16;
//   kFusedWgmma also needs k % 64 == 0 and w_scales 4-byte aligned (whole k64 stages; 4-byte scale
//   copies per row).
// M, N and K tails (not multiples of the tile) are handled by TMA bounds.
// Returns false (never throws) when `config` cannot run `params`.
bool can_implement(const LargeMParams& params, const LargeMConfig& config);

// Scratch bytes `run_large_m` needs for this shape (kDequantGemm: the bf16 weight copy plus the
// GEMM's own; kFusedWgmma: the swizzled activation image, 2 * round_up(M, tile_m) * K).
std::size_t workspace_bytes(const LargeMParams& params, const LargeMConfig& config);

// Launches on `stream`. Precondition: can_implement(params, config), and `workspace` holds
// workspace_bytes(params, config) bytes on params.device, 256-byte aligned. Throws
// fastinfer::Error on a CUDA launch failure. CUDA-graph capturable.
void run_large_m(const LargeMParams& params, const LargeMConfig& config, void* workspace, Stream stream);

// The decode pass alone (exposed for tests and benchmarks): w_bf16[n, k] = e2m1(q) * float(sf),
// contiguous [N, K]. Requires k % 16 == 0, w_packed 16-byte aligned, w_bf16 16-byte aligned.
void decode_nvfp4_to_bf16(const std::uint8_t* w_packed, const std::uint8_t* w_scales, void* w_bf16, int n,
                          int k, bool enable_pdl, Stream stream);

}  // namespace fastinfer::gemm::detail
