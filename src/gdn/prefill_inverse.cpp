#include "gdn/prefill_inverse.h"

#include "gdn/cp_launch.h"
#include "gdn/cp_plan.h"
#include "gdn/prefill_fast_launch.h"
#include "runtime/workspace_carver.h"
#include "runtime/workspace_pool.h"

namespace fastinfer::gdn {
namespace {

constexpr std::int64_t kBlock = detail::kCpBlockLen;

struct InverseWorkspace {
  float* inverse;
  std::int64_t* offsets;
  std::size_t bytes;
};

// The one layout, in counting (base == nullptr) and carving mode.
InverseWorkspace carve(void* base, std::int64_t rows, std::int64_t heads) {
  WorkspaceCarver carver(base);
  InverseWorkspace w{};
  w.inverse = carver.take<float>(static_cast<std::size_t>(rows * heads * kBlock * kBlock));
  w.offsets = carver.take<std::int64_t>(static_cast<std::size_t>(rows + 1));
  w.bytes = carver.bytes();
  return w;
}

}  // namespace

const void* precompute_chunk_inverses(const PrefillParams& p, InputType input, int device, Stream stream,
                                      PrecomputedForm form, std::size_t max_bytes) {
  if (p.num_seqs <= 0 || p.total_tokens <= 0 || p.segment_offsets != nullptr) return nullptr;
  // Chunk c of sequence n is row cu_seqlens[n] / 64 + n + c (PrefillParams::chunk_inverse).
  const std::int64_t rows = p.total_tokens / kBlock + p.num_seqs;
  if (rows > detail::kCpMaxSequences) return nullptr;  // stage 1 runs one row per grid z index
  const std::size_t bytes = carve(nullptr, rows, p.num_state_heads).bytes;
  if (bytes > max_bytes) return nullptr;
  const InverseWorkspace w =
      carve(WorkspacePool::global().get(device, stream, "gdn.prefill.inverse", bytes), rows, p.num_state_heads);
  launch_prefill_chunk_rows(p, w.offsets, rows, stream);

  detail::CpStageParams s;
  s.k = p.k;
  s.k_stride_token = p.k_stride_token;
  s.k_stride_head = p.k_stride_head;
  s.alpha = p.alpha;
  s.alpha_stride_token = p.alpha_stride_token;
  s.beta = p.beta;
  s.beta_stride_token = p.beta_stride_token;
  s.cu_seqlens = w.offsets;
  s.offsets_are_int64 = true;
  s.num_seqs = static_cast<int>(rows);
  s.num_k_heads = p.num_k_heads;
  s.num_v_heads = p.num_v_heads;
  s.num_state_heads = p.num_state_heads;
  s.use_qk_l2norm = p.use_qk_l2norm;
  s.chunk_len = static_cast<int>(kBlock);
  s.chunks_per_seq = 1;
  s.blocks_per_seq = 1;
  // T_g hi + lo (2 x 2 bytes per element) takes the bytes of the fp32 Tinv it replaces.
  if (form == PrecomputedForm::kTGated) {
    s.block_t_gated = w.inverse;
  } else {
    s.block_inverse = w.inverse;
  }
  if (input == InputType::kBFloat16) {
    detail::launch_cp_block_inverse<detail::CpInputType::kBFloat16>(s, stream);
  } else {
    detail::launch_cp_block_inverse<detail::CpInputType::kFloat16>(s, stream);
  }
  return w.inverse;
}

}  // namespace fastinfer::gdn
