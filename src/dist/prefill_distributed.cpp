// gdn::prefill_distributed: validate -> resolve {device, stream} once -> slice map (CP stages
// 1-3 + affine chain) -> one all-gather -> fold into the entering state -> local gdn::prefill.
// docs/GDN_DISTRIBUTED.md has the math and the measurements.
#include <algorithm>

#include "dist/affine_chain.h"
#include "dist/nccl_backend.h"
#include "dist/rank_pipeline.h"
#include "dist/validate.h"
#include "fastinfer/gdn_distributed.h"
#include "gdn/cp.h"
#include "gdn/cp_launch.h"
#include "gdn/prefill_runner.h"
#include "gdn/prefill_validate.h"
#include "runtime/device_guard.h"
#include "runtime/workspace_carver.h"
#include "runtime/workspace_pool.h"

namespace fastinfer {
namespace gdn {
namespace {

constexpr std::int64_t kStateElems = kHeadDim * kHeadDim;

// One workspace block: this rank's contribution [M; B] (fp32 [2, N, H, 128, 128]), everyone's
// contributions after the all-gather ([world, 2, N, H, 128, 128]) and the entering state.
struct DistWorkspace {
  float* send;
  float* recv;
  float* entering;
  std::size_t bytes;
};

DistWorkspace carve(void* base, std::int64_t contribution, int world) {
  WorkspaceCarver carver(base);
  DistWorkspace w{};
  w.send = carver.take<float>(static_cast<std::size_t>(contribution));
  w.recv = carver.take<float>(static_cast<std::size_t>(contribution) * static_cast<std::size_t>(world));
  w.entering = carver.take<float>(static_cast<std::size_t>(contribution / 2));
  w.bytes = carver.bytes();
  return w;
}

dist::detail::ChainStateType chain_type(DType t) {
  return t == DType::kBFloat16 ? dist::detail::ChainStateType::kBFloat16
         : t == DType::kFloat16 ? dist::detail::ChainStateType::kFloat16
                                : dist::detail::ChainStateType::kFloat32;
}

// CP stages 1-3 on the local slices from a zero state: the chunk maps (M_c, B_c) in the call's
// "gdn.cp" workspace. `final_states` must be given so stage 2 composes every chunk (it lands in
// the B slot of the contribution, which the chain then overwrites).
detail::CpStageView chunk_maps(const PrefillArgs& local, const PrefillShape& shape, const DistributedPrefillOptions& options,
                               const ExecContext& ctx, float* final_states) {
  PrefillArgs maps = local;  // the maps start from zero; the chain folds the initial state in
  maps.initial_state.reset();
  maps.state_indices.reset();
  maps.output_state.reset();
  detail::CpOptions cp;
  cp.max_seqlen = options.max_slice_len > 0 ? options.max_slice_len : local.max_seqlen > 0 ? local.max_seqlen : shape.total_tokens;
  return detail::run_cp_stages(maps, ctx, cp, final_states);
}

// The map of this rank's slice of every sequence into w.send: M (ranks > 0) and B, or on rank 0
// the state after the slice from the real initial state. The chain composes the chunk maps of
// `view` (a sequence with an empty slice, or no view at all, gets the identity map).
void slice_maps(const PrefillArgs& local, const PrefillShape& shape, int rank, const detail::CpStageView* view,
                const ExecContext& ctx, const DistWorkspace& w) {
  const std::int64_t heads_elems = shape.hsab * kStateElems;
  dist::detail::AffineChainParams chain;
  chain.num_seqs = static_cast<int>(shape.num_seqs);
  chain.num_heads = static_cast<int>(shape.hsab);
  chain.with_m = rank > 0;
  chain.out_m = w.send;
  chain.out_state = w.send + shape.num_seqs * heads_elems;
  chain.cu_seqlens = local.cu_seqlens.data;
  chain.offsets_are_int64 = local.cu_seqlens.dtype == DType::kInt64;
  if (rank == 0 && local.initial_state) {
    chain.init = local.initial_state->data;
    chain.init_type = chain_type(local.initial_state->dtype);
    chain.init_slot_stride = local.initial_state->stride(0);
    if (local.state_indices) chain.init_indices = static_cast<const std::int32_t*>(local.state_indices->data);
  }
  if (view != nullptr) {
    chain.step_m = view->map_m;
    chain.step_b = view->map_b;
    chain.step_stride = heads_elems;
    chain.seq_stride = view->plan.chunks_per_seq * heads_elems;
    chain.chunk_len = static_cast<int>(view->plan.chunk_len);
  }
  dist::detail::launch_affine_chain(chain, ctx.stream);
}

// The local CP prefill resumed from the chunk maps of `view`: stage 3 again, now from the real
// state entering the slice (`from.initial_state`), then stage 4 (the prefill kernel over the
// chunks as segments), as detail::prefill_cp does after its own stages 1-3. Stages 1-2 are not
// repeated: that is what makes the slice map nearly free on top of the local prefill.
void resume_cp_prefill(const PrefillArgs& from, const PrefillShape& shape, const detail::CpStageView& view,
                       const ExecContext& ctx) {
  detail::CpStageParams fix;
  fix.cu_seqlens = from.cu_seqlens.data;
  fix.offsets_are_int64 = from.cu_seqlens.dtype == DType::kInt64;
  fix.num_seqs = static_cast<int>(shape.num_seqs);
  fix.num_k_heads = static_cast<int>(shape.hk);
  fix.num_v_heads = static_cast<int>(shape.hv);
  fix.num_state_heads = static_cast<int>(shape.hsab);
  if (from.initial_state) {
    fix.initial_state = from.initial_state->data;
    fix.initial_state_type = from.initial_state->dtype == DType::kBFloat16 ? detail::CpStateType::kBFloat16
                             : from.initial_state->dtype == DType::kFloat16 ? detail::CpStateType::kFloat16
                                                                            : detail::CpStateType::kFloat32;
    fix.initial_state_slot_stride = from.initial_state->stride(0);
  }
  if (from.state_indices) fix.state_indices = static_cast<const std::int32_t*>(from.state_indices->data);
  fix.chunk_len = static_cast<int>(view.plan.chunk_len);
  fix.chunks_per_seq = static_cast<int>(view.plan.chunks_per_seq);
  fix.blocks_per_seq = static_cast<int>(view.plan.blocks_per_seq());
  fix.map_m = const_cast<float*>(view.map_m);  // workspace slices, read by the fix-up
  fix.map_b = const_cast<float*>(view.map_b);
  fix.chunk_states = const_cast<float*>(view.chunk_states);  // rewritten from the real entering state
  // The segment table is already written by the first stage 3; final_states stays null.
  detail::launch_cp_fixup(fix, ctx.stream);

  PrefillParams p = make_prefill_params(from, shape);
  p.segment_offsets = view.segment_offsets;
  p.segment_sequence = view.segment_sequence;
  p.num_segments = static_cast<int>(view.plan.segments());
  p.segment_states = view.chunk_states;
  const PrefillRunnerKey key{ctx.device.index, from.q.dtype == DType::kBFloat16 ? InputType::kBFloat16 : InputType::kFloat16};
  prefill_runner(key)->run(p, ctx.stream);
}

// The state entering rank r's slice: rank 0's state after its slice, then the maps of ranks
// 1 .. r-1, all from the all-gathered contributions.
void fold_entering_state(const PrefillShape& shape, int rank, const DistWorkspace& w, std::int64_t contribution,
                         const ExecContext& ctx) {
  const std::int64_t heads_elems = shape.hsab * kStateElems, half = shape.num_seqs * heads_elems;
  dist::detail::AffineChainParams chain;
  chain.num_seqs = static_cast<int>(shape.num_seqs);
  chain.num_heads = static_cast<int>(shape.hsab);
  chain.init = w.recv + half;  // rank 0's B slot: the state after its slice
  chain.init_slot_stride = heads_elems;
  chain.step_m = w.recv + contribution;  // rank 1's M
  chain.step_b = w.recv + contribution + half;
  chain.seq_stride = heads_elems;
  chain.step_stride = contribution;
  chain.fixed_steps = rank - 1;
  chain.out_state = w.entering;
  dist::detail::launch_affine_chain(chain, ctx.stream);
}

}  // namespace

}  // namespace gdn

namespace gdn::detail {

RankStage begin_rank(const PrefillArgs& local, const PrefillShape& shape, int rank, int world,
                     const DistributedPrefillOptions& options, const ExecContext& ctx) {
  DeviceGuard guard(ctx.device.index);
  RankStage st;
  st.shape = shape;
  st.ctx = ctx;
  st.rank = rank;
  st.world = world;
  st.contribution = 2 * shape.num_seqs * shape.hsab * kStateElems;
  const std::size_t bytes = carve(nullptr, st.contribution, world).bytes;
  const DistWorkspace w =
      carve(WorkspacePool::global().get(ctx.device.index, ctx.stream, "gdn.dist", bytes), st.contribution, world);
  st.send = w.send;
  st.recv = w.recv;
  st.entering = w.entering;

  // CP path (use_cp not Off): every rank runs CP stages 1-3 from zero before the exchange (the
  // last rank too: it would otherwise idle while the others compute their maps), and resumes its
  // CP prefill from them afterwards. Off: only ranks < R-1 compute maps (the last rank's map is
  // never needed) and the local prefill is the plain one.
  st.cp_path = local.use_cp != UseCp::kOff && shape.total_tokens > 0;
  const bool has_view = st.cp_path || (rank < world - 1 && shape.total_tokens > 0);
  if (has_view) st.view = chunk_maps(local, shape, options, ctx, w.send + st.contribution / 2);
  if (rank < world - 1) slice_maps(local, shape, rank, has_view ? &st.view : nullptr, ctx, w);
  return st;
}

void finish_rank(const PrefillArgs& local, const RankStage& st) {
  DeviceGuard guard(st.ctx.device.index);
  PrefillArgs from = local;
  if (st.rank > 0) {
    const DistWorkspace w{st.send, st.recv, st.entering, 0};
    fold_entering_state(st.shape, st.rank, w, st.contribution, st.ctx);
    from.initial_state = TensorView::contiguous(st.entering, DType::kFloat32,
                                                {st.shape.num_seqs, st.shape.hsab, kHeadDim, kHeadDim}, st.ctx.device);
  }
  if (st.cp_path) resume_cp_prefill(from, st.shape, st.view, st.ctx);
  else prefill(from, st.ctx.stream);
}

}  // namespace gdn::detail

namespace gdn {

void prefill_distributed(const PrefillArgs& local, const dist::Communicator& comm,
                         const DistributedPrefillOptions& options, Stream stream) {
  const PrefillShape shape = validate_prefill(local);
  const auto opt = [](const std::optional<TensorView>& t) { return t ? &*t : nullptr; };
  const ExecContext ctx = resolve_context(
      detail::kDistributedOp,
      {{"q", &local.q}, {"k", &local.k}, {"v", &local.v}, {"cu_seqlens", &local.cu_seqlens},
       {"alpha", opt(local.alpha)}, {"beta", opt(local.beta)}, {"output", &local.output},
       {"initial_state", opt(local.initial_state)}, {"output_state", opt(local.output_state)},
       {"state_indices", opt(local.state_indices)}},
      stream);
  detail::validate_distributed(local, comm, options, ctx);
  if (comm.world_size() == 1) {
    prefill(local, stream);
    return;
  }
  const detail::RankStage stage = detail::begin_rank(local, shape, comm.rank(), comm.world_size(), options, ctx);
  {
    DeviceGuard guard(ctx.device.index);
    dist::detail::all_gather_floats(stage.send, stage.recv, static_cast<std::size_t>(stage.contribution),
                                    comm.nccl_comm(), ctx.stream);
  }
  detail::finish_rank(local, stage);
}

}  // namespace gdn
}  // namespace fastinfer
