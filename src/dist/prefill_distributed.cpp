// gdn::prefill_distributed: validate -> resolve {device, stream} once -> chunk maps (CP stages
// 1-2) -> slice map (affine chain) -> one all-gather -> fold into the entering state -> local
// prefill (CP stages 3-4 resumed from the chunk maps, or the plain kernel).
// docs/GDN_DISTRIBUTED.md has the math and the measurements.
#include <algorithm>

#include "dist/affine_chain.h"
#include "dist/nccl_backend.h"
#include "dist/rank_pipeline.h"
#include "dist/validate.h"
#include "fastinfer/device.h"
#include "fastinfer/gdn_distributed.h"
#include "gdn/cp.h"
#include "gdn/cp_plan.h"
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

// CP stages 1-2 on the local slices from a zero state: the chunk maps (M_c, B_c) in the call's
// "gdn.cp" workspace (stages 1-2 do not depend on the state). With `final_states` stage 2
// composes the last chunk of each sequence too, which the slice map needs; stage 3 does not run
// (the resumed local prefill runs it from the real entering state).
detail::CpStageView chunk_maps(const PrefillArgs& local, const detail::CpOptions& plan_options, const ExecContext& ctx,
                               float* final_states) {
  PrefillArgs maps = local;
  maps.initial_state.reset();
  maps.state_indices.reset();
  maps.output_state.reset();
  detail::CpOptions cp = plan_options;
  cp.last_stage = 2;
  return detail::run_cp_stages(maps, ctx, cp, final_states);
}

// Whether rank `rank`'s local prefill is the resumed CP pipeline. use_cp Off: never (the plain
// kernel; ranks < R-1 still run CP stages 1-2 for their map). Auto: ranks < R-1 always, since
// they have stages 1-2 already and stages 3-4 are at worst the plain kernel over one segment per
// sequence plus a short fix-up; the last rank by gdn::prefill's rule on its slices (it runs
// stages 1-2 only for itself, before the exchange, while the others compute their maps).
bool local_prefill_resumes_cp(const PrefillArgs& local, const PrefillShape& shape, int rank, int world,
                              std::int64_t max_slice, const ExecContext& ctx) {
  if (local.use_cp == UseCp::kOff || shape.total_tokens == 0) return false;
  if (local.use_cp == UseCp::kOn) return true;
  if (!detail::kCpAutoEnabled || shape.num_seqs > detail::kCpMaxSequences) return false;
  if (rank < world - 1) return true;
  return detail::should_use_cp(shape.num_seqs, shape.hsab, std::min(max_slice, shape.total_tokens),
                               device_info(ctx.device.index).sm_count);
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

  // Ranks < R-1 compute their slice maps (CP stages 1-2 + chain); the last rank's map is never
  // needed, but on the CP path it runs its own stages 1-2 here, overlapping the others' maps.
  // Every rank then resumes from these stages after the exchange (finish_rank), so stages 1-2 run
  // once per call. (The first version of this, commit d158c41, passed no pool size to the resumed
  // fix-up, which then read every initial state as zero: docs/GDN_DISTRIBUTED.md.)
  st.cp_options.max_seqlen =
      options.max_slice_len > 0 ? options.max_slice_len : local.max_seqlen > 0 ? local.max_seqlen : shape.total_tokens;
  st.resume_cp = local_prefill_resumes_cp(local, shape, rank, world, st.cp_options.max_seqlen, ctx);
  const bool needs_map = rank < world - 1 && shape.total_tokens > 0;
  if (needs_map || st.resume_cp)
    st.view = chunk_maps(local, st.cp_options, ctx, needs_map ? w.send + st.contribution / 2 : nullptr);
  if (rank < world - 1) slice_maps(local, shape, rank, needs_map ? &st.view : nullptr, ctx, w);
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
  if (st.resume_cp) {
    CpOptions resume = st.cp_options;  // the same plan, so the same "gdn.cp" block and layout
    resume.first_stage = 3;
    prefill_cp(from, st.shape, st.ctx, resume);
    return;
  }
  from.use_cp = UseCp::kOff;  // decided in begin_rank (Off, or Auto's rule said no on the last rank)
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
