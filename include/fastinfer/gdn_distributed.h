#pragma once
// Multi-GPU context-parallel GDN prefill over NCCL (issue 10): one long sequence (or several)
// sharded over the ranks of a caller-owned NCCL communicator. The design is in
// docs/GDN_DISTRIBUTED.md. In short: every span of tokens maps the state affinely,
// H_out = H_in M + B; each rank computes the map of its slice of every sequence, the ranks
// all-gather the maps once, each rank folds the maps of the ranks before it into the state
// entering its slice, and runs its local gdn::prefill from there.
#include <cstdint>

#include "fastinfer/context.h"
#include "fastinfer/gdn_prefill.h"

namespace fastinfer::dist {

// A caller-owned NCCL communicator. fastinfer never creates, aborts or destroys it; an op only
// enqueues collectives on it, on the op's stream. Held as an opaque pointer so this header needs
// no NCCL include.
class Communicator {
 public:
  // Wraps `nccl_comm` (an ncclComm_t) and reads its rank, size and CUDA device from NCCL once
  // (do this at set-up, not per call). Throws fastinfer::Error when the library was built without
  // NCCL (FASTINFER_WITH_NCCL=OFF), the pointer is null or NCCL reports an error.
  static Communicator from_nccl(void* nccl_comm);

  void* nccl_comm() const { return comm_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int device() const { return device_; }  // the CUDA ordinal the communicator was created on

 private:
  friend struct CommunicatorAccess;  // internal: tests build communicators without NCCL
  Communicator(void* comm, int rank, int world_size, int device)
      : comm_(comm), rank_(rank), world_size_(world_size), device_(device) {}
  void* comm_ = nullptr;
  int rank_ = 0;
  int world_size_ = 1;
  int device_ = 0;
};

// Whether this build of fastinfer links NCCL (CMake option FASTINFER_WITH_NCCL).
bool built_with_nccl();

}  // namespace fastinfer::dist

namespace fastinfer::gdn {

struct DistributedPrefillOptions {
  // Longest slice of any sequence on this rank, known on the host (serving stacks hold the
  // lengths there); sizes the chunk plan of the map computation. It must not be smaller than the
  // real longest slice. 0 = local.max_seqlen, and when that is 0 too the local token count
  // (correct, but it oversizes the plan when several sequences have tokens here).
  std::int64_t max_slice_len = 0;
};

// Runs the prefill of a batch whose sequences are cut into slices across the ranks of `comm`.
// A collective: every rank calls it with its own `local` arguments, in the same order relative
// to other NCCL work on the communicator. Stream-ordered on `stream` (no host sync, graph
// capturable after a warm-up call, like gdn::prefill).
//
// Slices. Every rank passes the same number of sequences N. On rank r, local.cu_seqlens [N + 1]
// delimits r's slice of each sequence n in r's packed tokens; sequence n is the concatenation of
// its slices in rank order. A slice may be empty: a sequence that is not split simply has its
// tokens on one rank and empty slices on the others (varlen batches where only some sequences
// are split).
//
// States. The initial state (packed, or a pool with state_indices) is read on rank 0 only and
// must be absent on the other ranks. Each rank writes local.output_state for the sequences with
// a non-empty slice on it (the state after its slice), so the final state of a sequence is on the
// rank holding its last token: the last rank for a sequence split over all ranks. On ranks > 0
// output_state must be packed (no state_indices). Outputs stay on their ranks (the rows of the
// local tokens). Checkpoints are not supported across ranks (world size > 1).
//
// Arguments are validated on each rank before any collective; an argument error on one rank
// leaves the others waiting in the collective, so callers must pass consistent arguments.
// World size 1 is gdn::prefill.
void prefill_distributed(const PrefillArgs& local, const dist::Communicator& comm,
                         const DistributedPrefillOptions& options = {}, Stream stream = nullptr);

}  // namespace fastinfer::gdn
