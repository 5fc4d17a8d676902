#include "gdn/prefill_inverse.h"

#include <algorithm>

#include "fastinfer/gdn_prefill.h"
#include "gdn/cp_launch.h"
#include "gdn/cp_plan.h"
#include "gdn/prefill_fast_launch.h"
#include "runtime/workspace_carver.h"
#include "runtime/workspace_pool.h"

namespace fastinfer::gdn {
namespace {

constexpr std::int64_t kBlock = detail::kCpBlockLen;
constexpr std::size_t kRowBytes = sizeof(float) * kBlock * kBlock;  // per chunk and head, either form

// The one layout, in counting (base == nullptr) and carving mode.
struct Carved {
  InverseRows rows;
  std::size_t bytes;
};
Carved carve(void* base, std::int64_t rows, std::int64_t heads) {
  WorkspaceCarver carver(base);
  Carved c{};
  c.rows.inverse = carver.take<float>(static_cast<std::size_t>(rows * heads * kBlock * kBlock));
  c.rows.offsets = carver.take<std::int64_t>(static_cast<std::size_t>(rows + 1));
  c.bytes = carver.bytes();
  return c;
}

// Hsab / min(Hq, Hk, Hv): the heads of one q, k or v head (GQA and GVA map by repeat-interleave).
int head_ratio(const PrefillParams& p) {
  return p.num_state_heads / std::min({p.num_q_heads, p.num_k_heads, p.num_v_heads});
}

std::size_t state_element_bytes(StateType t) { return t == StateType::kFloat32 ? 4 : 2; }

void offset_state(StateTensorParams& s, int first_head) {
  if (s.data == nullptr) return;
  s.data = static_cast<unsigned char*>(s.data) +
           static_cast<std::size_t>(first_head) * kHeadDim * kHeadDim * state_element_bytes(s.type);
}

}  // namespace

InverseGroups plan_inverse_groups(const PrefillParams& p, std::size_t max_bytes) {
  InverseGroups g;
  if (p.num_seqs <= 0 || p.total_tokens <= 0 || p.segment_offsets != nullptr) return g;
  // Chunk c of sequence n is row cu_seqlens[n] / 64 + n + c (PrefillParams::chunk_inverse).
  g.rows = p.total_tokens / kBlock + p.num_seqs;
  if (g.rows > detail::kCpMaxSequences) return g;  // stage 1 runs one row per grid z index
  const int step = head_ratio(p), heads = p.num_state_heads;
  const std::size_t offsets_bytes = carve(nullptr, g.rows, 0).bytes;
  const std::size_t per_head = static_cast<std::size_t>(g.rows) * kRowBytes;
  const std::int64_t fit = max_bytes > offsets_bytes ? static_cast<std::int64_t>((max_bytes - offsets_bytes) / per_head) : 0;
  const std::int64_t fit_steps = fit / step;
  if (fit_steps == 0) return g;
  // As few groups as fit, of equal size (in whole head ratios) but for a smaller last one.
  const std::int64_t steps = heads / step;
  const std::int64_t groups = (steps + fit_steps - 1) / fit_steps;
  g.heads_per_group = static_cast<int>((steps + groups - 1) / groups * step);
  g.bytes = carve(nullptr, g.rows, g.heads_per_group).bytes;
  return g;
}

PrefillParams head_group(const PrefillParams& p, int first, int count) {
  if (first == 0 && count == p.num_state_heads) return p;
  PrefillParams g = p;
  // Head h of the group is state head first + h; with first a multiple of every head ratio,
  // (first + h) * H / Hsab = first * H / Hsab + h * H / Hsab, so the group maps its q/k/v heads
  // exactly as the whole call did.
  const auto first_of = [&](int heads) { return static_cast<std::int64_t>(first) * heads / p.num_state_heads; };
  constexpr std::size_t kInputBytes = 2;  // bf16 or fp16
  g.q = static_cast<const unsigned char*>(p.q) + first_of(p.num_q_heads) * p.q_stride_head * kInputBytes;
  g.k = static_cast<const unsigned char*>(p.k) + first_of(p.num_k_heads) * p.k_stride_head * kInputBytes;
  g.v = static_cast<const unsigned char*>(p.v) + first_of(p.num_v_heads) * p.v_stride_head * kInputBytes;
  g.output = static_cast<unsigned char*>(p.output) + static_cast<std::int64_t>(first) * p.out_stride_head * kInputBytes;
  if (g.alpha != nullptr) g.alpha += first;
  if (g.beta != nullptr) g.beta += first;
  g.num_q_heads = static_cast<int>(static_cast<std::int64_t>(count) * p.num_q_heads / p.num_state_heads);
  g.num_k_heads = static_cast<int>(static_cast<std::int64_t>(count) * p.num_k_heads / p.num_state_heads);
  g.num_v_heads = static_cast<int>(static_cast<std::int64_t>(count) * p.num_v_heads / p.num_state_heads);
  g.num_state_heads = count;
  offset_state(g.initial_state, first);
  offset_state(g.output_state, first);
  offset_state(g.checkpoints, first);
  return g;
}

InverseRows prepare_inverse_rows(const PrefillParams& p, const InverseGroups& groups, int device, Stream stream) {
  const Carved c =
      carve(WorkspacePool::global().get(device, stream, "gdn.prefill.inverse", groups.bytes), groups.rows, groups.heads_per_group);
  launch_prefill_chunk_rows(p, c.rows.offsets, groups.rows, stream);
  return c.rows;
}

const void* launch_chunk_inverses(const PrefillParams& p, const InverseGroups& groups, const InverseRows& rows,
                                  InputType input, PrecomputedForm form, Stream stream) {
  detail::CpStageParams s;
  s.k = p.k;
  s.k_stride_token = p.k_stride_token;
  s.k_stride_head = p.k_stride_head;
  s.alpha = p.alpha;
  s.alpha_stride_token = p.alpha_stride_token;
  s.beta = p.beta;
  s.beta_stride_token = p.beta_stride_token;
  s.cu_seqlens = rows.offsets;
  s.offsets_are_int64 = true;
  s.num_seqs = static_cast<int>(groups.rows);
  s.num_k_heads = p.num_k_heads;
  s.num_v_heads = p.num_v_heads;
  s.num_state_heads = p.num_state_heads;
  s.use_qk_l2norm = p.use_qk_l2norm;
  s.chunk_len = static_cast<int>(kBlock);
  s.chunks_per_seq = 1;
  s.blocks_per_seq = 1;
  // T_g hi + lo (2 x 2 bytes per element) takes the bytes of the fp32 Tinv it replaces.
  if (form == PrecomputedForm::kTGated) {
    s.block_t_gated = rows.inverse;
  } else {
    s.block_inverse = static_cast<float*>(rows.inverse);
  }
  if (input == InputType::kBFloat16) {
    detail::launch_cp_block_inverse<detail::CpInputType::kBFloat16>(s, stream);
  } else {
    detail::launch_cp_block_inverse<detail::CpInputType::kFloat16>(s, stream);
  }
  return rows.inverse;
}

}  // namespace fastinfer::gdn
