#pragma once
// Internal access to dist::Communicator's private constructor: tests build communicators with a
// given rank and size without NCCL (validation and planning never touch the NCCL handle).
#include "fastinfer/gdn_distributed.h"

namespace fastinfer::dist {

struct CommunicatorAccess {
  static Communicator make(void* nccl_comm, int rank, int world_size, int device) {
    return Communicator(nccl_comm, rank, world_size, device);
  }
};

}  // namespace fastinfer::dist
