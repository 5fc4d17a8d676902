// The NCCL calls of fastinfer (see nccl_backend.h). Built with or without NCCL: without it, every
// entry point throws a runtime Error naming the CMake option.
#include "dist/nccl_backend.h"

#include <string>

#include "runtime/check.h"

#if FASTINFER_WITH_NCCL
#include <nccl.h>
#endif

namespace fastinfer::dist {
namespace {
constexpr const char* kOp = "dist::Communicator";

#if FASTINFER_WITH_NCCL
void nccl_check(ncclResult_t result, const char* op, const char* what) {
  if (result != ncclSuccess)
    check::fail(op, "communicator", std::string("accept ") + what, ncclGetErrorString(result), Error::Kind::kRuntime);
}
#else
[[noreturn]] void no_nccl(const char* op) {
  check::fail(op, "communicator", "be usable (this build of fastinfer has no NCCL: FASTINFER_WITH_NCCL=OFF)",
              "a call that needs NCCL", Error::Kind::kRuntime);
}
#endif
}  // namespace

bool built_with_nccl() { return FASTINFER_WITH_NCCL != 0; }

Communicator Communicator::from_nccl(void* nccl_comm) {
  check::require(nccl_comm != nullptr, kOp, "nccl_comm", "be an ncclComm_t", "null");
  const detail::CommFacts f = detail::query_communicator(nccl_comm);
  return Communicator(nccl_comm, f.rank, f.world_size, f.device);
}

namespace detail {

#if FASTINFER_WITH_NCCL
CommFacts query_communicator(void* nccl_comm) {
  auto* comm = static_cast<ncclComm_t>(nccl_comm);
  CommFacts f;
  nccl_check(ncclCommUserRank(comm, &f.rank), kOp, "ncclCommUserRank");
  nccl_check(ncclCommCount(comm, &f.world_size), kOp, "ncclCommCount");
  nccl_check(ncclCommCuDevice(comm, &f.device), kOp, "ncclCommCuDevice");
  return f;
}

void all_gather_floats(const float* send, float* recv, std::size_t count, void* nccl_comm, Stream stream) {
  nccl_check(ncclAllGather(send, recv, count, ncclFloat32, static_cast<ncclComm_t>(nccl_comm),
                           reinterpret_cast<cudaStream_t>(stream)),
             "gdn::prefill_distributed", "ncclAllGather");
}

LocalCommunicators::LocalCommunicators(const std::vector<int>& devices) : comms_(devices.size(), nullptr) {
  check::require(!devices.empty(), "dist::LocalCommunicators", "devices", "be non-empty", "[]");
  nccl_check(ncclCommInitAll(reinterpret_cast<ncclComm_t*>(comms_.data()), static_cast<int>(devices.size()),
                             devices.data()),
             "dist::LocalCommunicators", "ncclCommInitAll");
  for (void* c : comms_) wrapped_.push_back(Communicator::from_nccl(c));
}

LocalCommunicators::~LocalCommunicators() {
  for (void* c : comms_)
    if (c != nullptr) ncclCommDestroy(static_cast<ncclComm_t>(c));
}
#else
CommFacts query_communicator(void*) { no_nccl(kOp); }
void all_gather_floats(const float*, float*, std::size_t, void*, Stream) { no_nccl("gdn::prefill_distributed"); }
LocalCommunicators::LocalCommunicators(const std::vector<int>&) { no_nccl("dist::LocalCommunicators"); }
LocalCommunicators::~LocalCommunicators() = default;
#endif

}  // namespace detail
}  // namespace fastinfer::dist
