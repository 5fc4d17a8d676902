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

bool should_use_cp(std::int64_t num_seqs, std::int64_t num_state_heads, std::int64_t max_seqlen, int sm_count) {
  return 2 * num_seqs * num_state_heads < sm_count && max_seqlen >= 2 * kCpMinChunkLen;
}

}  // namespace fastinfer::gdn::detail
