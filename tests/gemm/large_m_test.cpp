// CPU tests of the large-M tactic table and its shape rules (no GPU needed: can_implement and
// workspace_bytes never touch the device).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "gemm/large_m.h"
#include "gemm/large_m/fused_wgmma_sm90.h"

namespace fastinfer::gemm::detail {
namespace {

// Fake, 256-byte aligned device addresses: only their values are inspected.
LargeMParams valid_params() {
  LargeMParams p;
  p.a = reinterpret_cast<const void*>(std::uintptr_t{0x10000});
  p.w_packed = reinterpret_cast<const std::uint8_t*>(std::uintptr_t{0x20000});
  p.w_scales = reinterpret_cast<const std::uint8_t*>(std::uintptr_t{0x30000});
  p.out = reinterpret_cast<void*>(std::uintptr_t{0x40000});
  p.m = 1000, p.n = 1600, p.k = 1536, p.lda = 1536, p.ldo = 1600;
  return p;
}

TEST(GemmLargeM, ConfigTableIsConsistent) {
  const auto configs = large_m_configs();
  ASSERT_GE(configs.size(), 2u);
  std::set<std::string> names;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    EXPECT_EQ(configs[i].id, static_cast<int>(i));
    EXPECT_TRUE(names.insert(configs[i].name).second) << configs[i].name;
    EXPECT_GT(configs[i].tile_m * configs[i].tile_n * configs[i].tile_k, 0);
  }
}

TEST(GemmLargeM, AcceptsValidShapesIncludingTails) {
  for (const auto& config : large_m_configs()) {
    LargeMParams p = valid_params();
    EXPECT_TRUE(can_implement(p, config)) << config.name;
    p.m = 3, p.n = 264, p.k = 320, p.lda = 328, p.ldo = 272;  // no dimension a multiple of the tile
    EXPECT_TRUE(can_implement(p, config)) << config.name;
    p.out_dtype = DType::kFloat16;
    EXPECT_TRUE(can_implement(p, config)) << config.name;
    // k % 64 != 0: the decode-pass tactics take it, the fused kernel needs whole k64 stages.
    p.k = 48, p.lda = 56;
    EXPECT_EQ(can_implement(p, config), config.algo != LargeMAlgo::kFusedWgmma) << config.name;
    // Split-K needs at least one k64 chunk per rank.
    p.k = 128, p.lda = 128;
    EXPECT_EQ(can_implement(p, config), config.split_k <= 2) << config.name;
    // Scales at an odd address: bytes for the decode pass, 4-byte copies for the fused kernel.
    p = valid_params();
    p.w_scales += 1;
    EXPECT_EQ(can_implement(p, config), config.algo != LargeMAlgo::kFusedWgmma) << config.name;
  }
}

TEST(GemmLargeM, FusedTacticsAreListed) {
  int fused = 0;
  for (const auto& config : large_m_configs())
    if (config.algo == LargeMAlgo::kFusedWgmma) {
      ++fused;
      EXPECT_EQ(config.tile_n, 128) << config.name;
      EXPECT_TRUE(config.tile_m == 64 || config.tile_m == 128 || config.tile_m == 256) << config.name;
      EXPECT_TRUE(config.cluster_m == 1 && config.cluster_n == 1) << config.name;
      EXPECT_TRUE(config.split_k == 1 || config.split_k == 2 || config.split_k == 4) << config.name;
    }
  EXPECT_EQ(fused, 20);
}

TEST(GemmLargeM, RejectsWhatTheKernelsCannotRun) {
  const LargeMConfig& config = large_m_configs()[0];
  auto rejected = [&](auto&& mutate) {
    LargeMParams p = valid_params();
    mutate(p);
    return !can_implement(p, config);
  };
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.out_dtype = DType::kFloat32; }));
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.k = 1544, p.lda = 1544; }));  // k % 16 != 0
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.k = 0; }));
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.m = 0; }));
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.n = 1604, p.ldo = 1608; }));  // n % 8 != 0
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.lda = 1528; }));              // lda < k
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.lda = 1540; }));              // lda % 8 != 0
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.ldo = 1604; }));              // ldo % 8 != 0
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.a = static_cast<const char*>(p.a) + 8; }));
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.out = static_cast<char*>(p.out) + 2; }));
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.w_packed += 8; }));
  EXPECT_TRUE(rejected([](LargeMParams& p) { p.w_scales = nullptr; }));
  LargeMConfig unknown = config;
  unknown.id = 99;
  EXPECT_FALSE(can_implement(valid_params(), unknown));
}

TEST(GemmLargeM, WorkspaceHoldsTheBf16WeightOrTheActivationImage) {
  for (const auto& config : large_m_configs()) {
    const LargeMParams p = valid_params();
    if (config.persistent) continue;  // sized from the device's SM count (PersistentLayoutHoldsEveryPiece)
    if (config.algo == LargeMAlgo::kFusedWgmma) {  // M rounded up to the token tile, bf16
      const std::size_t rows = (p.m + config.tile_m - 1) / config.tile_m * config.tile_m;
      EXPECT_EQ(workspace_bytes(p, config), rows * p.k * 2) << config.name;
    } else {
      EXPECT_GE(workspace_bytes(p, config), std::size_t{2} * p.n * p.k) << config.name;
    }
  }
}

TEST(GemmLargeM, PersistentLayoutHoldsEveryPiece) {
  // Image, then one flag and one fp32 tokens x 128 partial tile per CTA, each 256-byte aligned.
  const int m = 1000, k = 1536, tokens = 256, ctas = 132;
  const FusedPersistentLayout counted = fused_persistent_layout(m, k, tokens, ctas, nullptr);
  const std::size_t image = fused_image_bytes(m, k, tokens);
  EXPECT_EQ(image, std::size_t{1024} * k * 2);
  EXPECT_GE(counted.bytes, image + ctas * 4 + std::size_t{ctas} * tokens * kFusedRows * 4);
  alignas(256) static unsigned char base[1];
  const FusedPersistentLayout carved = fused_persistent_layout(m, k, tokens, ctas, base);
  EXPECT_EQ(carved.image, static_cast<void*>(base));
  const auto offset = [&](const void* q) { return static_cast<std::size_t>(static_cast<const unsigned char*>(q) - base); };
  EXPECT_EQ(offset(carved.flags), image);
  EXPECT_EQ(offset(carved.partials) % 256, 0u);
  EXPECT_GE(offset(carved.partials), image + ctas * 4);
  EXPECT_EQ(offset(carved.partials) + std::size_t{ctas} * tokens * kFusedRows * 4, counted.bytes);
  // CTAs: one per SM, at most one per (tile, k64 chunk) unit; 0 when the units overflow int.
  EXPECT_EQ(fused_persistent_ctas(256, 28672, 4096, 256, 132), 132);
  EXPECT_EQ(fused_persistent_ctas(3, 448, 320, 256, 132), 4 * 5);
  EXPECT_EQ(fused_persistent_ctas(1 << 30, 1 << 20, 1 << 12, 64, 132), 0);
}

}  // namespace
}  // namespace fastinfer::gemm::detail
