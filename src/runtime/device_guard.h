#pragma once
// Makes `device` current for the lifetime of the guard and restores the previous device.
// Costs one cudaGetDevice (a thread-local read) when the device is already current.
#include "runtime/cuda_check.h"

namespace fastinfer {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    FASTINFER_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) FASTINFER_CUDA_CHECK(cudaSetDevice(device));
    current_ = device;
  }
  ~DeviceGuard() {
    if (previous_ != current_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  int current_ = 0;
};

}  // namespace fastinfer
