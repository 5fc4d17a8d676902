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

  // Ranks < R-1 compute their slice maps (CP stages 1-3 + chain); the last rank's map is never
  // needed. The local prefill after the exchange is gdn::prefill (use_cp as the caller set it).
  // Resuming the local CP prefill from these stages (stage 3 again from the entering state, then
  // stage 4, commit d158c41) gave wrong outputs on the H200 while final states agreed: removed
  // until understood (docs/GDN_DISTRIBUTED.md).
  const bool has_view = rank < world - 1 && shape.total_tokens > 0;
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
  prefill(from, st.ctx.stream);
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
