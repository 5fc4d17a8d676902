#pragma once
// Everything fastinfer asks of NCCL, behind plain types: the only translation unit that includes
// nccl.h is nccl_backend.cpp, compiled with FASTINFER_WITH_NCCL. Without NCCL every function
// throws fastinfer::Error (runtime) saying so.
#include <cstddef>
#include <vector>

#include "fastinfer/context.h"
#include "fastinfer/gdn_distributed.h"

namespace fastinfer::dist::detail {

struct CommFacts {
  int rank = 0;
  int world_size = 1;
  int device = 0;
};

// Rank, size and CUDA device of an ncclComm_t (set-up time, not per call).
CommFacts query_communicator(void* nccl_comm);

// ncclAllGather of `count` floats per rank on `stream`: recv[r * count + i] = send_r[i].
void all_gather_floats(const float* send, float* recv, std::size_t count, void* nccl_comm, Stream stream);

// Tests and benchmarks: one communicator per listed device in this process (ncclCommInitAll),
// destroyed with the object. Production callers bring their own ncclComm_t.
class LocalCommunicators {
 public:
  explicit LocalCommunicators(const std::vector<int>& devices);
  ~LocalCommunicators();
  LocalCommunicators(const LocalCommunicators&) = delete;
  LocalCommunicators& operator=(const LocalCommunicators&) = delete;
  const Communicator& operator[](int rank) const { return wrapped_[static_cast<std::size_t>(rank)]; }
  int size() const { return static_cast<int>(wrapped_.size()); }

 private:
  std::vector<void*> comms_;
  std::vector<Communicator> wrapped_;
};

}  // namespace fastinfer::dist::detail
