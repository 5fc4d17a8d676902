// The CUDA side of the workspace pool: stream-ordered cudaMallocAsync / cudaFreeAsync.
#include "runtime/cuda_check.h"
#include "runtime/device_guard.h"
#include "runtime/workspace_pool.h"

namespace fastinfer {

namespace {

class CudaWorkspaceAllocator final : public WorkspaceAllocator {
 public:
  void* allocate(int device, Stream stream, std::size_t bytes) override {
    DeviceGuard guard(device);
    void* ptr = nullptr;
    FASTINFER_CUDA_CHECK(cudaMallocAsync(&ptr, bytes, stream));
    return ptr;
  }

  void release(int device, Stream stream, void* ptr) override {
    DeviceGuard guard(device);
    FASTINFER_CUDA_CHECK(cudaFreeAsync(ptr, stream));
  }

  void release_now(int device, void* ptr) override {
    // At process exit the runtime may already be unloading; then the memory goes with the context
    // and errors are ignored, so shutdown never crashes.
    if (cudaSetDevice(device) != cudaSuccess || cudaFree(ptr) != cudaSuccess) cudaGetLastError();
  }

  bool is_capturing(int device, Stream stream) override {
    DeviceGuard guard(device);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    FASTINFER_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    return status != cudaStreamCaptureStatusNone;
  }
};

}  // namespace

std::unique_ptr<WorkspaceAllocator> make_cuda_workspace_allocator() {
  return std::make_unique<CudaWorkspaceAllocator>();
}

}  // namespace fastinfer
