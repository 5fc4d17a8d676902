#include "gdn/cp_plan.h"

#include <algorithm>

namespace fastinfer::gdn::detail {

CpPlan make_cp_plan(std::int64_t num_seqs, std::int64_t num_state_heads, std::int64_t max_seqlen, int sm_count,
                    std::int64_t forced_chunk_len) {
  CpPlan plan;
  plan.num_seqs = num_seqs;
  plan.num_state_heads = num_state_heads;
  const std::int64_t len = std::max<std::int64_t>(max_seqlen, 1);
  if (forced_chunk_len > 0) {
    plan.chunk_len = (forced_chunk_len + kCpBlockLen - 1) / kCpBlockLen * kCpBlockLen;
  } else {
    const std::int64_t pairs = std::max<std::int64_t>(num_seqs * num_state_heads, 1);
    const std::int64_t wave_chunks = std::max<std::int64_t>(sm_count / pairs, 1);
    const std::int64_t max_chunks = std::max<std::int64_t>(len / kCpMinChunkLen, 1);
    const std::int64_t chunks = std::min(wave_chunks, max_chunks);
    const std::int64_t per_chunk = (len + chunks - 1) / chunks;
    plan.chunk_len = (per_chunk + kCpBlockLen - 1) / kCpBlockLen * kCpBlockLen;
  }
  plan.chunks_per_seq = (len + plan.chunk_len - 1) / plan.chunk_len;
  return plan;
}

std::int64_t cp_map_splits_at_most(const CpPlan& plan, std::int64_t wanted) {
  const std::int64_t blocks = plan.chunk_len / kCpBlockLen;
  for (std::int64_t s = std::min(std::max<std::int64_t>(wanted, 1), blocks); s > 1; --s)
    if (blocks % s == 0) return s;
  return 1;
}

std::int64_t cp_map_splits(const CpPlan& plan, int sm_count, bool last_chunk_mapped) {
  const std::int64_t blocks = plan.chunk_len / kCpBlockLen;
  const std::int64_t mapped = std::max<std::int64_t>(plan.chunks_per_seq - (last_chunk_mapped ? 0 : 1), 1);
  const std::int64_t ctas = std::max<std::int64_t>(plan.num_seqs * plan.num_state_heads * mapped, 1);
  const std::int64_t sms = std::max(sm_count, 1);
  const double step_us = kCpFixupStepBaseUs + kCpFixupStepPerPairUs * static_cast<double>(plan.num_seqs * plan.num_state_heads);
  std::int64_t best = 1;
  double best_cost = -1;
  for (std::int64_t s = 1; s <= blocks / kCpMinMapBlocks || s == 1; ++s) {
    if (blocks % s != 0) continue;
    const std::int64_t waves = (ctas * s + sms - 1) / sms;
    const double cost = static_cast<double>(waves * (blocks / s)) * kCpMapBlockUs + static_cast<double>(mapped * s) * step_us;
    if (best_cost < 0 || cost < best_cost) best = s, best_cost = cost;
  }
  return best;
}

bool cp_prefetch_blocks(const CpPlan& plan, bool wgmma_maps, bool ready_tiles) {
  if (wgmma_maps && ready_tiles) return true;
  return !wgmma_maps || (plan.map_splits > 1 && plan.chunk_len / kCpBlockLen / plan.map_splits >= kCpPrefetchMinPieceBlocks);
}

int cp_fixup_rows(const CpPlan& plan, int sm_count) {
  const std::int64_t pairs = plan.num_seqs * plan.num_state_heads;
  return pairs * 4 * 2 >= sm_count ? 32 : pairs * 16 <= sm_count ? 8 : 16;
}

bool cp_plan_covers_tokens(const CpPlan& plan, std::int64_t total_tokens) {
  return plan.chunks_per_seq * plan.chunk_len >= total_tokens;
}

bool should_use_cp(std::int64_t num_seqs, std::int64_t num_state_heads, std::int64_t max_seqlen, int sm_count) {
  if (5 * num_seqs * num_state_heads < 2 * sm_count && max_seqlen >= kCpAutoMinSeqLen) return true;
  return 2 * num_seqs * num_state_heads <= sm_count && max_seqlen >= kCpAutoHalfSmsMinSeqLen;
}

}  // namespace fastinfer::gdn::detail
