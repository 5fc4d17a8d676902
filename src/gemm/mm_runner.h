#pragma once
// The immutable mm_bf16_fp4 runner of one (device, out dtype, N, K, bucket mapper): its tactic
// table (small-M shapes x cluster sizes, mid-M token tiles x cluster sizes, then the large-M configs), the default heuristic and the
// launch of a tactic. Built once per key through a RunnerCache; run() allocates nothing.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fastinfer/gemm.h"
#include "fastinfer/tune.h"
#include "gemm/large_m.h"
#include "gemm/small_m_params.h"

namespace fastinfer::gemm::detail {

// One call's operands (validated by the public entry).
struct MmCall {
  const void* a = nullptr;
  int lda = 0;
  const Bf16Fp4Weights::Impl* weights = nullptr;
  void* out = nullptr;
  int ldo = 0;
  int m = 0;
  bool enable_pdl = false;
};

struct MmTactic {
  bool large_m = false;
  int rows_tiles = 0, warps = 0, cluster = 0;  // small-M shape (token tiles follow from M)
  bool lean_ring = false;                      // small-M: the lean ring (fewer stages, more warps per SM)
  int mid_tokens = 0;                          // mid-M (fused wgmma) tactic: tokens per CTA, else 0
  int persist_stages = 0;                      // persistent small-M: ring stages per warp, else 0
  int ctas_per_sm = 0;                         // persistent small-M: grid = SMs x this (fewer on small shapes)
  const LargeMConfig* large = nullptr;         // large-M config
  std::string name;
};

class MmRunner {
 public:
  MmRunner(int device, DType out_dtype, std::int64_t n, std::int64_t k, const tune::BucketMapper& mapper);

  const tune::RunnerKey& tune_key() const { return key_; }
  // Tactics that can run M = m, in id order.
  std::vector<int> tactics(std::int64_t m) const;
  // The heuristic's tactic for M = m; computed once per M up to kDefaultCacheM (then read from a
  // table), so a call without a tuner entry does not loop over the tactics every time.
  int default_tactic(std::int64_t m) const;
  const MmTactic& tactic(int id) const { return tactics_[static_cast<std::size_t>(id)]; }
  int tactic_count() const { return static_cast<int>(tactics_.size()); }
  // Launches `tactic` (-1: the default) on `stream`.
  void run(const MmCall& call, int tactic, Stream stream) const;

  static int token_tiles(std::int64_t m);
  // CTAs of tactic `id` resident per SM at M = m (occupancy calculator, read at construction; 0 if
  // not compiled or not a small-M / persistent tactic): what the small-M model uses.
  int resident_ctas(int id, std::int64_t m) const;

 private:
  bool can_run(const MmTactic& t, std::int64_t m) const;
  int compute_default_tactic(std::int64_t m) const;
  int default_small_m_tactic(std::int64_t m) const;
  int persistent_tactic(std::int64_t m, int warps, int stages, int ctas_per_sm) const;
  int default_mid_m_tactic(std::int64_t m, int max_ctas) const;
  int default_fused_tactic(std::int64_t m) const;  // -1 when no fused tactic fits (K % 64 != 0, ...)
  int default_large_m_tactic(std::int64_t m) const;
  void run_persistent(const SmallMParams& p, const MmTactic& t, bool enable_pdl, Stream stream) const;
  LargeMParams large_params(const MmCall& call) const;

  int device_;
  DType out_dtype_;
  std::int64_t n_, k_;
  int sm_count_;
  std::vector<MmTactic> tactics_;
  // Small-M tactics: CTAs resident per SM for token tiles 1, 2, 4, 8 (occupancy calculator, filled
  // once at construction; 0 where not compiled).
  std::vector<std::array<int, 4>> small_blocks_;
  // Persistent tactics: CTAs resident per SM for token tiles 1, 2, 4 (0 where not compiled).
  std::vector<std::array<int, 3>> persist_blocks_;
  tune::RunnerKey key_;
  // default_tactic per M (index m, M <= kDefaultCacheM), -1 until first asked. The runner stays
  // logically immutable: racing callers compute and store the same value (relaxed atomics).
  static constexpr std::int64_t kDefaultCacheM = 8192;
  std::unique_ptr<std::atomic<int>[]> default_cache_;
};

}  // namespace fastinfer::gemm::detail
