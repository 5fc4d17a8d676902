#include "gemm/mm_runner.h"

#include <cmath>

#include "fastinfer/device.h"
#include "gemm/large_m_bridge.h"
#include "gemm/weights_impl.h"
#include "runtime/check.h"
#include "runtime/workspace_pool.h"

namespace fastinfer::gemm::detail {

namespace {

// Small-M shapes offered as tactics: (R, W) x cluster size.
constexpr int kShapes[][2] = {{2, 4}, {2, 8}, {4, 4}, {4, 8}};
constexpr int kClusters[] = {1, 2, 4, 8};
// Above this M the small-M kernel re-streams the weight once per 64 tokens: offered only when no
// large-M tactic can run (a correct fallback, not a fast one).
constexpr std::int64_t kSmallMMaxM = 256;
// Default switch-over to the large-M path (unmeasured: the small-M kernel's mma.sync work grows
// with 8T tokens while the large-M path's decode pass is a fixed cost).
constexpr std::int64_t kLargeMFromM = 64;
// Resident small-M CTAs per SM assumed by the default cluster choice (unmeasured estimate from
// ~96 registers x 128 threads).
constexpr int kCtasPerSm = 4;

}  // namespace

int MmRunner::token_tiles(std::int64_t m) { return m <= 8 ? 1 : m <= 16 ? 2 : m <= 32 ? 4 : 8; }

MmRunner::MmRunner(int device, DType out_dtype, std::int64_t n, std::int64_t k, const tune::BucketMapper& mapper)
    : device_(device),
      out_dtype_(out_dtype),
      n_(n),
      k_(k),
      sm_count_(device_info(device).sm_count),
      key_("mm_bf16_fp4", std::string("bf16xnvfp4/v1/out=") + (out_dtype == DType::kFloat16 ? "fp16" : "bf16"),
           {static_cast<std::int64_t>(out_dtype), n, k}, mapper) {
  for (const auto& s : kShapes)
    for (int c : kClusters)
      tactics_.push_back({false, s[0], s[1], c, nullptr,
                          "small_m_r" + std::to_string(s[0]) + "_w" + std::to_string(s[1]) + "_c" + std::to_string(c)});
  for (const LargeMConfig& c : large_configs()) tactics_.push_back({true, 0, 0, 0, &c, std::string("large_m_") + c.name});
}

LargeMParams MmRunner::large_params(const MmCall& call) const {
  LargeMParams p;
  p.a = call.a;
  p.w_packed = call.weights ? static_cast<const std::uint8_t*>(call.weights->packed.get()) : nullptr;
  p.w_scales = call.weights ? static_cast<const std::uint8_t*>(call.weights->scales_linear.get()) : nullptr;
  p.w_dequant = 1.0f;
  p.alpha = call.weights ? call.weights->alpha : 1.0f;
  p.out = call.out;
  p.out_dtype = out_dtype_;
  p.m = call.m;
  p.n = static_cast<int>(n_);
  p.k = static_cast<int>(k_);
  p.lda = call.lda;
  p.ldo = call.ldo;
  p.device = device_;
  p.enable_pdl = call.enable_pdl;
  return p;
}

bool MmRunner::can_run(const MmTactic& t, std::int64_t m) const {
  if (t.large_m) {
    MmCall probe;
    probe.m = static_cast<int>(m);
    probe.lda = static_cast<int>((k_ + 7) / 8 * 8);
    probe.ldo = static_cast<int>((n_ + 7) / 8 * 8);
    // A shape-only question: any 16-byte aligned, non-null address stands for the buffers here
    // (run() checks the real pointers again before launching).
    LargeMParams p = large_params(probe);
    auto* stand_in = reinterpret_cast<std::uint8_t*>(std::uintptr_t{256});
    p.a = stand_in;
    p.out = stand_in;
    p.w_packed = p.w_scales = stand_in;
    return large_can_implement(p, *t.large);
  }
  if (!small_m_compiled(t.rows_tiles, token_tiles(m), t.warps)) return false;
  const int kc_count = static_cast<int>((k_ + kChunkK - 1) / kChunkK);
  return t.cluster == 1 || kc_count >= t.cluster * t.warps;  // every warp gets at least one chunk
}

std::vector<int> MmRunner::tactics(std::int64_t m) const {
  std::vector<int> ids;
  bool any_large = false;
  for (int i = 0; i < tactic_count(); ++i)
    if (tactics_[i].large_m && can_run(tactics_[i], m)) any_large = true;
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[i];
    if (!t.large_m && m > kSmallMMaxM && any_large) continue;
    if (can_run(t, m)) ids.push_back(i);
  }
  return ids;
}

int MmRunner::default_tactic(std::int64_t m) const {
  if (m > kLargeMFromM) {
    int best = -1;
    for (int i = 0; i < tactic_count(); ++i) {
      const MmTactic& t = tactics_[i];
      if (!t.large_m || !can_run(t, m)) continue;
      // Narrow tiles while M is a few hundred rows, the wide cooperative tiles above (unmeasured).
      const bool wants_narrow = m <= 256;
      if (best < 0 || (wants_narrow && t.large->tile_m < tactics_[best].large->tile_m) ||
          (!wants_narrow && t.large->tile_m * t.large->tile_n > tactics_[best].large->tile_m * tactics_[best].large->tile_n))
        best = i;
    }
    if (best >= 0) return best;
  }
  // Small M: R = 2, W = 4; the cluster size that balances waves of CTAs against the cost of the
  // cluster reduction, keeping >= 2 k64 chunks per warp.
  const int tt = token_tiles(m);
  const int rows = 2 * kTileRows;
  const std::int64_t base = (n_ + rows - 1) / rows * ((m + 8 * tt - 1) / (8 * tt));
  const std::int64_t slots = static_cast<std::int64_t>(sm_count_) * kCtasPerSm;
  const int kc_count = static_cast<int>((k_ + kChunkK - 1) / kChunkK);
  int best_c = 1;
  double best_cost = 1e30;
  for (int c : kClusters) {
    if (c > 1 && kc_count < 2 * c * 4) break;
    const double waves = std::ceil(static_cast<double>(base * c) / static_cast<double>(slots));
    const double cost = waves / c + 0.03 * c;
    if (cost < best_cost) {
      best_cost = cost;
      best_c = c;
    }
  }
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[i];
    if (!t.large_m && t.rows_tiles == 2 && t.warps == 4 && t.cluster == best_c) return i;
  }
  return 0;
}

void MmRunner::run(const MmCall& call, int tactic, Stream stream) const {
  const int id = tactic < 0 ? default_tactic(call.m) : tactic;
  if (id < 0 || id >= tactic_count() || !can_run(tactics_[id], call.m))
    check::fail("gemm::mm_bf16_fp4", "tactic", "be a tactic that can run M=" + std::to_string(call.m), std::to_string(tactic));
  const MmTactic& t = tactics_[static_cast<std::size_t>(id)];
  if (t.large_m) {
    const LargeMParams p = large_params(call);
    if (!large_can_implement(p, *t.large))
      check::fail("gemm::mm_bf16_fp4", "tactic", std::string("accept this call's strides (") + t.name + ")",
                  "lda=" + std::to_string(call.lda) + " ldo=" + std::to_string(call.ldo));
    const std::size_t bytes = large_workspace_bytes(p, *t.large);
    void* ws = bytes ? WorkspacePool::global().get(device_, stream, "mm_bf16_fp4", bytes) : nullptr;
    large_run(p, *t.large, ws, stream);
    return;
  }
  SmallMParams p;
  p.w_tiles = call.weights->tiles.get();
  p.w_scales = call.weights->tile_scales.get();
  p.kc_count = call.weights->kc_count;
  p.a = call.a;
  p.out = call.out;
  p.out_is_fp16 = out_dtype_ == DType::kFloat16;
  p.m = call.m;
  p.n = static_cast<int>(n_);
  p.k = static_cast<int>(k_);
  p.lda = call.lda;
  p.ldo = call.ldo;
  p.alpha_scaled = call.weights->alpha * kDecodeScaleInverse;
  launch_small_m(p, SmallMShape{t.rows_tiles, token_tiles(call.m), t.warps, t.cluster}, device_, call.enable_pdl, stream);
}

}  // namespace fastinfer::gemm::detail
