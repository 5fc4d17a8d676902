#include "gemm/mm_runner.h"

#include <algorithm>
#include <cmath>

#include "fastinfer/device.h"
#include "gemm/large_m_bridge.h"
#include "gemm/mid_m_params.h"
#include "gemm/weights_impl.h"
#include "runtime/check.h"
#include "runtime/workspace_pool.h"

namespace fastinfer::gemm::detail {

namespace {

// Small-M shapes offered as tactics: (R, W) x cluster size.
constexpr int kShapes[][2] = {{2, 4}, {2, 8}, {4, 4}, {4, 8}};
constexpr int kClusters[] = {1, 2, 4, 8};
// Mid-M (fused wgmma) cluster sizes: CTAs of a cluster split K.
constexpr int kMidMClusters[] = {1, 2, 4};
// Above this M the mid-M kernel is not offered when a large-M tactic can run (unmeasured bound).
constexpr std::int64_t kMidMMaxM = 2048;
// Above this M the small-M kernel re-streams the weight once per 64 tokens: offered only when no
// large-M tactic can run (a correct fallback, not a fast one).
constexpr std::int64_t kSmallMMaxM = 256;
// Default switch-overs: small-M weight streaming up to kMidMFromM, the fused mid-M kernel up to
// kLargeMFromM, then decode pass + CUTLASS GEMM (first guesses, unmeasured).
constexpr std::int64_t kMidMFromM = 32;
constexpr std::int64_t kLargeMFromM = 1024;
// Shared memory per SM available to CTAs on sm_90 (228 KB less the 1 KB per CTA the model adds).
constexpr int kSmemPerSm = 233472;

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
  for (bool interleave : {false, true})
    for (const auto& s : kShapes)
      for (int c : kClusters) {
        MmTactic t;
        t.rows_tiles = s[0];
        t.warps = s[1];
        t.cluster = c;
        t.interleave = interleave;
        t.name = "small_m_r" + std::to_string(s[0]) + "_w" + std::to_string(s[1]) + "_c" + std::to_string(c) +
                 (interleave ? "_i" : "");
        tactics_.push_back(t);
      }
  for (int tokens : kMidMTokenTiles)
    for (int c : kMidMClusters) {
      MmTactic t;
      t.cluster = c;
      t.mid_tokens = tokens;
      t.name = "mid_m_n" + std::to_string(tokens) + "_c" + std::to_string(c);
      tactics_.push_back(t);
    }
  for (const LargeMConfig& c : large_configs()) {
    MmTactic t;
    t.large_m = true;
    t.large = &c;
    t.name = std::string("large_m_") + c.name;
    tactics_.push_back(t);
  }
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
  const int kc_count_mid = static_cast<int>((k_ + kChunkK - 1) / kChunkK);
  if (t.mid_tokens > 0)  // every rank gets at least one chunk; row groups x C fit grid.y
    return kc_count_mid >= t.cluster && (n_ + kMidMRows - 1) / kMidMRows * t.cluster <= 65535;
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
    if (!t.large_m && t.mid_tokens == 0 && m > kSmallMMaxM && any_large) continue;
    if (t.mid_tokens > 0 && m > kMidMMaxM && any_large) continue;
    if (can_run(t, m)) ids.push_back(i);
  }
  return ids;
}

int MmRunner::default_tactic(std::int64_t m) const {
  if (m > kLargeMFromM) {
    const int large = default_large_m_tactic(m);
    if (large >= 0) return large;
  }
  if (m > kMidMFromM) {
    const int mid = default_mid_m_tactic(m);
    if (mid >= 0) return mid;
  }
  return default_small_m_tactic(m);
}

int MmRunner::default_large_m_tactic(std::int64_t m) const {
  // docs/GEMM_LARGE_M.md (H200 table): the wide cooperative tile once it fills the SMs, unless
  // the last of a few waves is under half full; otherwise 128x128 (or 64x256 for M <= 128 and a
  // very wide N).
  const double tiles0 = std::ceil(static_cast<double>(m) / 128.0) * std::ceil(static_cast<double>(n_) / 256.0);
  const double waves = tiles0 / sm_count_;
  const double last = waves - std::floor(waves);
  const bool wide = waves >= 0.9 && !(waves < 4 && last > 0 && last < 0.5);
  int by_shape[3] = {-1, -1, -1};  // coop 128x256, coop 128x128, pingpong 64x256
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
    if (!t.large_m || !can_run(t, m)) continue;
    const int slot = t.large->tile_m == 64 ? 2 : t.large->tile_n == 256 ? 0 : 1;
    if (by_shape[slot] < 0) by_shape[slot] = i;
  }
  if (wide && by_shape[0] >= 0) return by_shape[0];
  if (m <= 128 && n_ >= 16384 && by_shape[2] >= 0) return by_shape[2];
  if (by_shape[1] >= 0) return by_shape[1];
  for (int v : by_shape)
    if (v >= 0) return v;
  return -1;
}

int MmRunner::default_mid_m_tactic(std::int64_t m) const {
  // 64-token tiles up to M = 64, then 128; the smallest cluster that gives two CTAs per SM while
  // every rank keeps >= 8 k64 chunks (first model, unmeasured).
  const int tokens = m <= 64 ? 64 : 128;
  const int kc_count = static_cast<int>((k_ + kChunkK - 1) / kChunkK);
  const std::int64_t ctas = (n_ + kMidMRows - 1) / kMidMRows * ((m + tokens - 1) / tokens);
  int cluster = 1;
  for (int c : kMidMClusters) {
    if (c > 1 && kc_count / c < 8) break;
    cluster = c;
    if (ctas * c >= 2 * sm_count_) break;
  }
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
    if (t.mid_tokens == tokens && t.cluster == cluster && can_run(t, m)) return i;
  }
  return -1;
}

int MmRunner::default_small_m_tactic(std::int64_t m) const {
  // Cost model over the compiled (R, W, C): CTA waves from the shared-memory occupancy (tail
  // efficiency), pipeline start-up per warp (~2 chunks of latency, amortised over the warp's
  // chunks) and the cluster reduction (first model; the measured table is in docs/GEMM.md).
  const int tt = token_tiles(m);
  const int kc_count = static_cast<int>((k_ + kChunkK - 1) / kChunkK);
  int best = -1;
  double best_cost = 1e30;
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
    if (t.large_m || t.mid_tokens > 0 || !can_run(t, m)) continue;
    const int smem = small_m_smem_bytes(t.rows_tiles, tt, t.warps);
    const int resident = std::max(1, std::min(kSmemPerSm / (smem + 1024), 2048 / (32 * t.warps)));
    const double rows = static_cast<double>(t.rows_tiles * kTileRows);
    const double ctas = std::ceil(static_cast<double>(n_) / rows) * t.cluster * std::ceil(static_cast<double>(m) / (8.0 * tt));
    const double waves = ctas / (static_cast<double>(resident) * sm_count_);
    const double tail = waves / std::ceil(waves);
    const double chunks_per_warp = static_cast<double>(kc_count) / (t.cluster * t.warps);
    const double cost = (1.0 + 2.0 / chunks_per_warp) / tail + 0.02 * t.cluster;
    if (cost < best_cost) {
      best_cost = cost;
      best = i;
    }
  }
  return best < 0 ? 0 : best;
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
  if (t.mid_tokens > 0) {
    launch_mid_m(p, t.mid_tokens, t.cluster, device_, call.enable_pdl, stream);
    return;
  }
  p.warp_interleave = t.interleave;
  launch_small_m(p, SmallMShape{t.rows_tiles, token_tiles(call.m), t.warps, t.cluster, t.interleave}, device_,
                 call.enable_pdl, stream);
}

}  // namespace fastinfer::gemm::detail
