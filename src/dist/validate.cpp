#include "dist/validate.h"

#include <string>

#include "runtime/check.h"

namespace fastinfer::gdn::detail {

void validate_distributed(const PrefillArgs& a, const dist::Communicator& comm, const DistributedPrefillOptions& options,
                          const ExecContext& ctx) {
  const char* op = kDistributedOp;
  const int rank = comm.rank(), world = comm.world_size();
  check::require(world >= 1, op, "comm", "have a world size >= 1", std::to_string(world));
  check::require(rank >= 0 && rank < world, op, "comm", "have a rank in [0, " + std::to_string(world) + ")",
                 std::to_string(rank));
  check::require(options.max_slice_len >= 0, op, "options.max_slice_len", "be >= 0 (0 = unknown)",
                 std::to_string(options.max_slice_len));
  if (world == 1) return;
  const std::string on_rank = "on rank " + std::to_string(rank);
  check::require(comm.nccl_comm() != nullptr, op, "comm", "wrap an ncclComm_t", "a null handle");
  check::require(ctx.device.is_cuda(), op, "q", "be on a CUDA device when the world has several ranks",
                 to_string(ctx.device));
  check::require(ctx.device.index == comm.device(), op, "q",
                 "be on the communicator's device cuda:" + std::to_string(comm.device()), to_string(ctx.device));
  if (rank > 0) {
    check::require(!a.initial_state, op, "initial_state", "be absent on ranks > 0 (it is read on rank 0)",
                   "a tensor " + on_rank);
    check::require(!a.state_indices, op, "state_indices",
                   "be absent on ranks > 0 (pools are read on rank 0; output_state is packed there)",
                   "a tensor " + on_rank);
  }
  check::require(a.checkpoint_every_n_tokens == 0 && !a.state_checkpoints && !a.checkpoint_cu_starts, op,
                 "checkpoint_every_n_tokens", "be 0 with no checkpoint tensors when the world has several ranks",
                 std::to_string(a.checkpoint_every_n_tokens));
}

}  // namespace fastinfer::gdn::detail
