#pragma once
// Per-device one-time set-up at a call site (cudaFuncSetAttribute and friends are per device):
//
//   static OncePerDevice once;
//   once(device, [] { cudaFuncSetAttribute(kernel, ...); });
//
// Done for the device that launches, on its first launch. Looping over every device instead
// creates a CUDA context on each GPU of the machine (~130 ms apiece on the H200 host), which a
// process that uses one GPU pays as cold-start latency.
#include <mutex>

namespace fastinfer {

class OncePerDevice {
 public:
  static constexpr int kMaxDevices = 64;
  template <class F>
  void operator()(int device, F&& fn) {
    std::call_once(flags_[static_cast<unsigned>(device) % kMaxDevices], std::forward<F>(fn));
  }

 private:
  std::once_flag flags_[kMaxDevices];
};

}  // namespace fastinfer
