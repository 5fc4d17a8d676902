#include "gdn/cp.h"

#include <algorithm>

#include "fastinfer/device.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"
#include "runtime/workspace_carver.h"
#include "runtime/workspace_pool.h"
#include "gdn/cp_launch.h"
#include "gdn/prefill_runner.h"

namespace fastinfer::gdn::detail {
namespace {

constexpr const char* kOp = "gdn::prefill (context-parallel)";
constexpr int kD = kHeadDim;

// The one workspace layout, in counting mode (base == nullptr) and carving mode.
struct CpWorkspace {
  float* block_inverse;
  void* block_t_gated;
  float* map_m;
  float* map_b;
  float* chunk_states;
  void* segment_offsets;
  std::int32_t* segment_sequence;
  std::int32_t* tail_segment_sequence;
  void* block_map_tiles;  // CpOptions::ready_tiles only
  void* block_k_tiles;
  float* block_gate_last;
  std::size_t bytes;
};

// k_heads > 0: with stage 2's ready tiles (CpOptions::ready_tiles).
CpWorkspace carve(void* base, const CpPlan& plan, std::int64_t k_heads) {
  WorkspaceCarver carver(base);
  const std::size_t heads = static_cast<std::size_t>(plan.num_state_heads);
  const std::size_t blocks = static_cast<std::size_t>(plan.num_seqs * plan.blocks_per_seq());
  const std::size_t chunks = static_cast<std::size_t>(plan.segments());
  CpWorkspace w{};
  w.block_inverse = carver.take<float>(blocks * heads * kCpBlockLen * kCpBlockLen);
  // T_g hi + lo in the 16-bit input dtype: the bytes of the fp32 Tinv.
  w.block_t_gated = carver.take<float>(blocks * heads * kCpBlockLen * kCpBlockLen);
  const std::size_t maps = static_cast<std::size_t>(plan.map_rows());
  w.map_m = carver.take<float>(maps * heads * kD * kD);
  w.map_b = carver.take<float>(maps * heads * kD * kD);
  w.chunk_states = carver.take<float>(chunks * heads * kD * kD);
  w.segment_offsets = carver.take<std::int64_t>(chunks + 1);
  w.segment_sequence = carver.take<std::int32_t>(chunks);
  w.tail_segment_sequence = carver.take<std::int32_t>(chunks);
  if (k_heads > 0) {
    // Three 64 x 64 16-bit T tiles per block and head, K as 64 x 128 fp16 per block and k head.
    w.block_map_tiles = carver.take<std::uint16_t>(blocks * heads * 3 * kCpBlockLen * kCpBlockLen);
    w.block_k_tiles = carver.take<std::uint16_t>(blocks * static_cast<std::size_t>(k_heads) * kCpBlockLen * kD);
    w.block_gate_last = carver.take<float>(blocks * heads);
  }
  w.bytes = carver.bytes();
  return w;
}

CpStateType state_type(DType t) {
  return t == DType::kBFloat16 ? CpStateType::kBFloat16 : t == DType::kFloat16 ? CpStateType::kFloat16 : CpStateType::kFloat32;
}

// The CP-specific constraints for callers of run_cp_stages, which bypass gdn::prefill (tests,
// benchmarks). gdn::prefill's validation implies the k/v layout rules (16-byte rows).
void validate_cp(const PrefillArgs& a, const ExecContext& ctx) {
  check::require(ctx.device.is_cuda(), kOp, "q", "be on a CUDA device", to_string(ctx.device));
  for (const auto& [name, t] : {std::pair<const char*, const TensorView*>{"k", &a.k}, {"v", &a.v}}) {
    check::require(t->stride(0) % 4 == 0 && reinterpret_cast<std::uintptr_t>(t->data) % 8 == 0, kOp, name,
                   "have 8-byte aligned rows (token stride a multiple of 4 elements)",
                   "token stride " + std::to_string(t->stride(0)));
    check::require(t->stride(2) == 1, kOp, name, "have a contiguous last dimension", "stride " + std::to_string(t->stride(2)));
  }
  check::require(a.cu_seqlens.size(0) - 1 <= kCpMaxSequences, kOp, "cu_seqlens", "describe at most 65535 sequences",
                 std::to_string(a.cu_seqlens.size(0) - 1));
}

void (*const kInverse[2])(const CpStageParams&, cudaStream_t) = {launch_cp_block_inverse<CpInputType::kBFloat16>,
                                                                 launch_cp_block_inverse<CpInputType::kFloat16>};
// [bf16 hi + lo, fp16 operands, fp16 operands on wgmma][input type]
void (*const kMaps[3][2])(const CpStageParams&, cudaStream_t) = {
    {launch_cp_chunk_maps<CpInputType::kBFloat16>, launch_cp_chunk_maps<CpInputType::kFloat16>},
    {launch_cp_chunk_maps_fp16_operands<CpInputType::kBFloat16>, launch_cp_chunk_maps_fp16_operands<CpInputType::kFloat16>},
    {launch_cp_chunk_maps_wgmma<CpInputType::kBFloat16>, launch_cp_chunk_maps_wgmma<CpInputType::kFloat16>}};


// Stages 1-3 for validated arguments.
CpStageView launch_stages(const PrefillArgs& a, const ExecContext& ctx, const CpOptions& options, float* final_states) {
  const int device = ctx.device.index;
  const DeviceInfo& info = device_info(device);
  const std::int64_t n_seqs = a.cu_seqlens.size(0) - 1;
  const std::int64_t hsab = std::max(a.q.size(1), a.v.size(1));
  const std::int64_t max_len = options.max_seqlen > 0 ? options.max_seqlen : a.k.size(0);
  CpPlan plan = make_cp_plan(n_seqs, hsab, max_len, info.sm_count, options.chunk_len);
  plan.map_splits = options.map_splits == 0  ? cp_map_splits(plan, info.sm_count, final_states != nullptr)
                    : options.map_splits > 0 ? cp_map_splits_at_most(plan, options.map_splits)
                                             : 1;

  // Stage 2 on stage 1's ready tiles (wgmma stage 2 only).
  const bool wgmma_maps = options.fp16_operands && options.wgmma_maps;
  const bool ready_tiles = wgmma_maps && options.ready_tiles != 0;
  const std::int64_t tile_k_heads = ready_tiles ? a.k.size(1) : 0;
  DeviceGuard guard(device);
  const std::size_t bytes = carve(nullptr, plan, tile_k_heads).bytes;
  const CpWorkspace w = carve(WorkspacePool::global().get(device, ctx.stream, "gdn.cp", bytes), plan, tile_k_heads);

  CpStageParams p;
  p.k = a.k.data;
  p.v = a.v.data;
  p.k_stride_token = a.k.stride(0);
  p.k_stride_head = a.k.stride(1);
  p.v_stride_token = a.v.stride(0);
  p.v_stride_head = a.v.stride(1);
  if (a.alpha) p.alpha = static_cast<const float*>(a.alpha->data), p.alpha_stride_token = a.alpha->stride(0);
  if (a.beta) p.beta = static_cast<const float*>(a.beta->data), p.beta_stride_token = a.beta->stride(0);
  p.cu_seqlens = a.cu_seqlens.data;
  p.offsets_are_int64 = a.cu_seqlens.dtype == DType::kInt64;
  p.num_seqs = static_cast<int>(n_seqs);
  p.num_k_heads = static_cast<int>(a.k.size(1));
  p.num_v_heads = static_cast<int>(a.v.size(1));
  p.num_state_heads = static_cast<int>(hsab);
  p.use_qk_l2norm = a.use_qk_l2norm;
  if (a.initial_state) {
    p.initial_state = a.initial_state->data;
    p.initial_state_type = state_type(a.initial_state->dtype);
    p.initial_state_slot_stride = a.initial_state->stride(0);
    p.initial_state_num_slots = a.initial_state->size(0);
  }
  if (a.state_indices) p.state_indices = static_cast<const std::int32_t*>(a.state_indices->data);
  p.chunk_len = static_cast<int>(plan.chunk_len);
  p.chunks_per_seq = static_cast<int>(plan.chunks_per_seq);
  p.blocks_per_seq = static_cast<int>(plan.blocks_per_seq());
  p.map_splits = static_cast<int>(plan.map_splits);
  p.block_inverse = w.block_inverse;
  p.block_t_gated = w.block_t_gated;  // stage 1 writes both: stage 2 needs Tinv, stage 4 T_g
  if (ready_tiles) {
    // Stage 2 reads the ready tiles instead of Tinv; Tinv only for the stage checks (final_states).
    p.block_map_tiles = w.block_map_tiles;
    p.block_k_tiles = w.block_k_tiles;
    p.block_gate_last = w.block_gate_last;
    if (final_states == nullptr) p.block_inverse = nullptr;
  }
  p.map_m = w.map_m;
  p.map_b = w.map_b;
  p.chunk_states = w.chunk_states;
  p.final_states = final_states;
  p.segment_offsets = w.segment_offsets;
  p.segment_sequence = w.segment_sequence;
  // Stage 4 in two launches where a sequence may be longer than the plan (prefill_cp).
  const bool split_stage4 = options.stage4_without_solve != 0 && !cp_plan_covers_tokens(plan, a.k.size(0));
  p.tail_segment_sequence = split_stage4 ? w.tail_segment_sequence : nullptr;
  p.programmatic_launch = options.programmatic_launch;
  p.fp16_operands = options.fp16_operands;
  p.wgmma_maps = wgmma_maps;
  p.prefetch_blocks = options.prefetch_blocks < 0 ? cp_prefetch_blocks(plan, p.wgmma_maps, ready_tiles)
                                                  : options.prefetch_blocks != 0;
  // Stage 2 composes no map of a sequence's last chunk unless final_states is asked for.
  p.skip_last_chunk_inverse = final_states == nullptr && options.skip_last_chunk_inverse;
  p.lower_inverse_blocks = options.lower_inverse_blocks;
  p.fixup_rows = options.fixup_rows == 8 || options.fixup_rows == 16 || options.fixup_rows == 32 ? options.fixup_rows
                                                                      : cp_fixup_rows(plan, info.sm_count);

  const int input = a.k.dtype == DType::kFloat16 ? 1 : 0;
  if (options.first_stage <= 1) kInverse[input](p, ctx.stream);
  if (options.first_stage <= 2 && options.last_stage >= 2) kMaps[p.wgmma_maps ? 2 : p.fp16_operands ? 1 : 0][input](p, ctx.stream);
  if (options.last_stage >= 3) launch_cp_fixup(p, ctx.stream);
  return {plan, w.block_inverse, w.block_t_gated, w.map_m, w.map_b, w.chunk_states, w.segment_offsets, w.segment_sequence,
          p.tail_segment_sequence};
}

}  // namespace

CpStageView run_cp_stages(const PrefillArgs& a, const ExecContext& ctx, const CpOptions& options, float* final_states) {
  validate_cp(a, ctx);
  return launch_stages(a, ctx, options, final_states);
}

void prefill_cp(const PrefillArgs& a, const PrefillShape& shape, const ExecContext& ctx, const CpOptions& options) {
  CpOptions all_stages = options;
  all_stages.last_stage = 3;
  if (all_stages.map_splits < 0) all_stages.map_splits = all_stages.first_stage <= 1 ? 0 : 1;
  const CpStageView stages = launch_stages(a, ctx, all_stages, nullptr);
  // Stage 4: the prefill kernel with one work item per (CP chunk, head), each starting from its fixed-up
  // state (chunk_states; chunk 0's entry is the initial state, so no segment reads initial_state
  // and in-place output_state is safe).
  PrefillParams p = make_prefill_params(a, shape);
  p.segment_offsets = stages.segment_offsets;
  p.segment_sequence = stages.segment_sequence;
  p.num_segments = static_cast<int>(stages.plan.segments());
  p.segment_states = stages.chunk_states;
  // Stage 1's T_g of every block: stage 4 loads it instead of solving T and building T_g. Only a
  // segment past the plan (a max_seqlen hint below the longest sequence) lacks rows and needs the
  // kernel's solve fallback: such segments are in stage 3's tail table (when the plan may not
  // cover every sequence), run first by the solve-capable instantiation (usually all its items
  // are empty), and the rest by the instantiation without the solve (wgmma consumers).
  p.chunk_t_gated = stages.block_t_gated;
  p.chunk_inverse_segment_blocks = static_cast<int>(stages.plan.chunk_len / kCpBlockLen);
  p.programmatic_launch = options.programmatic_launch;
  const PrefillRunnerKey key{ctx.device.index, a.q.dtype == DType::kBFloat16 ? InputType::kBFloat16 : InputType::kFloat16};
  const auto runner = prefill_runner(key);
  if (stages.tail_segment_sequence != nullptr) {
    PrefillParams tail = p;
    tail.segment_sequence = stages.tail_segment_sequence;
    runner->run(tail, ctx.stream);
  }
  p.chunk_t_gated_covers_segments =
      options.stage4_without_solve != 0 && (stages.tail_segment_sequence != nullptr || cp_plan_covers_tokens(stages.plan, a.k.size(0)));
  runner->run(p, ctx.stream);
}

}  // namespace fastinfer::gdn::detail
