// The large-M tactics of mm_bf16_fp4: the tactic table, the shape rules, the workspace layout and
// the launch sequence (decode pass, then the bf16 GEMM).
#include "gemm/large_m.h"

#include <array>
#include <cstdint>

#include "fastinfer/device.h"
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
// two consumer warpgroups take turns issuing their wgmmas, _il = the next stage's decode interleaved
// with this stage's k16 wgmmas (ids 12..16), _sk = persistent, one CTA per SM, the (tile, k64 chunk)
// units split equally between them (stream-K; ids 17..22).
constexpr std::array<LargeMConfig, 23> kConfigs{{
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
    {12, "fused_wgmma_256x128x64_il", LargeMAlgo::kFusedWgmma, 256, kFusedRows, kFusedChunkK, 1, 1, 1, false, true},
    {13, "fused_wgmma_128x128x64_il", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1, 1, false, true},
    {14, "fused_wgmma_64x128x64_il", LargeMAlgo::kFusedWgmma, 64, kFusedRows, kFusedChunkK, 1, 1, 1, false, true},
    {15, "fused_wgmma_256x128x64_k2_il", LargeMAlgo::kFusedWgmma, 256, kFusedRows, kFusedChunkK, 1, 1, 2, false, true},
    {16, "fused_wgmma_128x128x64_k2_il", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1, 2, false, true},
    {17, "fused_wgmma_256x128x64_sk", LargeMAlgo::kFusedWgmma, 256, kFusedRows, kFusedChunkK, 1, 1, 1, false, false, true},
    {18, "fused_wgmma_256x128x64_sk_il", LargeMAlgo::kFusedWgmma, 256, kFusedRows, kFusedChunkK, 1, 1, 1, false, true, true},
    {19, "fused_wgmma_128x128x64_sk", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1, 1, false, false, true},
    {20, "fused_wgmma_128x128x64_sk_il", LargeMAlgo::kFusedWgmma, 128, kFusedRows, kFusedChunkK, 1, 1, 1, false, true, true},
    {21, "fused_wgmma_64x128x64_sk", LargeMAlgo::kFusedWgmma, 64, kFusedRows, kFusedChunkK, 1, 1, 1, false, false, true},
    {22, "fused_wgmma_64x128x64_sk_il", LargeMAlgo::kFusedWgmma, 64, kFusedRows, kFusedChunkK, 1, 1, 1, false, true, true},
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

int persistent_ctas(const LargeMParams& p, const LargeMConfig& c) {
  return fused_persistent_ctas(p.m, p.n, p.k, c.tile_m, device_info(p.device).sm_count);
}

// The fused instantiation behind a config (tokens, split-K, issue order, persistent), as compiled.
void run_fused(const LargeMParams& p, const LargeMConfig& c, void* image, Stream stream) {
  using enum FusedIssue;
  const FusedIssue issue = c.interleave ? kInterleaved : c.pingpong ? kPingpong : kTogether;
  if (c.persistent) {
    const int ctas = persistent_ctas(p, c);
    if (c.tile_m == 256 && issue == kTogether) return run_fused_persistent_sm90<256, kTogether>(p, image, ctas, stream);
    if (c.tile_m == 256 && issue == kInterleaved) return run_fused_persistent_sm90<256, kInterleaved>(p, image, ctas, stream);
    if (c.tile_m == 128 && issue == kTogether) return run_fused_persistent_sm90<128, kTogether>(p, image, ctas, stream);
    if (c.tile_m == 128 && issue == kInterleaved) return run_fused_persistent_sm90<128, kInterleaved>(p, image, ctas, stream);
    if (c.tile_m == 64 && issue == kTogether) return run_fused_persistent_sm90<64, kTogether>(p, image, ctas, stream);
    if (c.tile_m == 64 && issue == kInterleaved) return run_fused_persistent_sm90<64, kInterleaved>(p, image, ctas, stream);
    throw Error(Error::Kind::kValue, std::string("mm_bf16_fp4: fused large-M tactic not compiled: ") + c.name);
  }
  const auto is = [&](int tokens, int split_k, FusedIssue order) {
    return c.tile_m == tokens && c.split_k == split_k && issue == order;
  };
  if (is(256, 1, kTogether)) return run_fused_wgmma_sm90<256, 1, kTogether>(p, image, stream);
  if (is(128, 1, kTogether)) return run_fused_wgmma_sm90<128, 1, kTogether>(p, image, stream);
  if (is(64, 1, kTogether)) return run_fused_wgmma_sm90<64, 1, kTogether>(p, image, stream);
  if (is(256, 2, kTogether)) return run_fused_wgmma_sm90<256, 2, kTogether>(p, image, stream);
  if (is(128, 2, kTogether)) return run_fused_wgmma_sm90<128, 2, kTogether>(p, image, stream);
  if (is(128, 4, kTogether)) return run_fused_wgmma_sm90<128, 4, kTogether>(p, image, stream);
  if (is(64, 4, kTogether)) return run_fused_wgmma_sm90<64, 4, kTogether>(p, image, stream);
  if (is(256, 1, kPingpong)) return run_fused_wgmma_sm90<256, 1, kPingpong>(p, image, stream);
  if (is(128, 1, kPingpong)) return run_fused_wgmma_sm90<128, 1, kPingpong>(p, image, stream);
  if (is(256, 1, kInterleaved)) return run_fused_wgmma_sm90<256, 1, kInterleaved>(p, image, stream);
  if (is(128, 1, kInterleaved)) return run_fused_wgmma_sm90<128, 1, kInterleaved>(p, image, stream);
  if (is(64, 1, kInterleaved)) return run_fused_wgmma_sm90<64, 1, kInterleaved>(p, image, stream);
  if (is(256, 2, kInterleaved)) return run_fused_wgmma_sm90<256, 2, kInterleaved>(p, image, stream);
  if (is(128, 2, kInterleaved)) return run_fused_wgmma_sm90<128, 2, kInterleaved>(p, image, stream);
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
           p.k / kFusedChunkK >= config.split_k && (p.n + kFusedRows - 1) / kFusedRows <= 65535 &&
           (!config.persistent || fused_persistent_ctas(p.m, p.n, p.k, config.tile_m, 1) > 0);  // units fit in int
  const Bf16GemmKernel& kernel = gemm_kernel(config, p.out_dtype);
  // Any 16-byte aligned pointer stands for the workspace copy of W here: only its alignment matters.
  return kernel.can_implement(gemm_args(p, p.a));
}

std::size_t workspace_bytes(const LargeMParams& p, const LargeMConfig& config) {
  if (config.algo == LargeMAlgo::kFusedWgmma)
    return config.persistent ? fused_persistent_layout(p.m, p.k, config.tile_m, persistent_ctas(p, config), nullptr).bytes
                             : fused_image_bytes(p.m, p.k, config.tile_m);
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
