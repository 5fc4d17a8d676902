#pragma once
// One rank's part of gdn::prefill_distributed, split at the exchange so the same code runs with
// NCCL (prefill_distributed: begin -> ncclAllGather(send -> recv) -> finish) and in tests that
// simulate several ranks on one device (the exchange is then a device copy of every rank's
// `send` into every rank's `recv` slot). Arguments must be validated already.
#include <cstdint>

#include "fastinfer/gdn_distributed.h"
#include "gdn/cp.h"
#include "gdn/prefill_validate.h"

namespace fastinfer::gdn::detail {

struct RankStage {
  PrefillShape shape;
  ExecContext ctx;
  int rank = 0, world = 1;
  CpStageView view;      // chunk maps in the (device, stream, "gdn.cp") workspace
  // The local prefill resumes the CP pipeline from the chunk maps computed before the exchange
  // (stage 3 from the entering state, then stage 4) instead of running a whole prefill again.
  bool resume_cp = false;
  CpOptions cp_options;  // the plan of the chunk maps; the resumed stages use the same one
  // Workspace (device, stream, "gdn.dist"): send = this rank's contribution, fp32
  // [2, N, Hsab, 128, 128] (M then B); recv = [world] contributions; entering state [N, Hsab, 128, 128].
  float* send = nullptr;
  float* recv = nullptr;
  float* entering = nullptr;
  std::int64_t contribution = 0;  // floats per rank
};

// Workspace, chunk maps (CP stages 1-2) and this rank's contribution (all enqueued on ctx.stream).
RankStage begin_rank(const PrefillArgs& local, const PrefillShape& shape, int rank, int world,
                     const DistributedPrefillOptions& options, const ExecContext& ctx);

// After recv holds every rank's contribution: fold into the entering state, then the local
// prefill from it: CP stages 3-4 on the chunk maps of begin_rank (resume_cp), else the plain
// prefill kernel.
void finish_rank(const PrefillArgs& local, const RankStage& stage);

}  // namespace fastinfer::gdn::detail
