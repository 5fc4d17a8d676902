#pragma once
// A device copy of a HostTensor for the CLI's GPU paths (check, demo): uploads on construction,
// frees on destruction, downloads on request. Synchronous on purpose: the CLI is not a hot path.
#include <cuda_runtime.h>

#include <string>

#include "fastinfer/error.h"
#include "ref/host_tensor.h"

namespace fastinfer::cli {

class DeviceCopy {
 public:
  explicit DeviceCopy(const ref::HostTensor& host, int device = 0) : view_(host.view()) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaMalloc(&view_.data, host.nbytes()), "cudaMalloc");
    check(cudaMemcpy(view_.data, host.data(), host.nbytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
    view_.device = Device::cuda(device);
  }
  ~DeviceCopy() { cudaFree(view_.data); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }

  // Waits for the device, then copies the whole tensor into `host` (same shape and dtype).
  void download(ref::HostTensor& host) const {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaMemcpy(host.data(), view_.data, host.nbytes(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

 private:
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Error(Error::Kind::kRuntime, std::string(what) + ": " + cudaGetErrorString(e));
  }
  TensorView view_;
};

}  // namespace fastinfer::cli
