// The large-M tactics of mm_bf16_fp4: the tactic table, the shape rules, the workspace layout and
// the launch sequence (decode pass, then the bf16 GEMM).
#include "gemm/large_m.h"

#include <array>
#include <cstdint>

#include "fastinfer/error.h"
#include "gemm/large_m/bf16_gemm_sm90.h"
#include "gemm/large_m/fused_wgmma_sm90.h"
#include "runtime/workspace_carver.h"

namespace fastinfer::gemm::detail {
namespace {

// Tile choices: 128x256 cooperative with a 2x1 cluster is the usual best for large bf16 GEMMs on
// Hopper (A tile multicast to the pair); 128x128 gives twice the tiles when M*N is small for 132 SMs;
// 64x256 pingpong wastes no rows at M = 64..192. Which wins where: unmeasured (autotuner's job).
// fused_wgmma (ids 3..11): tile_m = tokens per CTA (wgmma N), tile_n = 128 rows of W per CTA, _kC =
// clusters of C CTAs splitting K (for shapes with few 128 x tokens tiles, e.g. N = 4096), _pp = the
// two consumer warpgroups take turns issuing their wgmmas.
constexpr std::array<LargeMConfig, 12> kConfigs{{
    {0, "dequant_gemm_coop_128x256x64_c2x1", LargeMAlgo::kDequantGemm, 128, 256, 64, 2, 1},
    {1, "dequant_gemm_coop_128x128x64_c1x2", LargeMAlgo::kDequantGemm, 128, 128, 64, 1, 2},
    {2, "dequant_gemm_pingpong_64x256x64_c1x1", LargeMAlgo::kDequantGemm, 64, 256, 64, 1, 1},
    {3, "fused_wgmma_256x128x64", LargeMAlgo::kFusedWgmma, 256, kFusedRows, kFusedChunkK, 1, 1},
    {4, "fused_wgmma_128x128x64", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1},
    {5, "fused_wgmma_64x128x64", LargeMAlgo::kFusedWgmma, 64, kFusedRows, kFusedChunkK, 1, 1},
    {6, "fused_wgmma_256x128x64_k2", LargeMAlgo::kFusedWgmma, 256, kFusedRows, kFusedChunkK, 1, 1, 2},
    {7, "fused_wgmma_128x128x64_k2", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1, 2},
    {8, "fused_wgmma_128x128x64_k4", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1, 4},
    {9, "fused_wgmma_64x128x64_k4", LargeMAlgo::kFusedWgmma, 64, kFusedRows, kFusedChunkK, 1, 1, 4},
    {10, "fused_wgmma_256x128x64_pp", LargeMAlgo::kFusedWgmma, 256, kFusedRows, kFusedChunkK, 1, 1, 1, true},
    {11, "fused_wgmma_128x128x64_pp", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1, 1, true},
}};

template <Bf16GemmTile Tile>
const Bf16GemmKernel& kernel_for_output(DType out_dtype) {
  return out_dtype == DType::kFloat16 ? bf16_gemm_sm90<Tile, true>() : bf16_gemm_sm90<Tile, false>();
}

// The GEMM instantiation behind a config (same order as kConfigs).
const Bf16GemmKernel& gemm_kernel(const LargeMConfig& config, DType out_dtype) {
  switch (config.id) {
    case 0: return kernel_for_output<Bf16GemmTile::kCoop128x256x64Cluster2x1>(out_dtype);
    case 1: return kernel_for_output<Bf16GemmTile::kCoop128x128x64Cluster1x2>(out_dtype);
    case 2: return kernel_for_output<Bf16GemmTile::kPingpong64x256x64Cluster1x1>(out_dtype);
    default: break;
  }
  throw Error(Error::Kind::kValue, "mm_bf16_fp4: unknown large-M tactic id " + std::to_string(config.id));
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

bool known_config(const LargeMConfig& config) {
  return config.id >= 0 && config.id < static_cast<int>(kConfigs.size()) && kConfigs[config.id].id == config.id;
}

Bf16GemmArgs gemm_args(const LargeMParams& p, const void* w_bf16) {
  return Bf16GemmArgs{p.a, w_bf16, p.out, p.m, p.n, p.k, p.lda, p.k, p.ldo, p.alpha * p.w_dequant, p.device,
                      p.enable_pdl};
}

// One layout function for counting (base == nullptr) and carving.
struct Workspace {
  std::uint16_t* w_bf16;
  void* gemm_scratch;
  std::size_t bytes;
};

Workspace carve(const LargeMParams& p, const Bf16GemmKernel& kernel, void* base) {
  WorkspaceCarver carver(base);
  Workspace ws{};
  ws.w_bf16 = carver.take<std::uint16_t>(static_cast<std::size_t>(p.n) * static_cast<std::size_t>(p.k));
  ws.gemm_scratch = carver.take<std::uint8_t>(kernel.workspace_bytes(gemm_args(p, ws.w_bf16)));
  ws.bytes = carver.bytes();
  return ws;
}

// The fused instantiation behind a config (tokens, split-K, pingpong), as compiled.
void run_fused(const LargeMParams& p, const LargeMConfig& c, void* image, Stream stream) {
  switch (c.tile_m * 16 + c.split_k * 2 + (c.pingpong ? 1 : 0)) {
    case 256 * 16 + 2: return run_fused_wgmma_sm90<256, 1, false>(p, image, stream);
    case 128 * 16 + 2: return run_fused_wgmma_sm90<128, 1, false>(p, image, stream);
    case 64 * 16 + 2: return run_fused_wgmma_sm90<64, 1, false>(p, image, stream);
    case 256 * 16 + 4: return run_fused_wgmma_sm90<256, 2, false>(p, image, stream);
    case 128 * 16 + 4: return run_fused_wgmma_sm90<128, 2, false>(p, image, stream);
    case 128 * 16 + 8: return run_fused_wgmma_sm90<128, 4, false>(p, image, stream);
    case 64 * 16 + 8: return run_fused_wgmma_sm90<64, 4, false>(p, image, stream);
    case 256 * 16 + 3: return run_fused_wgmma_sm90<256, 1, true>(p, image, stream);
    case 128 * 16 + 3: return run_fused_wgmma_sm90<128, 1, true>(p, image, stream);
    default: break;
  }
  throw Error(Error::Kind::kValue, std::string("mm_bf16_fp4: fused large-M tactic not compiled: ") + c.name);
}

}  // namespace

std::span<const LargeMConfig> large_m_configs() { return kConfigs; }

bool can_implement(const LargeMParams& p, const LargeMConfig& config) {
  if (!known_config(config)) return false;
  if (p.out_dtype != DType::kBFloat16 && p.out_dtype != DType::kFloat16) return false;
  if (p.m < 1 || p.n < 1 || p.k < 16 || p.k % 16 != 0) return false;
  // TMA: 16-byte aligned bases and row strides, contiguous extents that are multiples of 16 bytes.
  if (p.n % 8 != 0 || p.lda < p.k || p.lda % 8 != 0 || p.ldo < p.n || p.ldo % 8 != 0) return false;
  if (!p.a || !p.w_packed || !p.w_scales || !p.out) return false;
  if (!aligned16(p.a) || !aligned16(p.out) || !aligned16(p.w_packed)) return false;
  // Fused: whole k64 stages (16-byte code copies, 4-byte aligned scale copies per row), at least one
  // per split-K rank; grid.y = N / 128.
  if (config.algo == LargeMAlgo::kFusedWgmma)
    return p.k % kFusedChunkK == 0 && (reinterpret_cast<std::uintptr_t>(p.w_scales) & 3u) == 0 &&
           p.k / kFusedChunkK >= config.split_k && (p.n + kFusedRows - 1) / kFusedRows <= 65535;
  const Bf16GemmKernel& kernel = gemm_kernel(config, p.out_dtype);
  // Any 16-byte aligned pointer stands for the workspace copy of W here: only its alignment matters.
  return kernel.can_implement(gemm_args(p, p.a));
}

std::size_t workspace_bytes(const LargeMParams& p, const LargeMConfig& config) {
  if (config.algo == LargeMAlgo::kFusedWgmma) return fused_image_bytes(p.m, p.k, config.tile_m);
  return carve(p, gemm_kernel(config, p.out_dtype), nullptr).bytes;
}

void run_large_m(const LargeMParams& p, const LargeMConfig& config, void* workspace, Stream stream) {
  if (config.algo == LargeMAlgo::kFusedWgmma) return run_fused(p, config, workspace, stream);
  const Bf16GemmKernel& kernel = gemm_kernel(config, p.out_dtype);
  const Workspace ws = carve(p, kernel, workspace);
  decode_nvfp4_to_bf16(p.w_packed, p.w_scales, ws.w_bf16, p.n, p.k, p.enable_pdl, stream);
  // The GEMM reads the decode pass's output; under PDL its griddepcontrol.wait orders the two.
  kernel.run(gemm_args(p, ws.w_bf16), ws.gemm_scratch, stream);
}

}  // namespace fastinfer::gemm::detail
