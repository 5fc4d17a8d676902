#include "gemm/mm_runner.h"

#include <algorithm>
#include <cmath>

#include <cuda_runtime.h>

#include "fastinfer/device.h"
#include "gemm/large_m_bridge.h"
#include "gemm/mid_m_params.h"
#include "gemm/small_m_persistent.h"
#include "gemm/weights_impl.h"
#include "runtime/check.h"
#include "runtime/cuda_check.h"
#include "runtime/workspace_pool.h"

namespace fastinfer::gemm::detail {

namespace {

// Small-M shapes offered as tactics: (R, W) x cluster size.
constexpr int kShapes[][2] = {{2, 4}, {2, 8}, {4, 4}, {4, 8}};
constexpr int kClusters[] = {1, 2, 4, 8};
// Persistent small-M tactics: CTAs per SM offered (only those the occupancy allows run). The
// session-4 sweeps measured 1-8; more CTAs per SM (more streams, more bytes in flight) were slower
// in nearly every cell, 3 or more never the best.
constexpr int kPersistCtasPerSm[] = {1, 2};
// Persistent small-M workspace: partial sums of shared row groups, and their arrival counters
// (zeroed once when the block grows, reset by the kernel after every use).
constexpr const char* kPersistPartials = "mm_bf16_fp4.persistent.partials";
constexpr const char* kPersistCounters = "mm_bf16_fp4.persistent.counters";
// Default persistent tactic (W, S, CTAs per SM) and where it is used: 16 < M <= 32 with at least
// 2^26 weights. H200 session 4 (batches 2 and 3): 28672 x 4096 M = 32 0.0404-0.0410 ms vs 0.0472 for
// the best session-3 tactic; at M <= 16 and on the smaller shapes (4096 x 14336 and below) the
// session-3 kernel was faster (e.g. 28672 x 4096 M = 1 0.0252 vs 0.0274 ms).
constexpr int kPersistDefault[3] = {8, 3, 1};
constexpr std::int64_t kPersistFromM = 16;
constexpr std::int64_t kPersistToM = 32;
constexpr std::int64_t kPersistMinWeights = std::int64_t{1} << 26;
// Mid-M (fused wgmma) cluster sizes: CTAs of a cluster split K.
constexpr int kMidMClusters[] = {1, 2, 4};
// Above this M the mid-M kernel is not offered when a large-M tactic can run (unmeasured bound).
constexpr std::int64_t kMidMMaxM = 2048;
// Above this M the small-M kernel re-streams the weight once per 64 tokens: offered only when no
// large-M tactic can run (a correct fallback, not a fast one).
constexpr std::int64_t kSmallMMaxM = 256;
// Default switch-overs (H200 sweep, docs/GEMM.md): small-M streaming up to M = 32; the fused mid-M
// kernel up to 64, or up to 128 when K >= 8192; above, the large-M path.
constexpr std::int64_t kMidMFromM = 32;
constexpr std::int64_t kMidMToM = 64;
constexpr std::int64_t kMidMLongKToM = 128;
constexpr std::int64_t kMidMLongK = 8192;
// Small-M heuristic model (default_small_m_tactic): warps per SM beyond which streaming does not
// speed up, the cost of one more cluster rank (in tile-chunks of the busiest SM), the extra cost per
// tile-chunk of R = 2 (activations and chunk overhead shared by fewer rows) and the gain of the lean
// ring per tile-chunk.
struct SmallMModel {
  double saturating_warps;
  double cluster_step_cost;
  double two_row_tiles_cost;
  double lean_ring_gain;
};
// M <= 16 (T = 1, 2): refitted in session 5 to three H200 sweeps of every small-M tactic (the
// issue's five shapes x M = 1, 4, 16, occupancy from the calculator; docs/GEMM.md): the default is
// within 1.07x of the best small-M tactic in all 45 cells (the session-3 constants: 1.14x; 1.06-1.11x
// on 28672 x 4096 M = 1, 4 and 1.09-1.12x on 4096 x 14336 M = 16 in every sweep). T = 1 and T = 2 are
// fitted separately (disjoint cells): the T = 1 set sits on a plateau (cluster step 4-6, 10-11
// saturating warps, R = 2 weight 1.1-1.2, lean gain 0.1-0.3 score the same); a k split of the R = 4
// lean ring wins at T = 1 on 28672 x 4096 and loses at T = 2, hence the dearer cluster step there.
constexpr SmallMModel kModelEightTokens{10.0, 5.0, 0.2, 0.2};
constexpr SmallMModel kModelSixteenTokens{10.0, 12.0, 0.3, 0.2};
// M > 16: fitted to the session-3 sweep (M = 32, 64 not re-measured with occupancy in session 5).
constexpr SmallMModel kModelWide{16.0, 16.0, 0.7, 0.1};
// 32 < M <= 64: small-M streaming (T = 8) beat the mid-M kernel on 4 of the 5 sweep shapes
// (1.0-1.8x); not on N = 28672 (0.117 vs 0.092 ms), so only below this N.
constexpr std::int64_t kSmallMWideToN = 16384;
// The fused NVFP4 wgmma tactics (large-M ids 3..11) beat the decode pass + CUTLASS GEMM in every
// cell of the session-4 sweep with 64 <= M <= 512 (0.55-0.98x the time; docs/GEMM_LARGE_M.md) and
// the mid-M kernel at 28672 x 4096 M = 64 (0.079 vs 0.092 ms); from M = 1024 the GEMM path is as
// fast or faster. Below kSmallMWideToN, M <= 64 stays on small-M streaming (unchanged).
constexpr std::int64_t kFusedToM = 512;
// On N >= kSmallMWideToN the fused tactics (256 tokens, pingpong) stay ahead up to M = 1024
// (session 6, fp4m3's H200 batches 1 and 2: 28672 x 4096 M = 1024 256x128x64_pp 0.3471 / 0.3444 ms
// vs the best dequant_gemm 0.3776 / 0.3762; session 5 batch 4: 0.3438 vs 0.3752). Narrower N keeps
// the GEMM path at M = 1024 (4096 x 14336: fused 0.175-0.178 vs 0.182-0.184, 4096 x 4096 a tie,
// 2048 x 7168 and 6144 x 4096 slower). M = 2048 not measured: the GEMM path stays.
constexpr std::int64_t kFusedWideToM = 1024;
// Wide N with 256 tokens: the interleaved issue order beat pingpong in every pair of fp4m3's
// batches 1-3 on 28672 x 4096 (ms, il / pp): M = 256 0.1045 / 0.1066, 0.1043 / 0.1051; M = 512
// 0.1986 / 0.2004; M = 768 0.3276 / 0.3335; M = 1024 0.3434 / 0.3471, 0.3405 / 0.3444.
// Fused tile choice from the same sweep: 64 tokens up to M = 64; at N >= kSmallMWideToN 128 tokens
// up to M = 128, else 256 with pingpong, no split; narrower N splits K in 2 (the N / 128 row blocks
// alone leave most SMs idle), in 4 under 32 CTAs (2048 x 7168 M = 128), with 128 tokens up to
// M = 256 while the CTAs fit one wave (else 256 tokens: 6144 x 4096 M = 256 took 0.0567 ms with 128
// tokens x 2, 192 CTAs, in the dccb769 run vs 0.0453 with 256 x 2 in the sweep).
constexpr int kFusedMinCtasForK2 = 32;
// Session 5 (fp4m2's sweep at 5cdf062, docs/GEMM_LARGE_M.md): below kSmallMWideToN the persistent
// stream-K tactics (one CTA per SM, equal (tile, k64) shares) beat the cluster K split with 64-token
// tiles on every shape (4096 x 14336 M = 64: 0.0452 vs 0.0703 ms) and with 128-token tiles while
// those number <= 32 CTAs (4096 x 14336 M = 128: 0.0537 vs 0.0764; 4096 x 4096 M = 128: 0.0284 vs
// 0.0324; 2048 x 7168 M = 256: 0.0372 vs 0.0470); at 64 CTAs the K split stays (4096 x 4096 M = 256:
// 0.0324 vs 0.0364).
constexpr int kStreamKMaxCtas = 32;
// And at 48 < M <= 64 below kSmallMWideToN, over small-M streaming on the larger weights (same
// sweep vs the session-4 small-M defaults: 6144 x 4096 M = 64 0.0263 vs 0.038 ms, 4096 x 14336
// 0.0452 vs 0.051), not on the smaller ones (4096 x 4096: 0.0234 vs 0.0202; 2048 x 7168: 0.0249 vs
// 0.0204). Measured at M = 64 only; the band stops at 48, where small-M needs 8 fewer tokens per pass.
constexpr std::int64_t kStreamKOverSmallMFromM = 48;
constexpr std::int64_t kStreamKOverSmallMMinWeights = std::int64_t{24} << 20;  // 6144 x 4096
}  // namespace

int MmRunner::token_tiles(std::int64_t m) { return m <= 8 ? 1 : m <= 16 ? 2 : m <= 32 ? 4 : 8; }

int MmRunner::resident_ctas(int id, std::int64_t m) const {
  if (id < 0 || id >= tactic_count()) return 0;
  const auto i = static_cast<std::size_t>(id);
  const int tt = token_tiles(m);
  const auto e = static_cast<std::size_t>(tt == 1 ? 0 : tt == 2 ? 1 : tt == 4 ? 2 : 3);
  const MmTactic& t = tactics_[i];
  if (t.persist_stages > 0) return i < persist_blocks_.size() && e < 3 ? persist_blocks_[i][e] : 0;
  if (t.large_m || t.mid_tokens > 0) return 0;
  return i < small_blocks_.size() ? small_blocks_[i][e] : 0;
}

MmRunner::MmRunner(int device, DType out_dtype, std::int64_t n, std::int64_t k, const tune::BucketMapper& mapper)
    : device_(device),
      out_dtype_(out_dtype),
      n_(n),
      k_(k),
      sm_count_(device_info(device).sm_count),
      // v2 (session 3): lean-ring tactics shifted the ids of the mid-M and large-M tactics, so tune
      // caches written for v1 do not apply; v3 (session 4): persistent tactics after the small-M ones.
      key_("mm_bf16_fp4", std::string("bf16xnvfp4/v3/out=") + (out_dtype == DType::kFloat16 ? "fp16" : "bf16"),
           {static_cast<std::int64_t>(out_dtype), n, k}, mapper),
      default_cache_(std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(kDefaultCacheM) + 1)) {
  for (std::int64_t m = 0; m <= kDefaultCacheM; ++m) default_cache_[static_cast<std::size_t>(m)].store(-1, std::memory_order_relaxed);
  for (bool lean : {false, true})
    for (const auto& s : kShapes)
      for (int c : kClusters) {
        MmTactic t;
        t.rows_tiles = s[0];
        t.warps = s[1];
        t.cluster = c;
        t.lean_ring = lean;
        t.name = "small_m_r" + std::to_string(s[0]) + "_w" + std::to_string(s[1]) + "_c" + std::to_string(c) + (lean ? "_lean" : "");
        tactics_.push_back(t);
      }
  small_blocks_.resize(tactics_.size());
  for (std::size_t i = 0; i < tactics_.size(); ++i)
    for (int e = 0; e < 4; ++e) {
      const MmTactic& t = tactics_[i];
      const SmallMShape shape{t.rows_tiles, 1 << e, t.warps, t.cluster, t.lean_ring};
      small_blocks_[i][static_cast<std::size_t>(e)] =
          small_m_compiled(t.rows_tiles, 1 << e, t.warps, t.lean_ring) ? small_m_blocks_per_sm(shape, device) : 0;
    }
  for (const auto& s : kPersistentShapes)
    for (int b : kPersistCtasPerSm) {
      MmTactic t;
      t.rows_tiles = kPersistRowTiles;
      t.warps = s[0];
      t.persist_stages = s[1];
      t.ctas_per_sm = b;
      t.cluster = 1;
      t.name = "small_m_persist_w" + std::to_string(s[0]) + "_s" + std::to_string(s[1]) + "_b" + std::to_string(b);
      tactics_.push_back(t);
    }
  persist_blocks_.resize(tactics_.size());
  for (std::size_t i = 0; i < tactics_.size(); ++i)
    for (int e = 0; e < 3; ++e) {
      const MmTactic& t = tactics_[i];
      const PersistentShape shape{1 << e, t.warps, t.persist_stages};
      persist_blocks_[i][static_cast<std::size_t>(e)] =
          t.persist_stages > 0 && small_m_persistent_compiled(shape) ? small_m_persistent_blocks_per_sm(shape, device) : 0;
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
  if (t.persist_stages > 0) {  // compiled for T = 1, 2, 4; only as many CTAs per SM as fit at once
    if (m < 1 || m > 32) return false;
    const int resident = persist_blocks_[static_cast<std::size_t>(&t - tactics_.data())][m <= 8 ? 0 : m <= 16 ? 1 : 2];
    return t.ctas_per_sm <= resident && persistent_plan(n_, k_, token_tiles(m), t.warps, t.ctas_per_sm, sm_count_).ctas >= 1;
  }
  if (!small_m_compiled(t.rows_tiles, token_tiles(m), t.warps, t.lean_ring)) return false;
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
  if (m < 1 || m > kDefaultCacheM) return compute_default_tactic(m);
  std::atomic<int>& slot = default_cache_[static_cast<std::size_t>(m)];
  int id = slot.load(std::memory_order_relaxed);
  if (id < 0) {
    id = compute_default_tactic(m);
    slot.store(id, std::memory_order_relaxed);
  }
  return id;
}

int MmRunner::compute_default_tactic(std::int64_t m) const {
  // Ranges from the H200 per-tactic sweeps (docs/GEMM.md): weight streaming up to M = 32 (up to 64
  // below N = kSmallMWideToN), the fused mid-M kernel with 64-token tiles up to 64 (and up to 128
  // when K is long, where the large-M decode pass costs most), then decode pass + CUTLASS GEMM.
  if (m > kPersistFromM && m <= kPersistToM && n_ * k_ >= kPersistMinWeights) {
    const int id = persistent_tactic(m, kPersistDefault[0], kPersistDefault[1], kPersistDefault[2]);
    if (id >= 0) return id;
  }
  if (m > kStreamKOverSmallMFromM && m <= kMidMToM && n_ < kSmallMWideToN && n_ * k_ >= kStreamKOverSmallMMinWeights) {
    const int fused = default_fused_tactic(m);
    if (fused >= 0) return fused;
  }
  if (m <= kMidMFromM || (m <= kMidMToM && n_ < kSmallMWideToN)) return default_small_m_tactic(m);
  if (m <= kFusedToM || (n_ >= kSmallMWideToN && m <= kFusedWideToM)) {
    const int fused = default_fused_tactic(m);
    if (fused >= 0) return fused;
  }
  const int large = m > kMidMFromM ? default_large_m_tactic(m) : -1;
  if (m > kMidMFromM && (large < 0 || m <= kMidMToM || (m <= kMidMLongKToM && k_ >= kMidMLongK))) {
    // CTAs (one per 128 rows x 64 tokens x K split) capped: <= 112 up to M = 64, <= 132 above.
    const int mid = default_mid_m_tactic(m, m <= kMidMToM ? 112 : 132);
    if (mid >= 0) return mid;
  }
  if (large >= 0) return large;
  return default_small_m_tactic(m);
}

int MmRunner::persistent_tactic(std::int64_t m, int warps, int stages, int ctas_per_sm) const {
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
    if (t.persist_stages == stages && t.warps == warps && t.ctas_per_sm == ctas_per_sm && can_run(t, m)) return i;
  }
  return -1;
}

int MmRunner::default_large_m_tactic(std::int64_t m) const {
  // docs/GEMM_LARGE_M.md (H200 table): the wide cooperative tile once it fills the SMs, unless
  // the last of a few waves is under half full; otherwise 128x128 (or 64x256 for M <= 64 and a
  // very wide N; at M = 128 the 128x128 tile measured 4-8% faster on 28672x4096).
  const double tiles0 = std::ceil(static_cast<double>(m) / 128.0) * std::ceil(static_cast<double>(n_) / 256.0);
  const double waves = tiles0 / sm_count_;
  const double last = waves - std::floor(waves);
  const bool wide = waves >= 0.9 && !(waves < 4 && last > 0 && last < 0.5);
  int by_shape[3] = {-1, -1, -1};  // coop 128x256, coop 128x128, pingpong 64x256
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
    if (!t.large_m || t.large->algo != LargeMAlgo::kDequantGemm || !can_run(t, m)) continue;
    const int slot = t.large->tile_m == 64 ? 2 : t.large->tile_n == 256 ? 0 : 1;
    if (by_shape[slot] < 0) by_shape[slot] = i;
  }
  if (wide && by_shape[0] >= 0) return by_shape[0];
  if (m <= 64 && n_ >= 16384 && by_shape[2] >= 0) return by_shape[2];
  if (by_shape[1] >= 0) return by_shape[1];
  for (int v : by_shape)
    if (v >= 0) return v;
  return -1;
}

int MmRunner::default_fused_tactic(std::int64_t m) const {
  const bool wide = n_ >= kSmallMWideToN;
  const std::int64_t row_blocks = (n_ + 127) / 128;
  const bool one_wave_at_128 = row_blocks * ((m + 127) / 128) * 2 <= sm_count_;
  const int tokens = m <= 64 ? 64 : (m <= 128 || (!wide && m <= 256 && one_wave_at_128)) ? 128 : 256;
  const std::int64_t ctas = row_blocks * ((m + tokens - 1) / tokens);
  int split = 1;  // compiled splits: 64 tokens x {1, 4}, 128 x {1, 2, 4}, 256 x {1, 2}
  if (!wide) split = tokens == 64 || (tokens == 128 && ctas < kFusedMinCtasForK2) ? 4 : 2;
  // Wide N: 256 tokens interleaved (measured: the note under kFusedWideToM), 128 tokens pingpong.
  const bool interleave = wide && tokens == 256;
  const bool pingpong = wide && tokens == 128;
  const bool stream_k = !wide && (tokens == 64 || (tokens == 128 && ctas <= kStreamKMaxCtas));
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
    if (!t.large_m || t.large->algo != LargeMAlgo::kFusedWgmma || t.large->tile_m != tokens ||
        t.large->interleave != interleave || t.large->persistent != stream_k || !can_run(t, m))
      continue;
    if (stream_k || (t.large->split_k == split && t.large->pingpong == pingpong)) return i;
  }
  return -1;
}

int MmRunner::default_mid_m_tactic(std::int64_t m, int max_ctas) const {
  // 64-token tiles in the ranges the default uses (the best mid-M tile in every such cell of the
  // sweep), 128 only as the no-large-M fallback above M = 512; the largest cluster (K split) that
  // keeps the CTA count <= max_ctas and >= 8 k64 chunks per rank.
  const int tokens = m <= 512 ? 64 : 128;
  const int kc_count = static_cast<int>((k_ + kChunkK - 1) / kChunkK);
  const std::int64_t ctas = (n_ + kMidMRows - 1) / kMidMRows * ((m + tokens - 1) / tokens);
  int cluster = 1;
  for (int c : kMidMClusters)
    if (c == 1 || (ctas * c <= max_ctas && kc_count / c >= 8)) cluster = c;
  for (int i = 0; i < tactic_count(); ++i) {
    const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
    if (t.mid_tokens == tokens && t.cluster == cluster && can_run(t, m)) return i;
  }
  return -1;
}

int MmRunner::default_small_m_tactic(std::int64_t m) const {
  // A throughput model (constants per token tiles above; docs/GEMM.md): the busiest SM streams
  // ceil(CTAs / SMs) CTAs' tile-chunks (weighted by R and the ring); its rate grows with the warps
  // it holds at once (occupancy calculator) up to the model's saturating warps; every cluster rank adds a
  // reduction step. At least 4 k64 chunks per warp where possible.
  const int tt = token_tiles(m);
  const int tt_index = tt == 1 ? 0 : tt == 2 ? 1 : tt == 4 ? 2 : 3;
  const SmallMModel& model = tt == 1 ? kModelEightTokens : tt == 2 ? kModelSixteenTokens : kModelWide;
  const int kc_count = static_cast<int>((k_ + kChunkK - 1) / kChunkK);
  int best = -1;
  double best_cost = 1e30;
  for (int pass = 0; pass < 2 && best < 0; ++pass) {  // pass 1 drops the chunk rule (tiny K)
    for (int i = 0; i < tactic_count(); ++i) {
      const MmTactic& t = tactics_[static_cast<std::size_t>(i)];
      if (t.large_m || t.mid_tokens > 0 || t.persist_stages > 0 || !can_run(t, m)) continue;
      const double chunks_per_warp = std::ceil(static_cast<double>(kc_count) / (t.cluster * t.warps));
      if (pass == 0 && chunks_per_warp < 4.0) continue;
      const int blocks = std::max(1, small_blocks_[static_cast<std::size_t>(i)][static_cast<std::size_t>(tt_index)]);
      const double ctas = std::ceil(static_cast<double>(n_) / (t.rows_tiles * kTileRows)) * t.cluster *
                          std::ceil(static_cast<double>(m) / (8.0 * tt));
      const double per_sm = std::ceil(ctas / sm_count_);
      const double warps_at_once = std::min(per_sm, static_cast<double>(blocks)) * t.warps;
      const double busiest = per_sm * t.warps * t.rows_tiles * chunks_per_warp *
                             (t.rows_tiles == 2 ? 1.0 + model.two_row_tiles_cost : 1.0) *
                             (t.lean_ring ? 1.0 - model.lean_ring_gain : 1.0);
      const double cost = busiest / std::min(warps_at_once, model.saturating_warps) + model.cluster_step_cost * (t.cluster - 1);
      if (cost < best_cost) {
        best_cost = cost;
        best = i;
      }
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
  if (t.persist_stages > 0) {
    run_persistent(p, t, call.enable_pdl, stream);
    return;
  }
  launch_small_m(p, SmallMShape{t.rows_tiles, token_tiles(call.m), t.warps, t.cluster, t.lean_ring}, device_, call.enable_pdl,
                 stream);
}

void MmRunner::run_persistent(const SmallMParams& p, const MmTactic& t, bool enable_pdl, Stream stream) const {
  const PersistentPlan plan = persistent_plan(n_, k_, token_tiles(p.m), t.warps, t.ctas_per_sm, sm_count_);
  WorkspacePool& pool = WorkspacePool::global();
  // The counters must be zero on entry: a new (grown) block is zeroed once, in stream order; every
  // launch leaves them zero again.
  const bool grows = pool.capacity(device_, stream, kPersistCounters) < plan.counter_bytes;
  void* counters = pool.get(device_, stream, kPersistCounters, plan.counter_bytes);
  if (grows)
    FASTINFER_CUDA_CHECK(cudaMemsetAsync(counters, 0, pool.capacity(device_, stream, kPersistCounters), stream));
  SmallMPersistentParams pp;
  pp.base = p;
  pp.partials = static_cast<float*>(plan.partial_bytes ? pool.get(device_, stream, kPersistPartials, plan.partial_bytes) : nullptr);
  pp.counters = static_cast<unsigned*>(counters);
  pp.row_groups = plan.row_groups;
  pp.slots_per_group = plan.slots_per_group;
  pp.total = plan.total;
  pp.warps_total = plan.warps_total;
  const bool launched = launch_small_m_persistent(pp, PersistentShape{token_tiles(p.m), t.warps, t.persist_stages}, plan.ctas,
                                                  device_, enable_pdl, stream);
  if (!launched) check::fail("gemm::mm_bf16_fp4", "tactic", "name a compiled persistent small-M kernel", t.name);
}

}  // namespace fastinfer::gemm::detail
