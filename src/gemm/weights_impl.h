#pragma once
// What a prepared Bf16Fp4Weights holds (docs/GEMM.md "Prepared weights").
#include <cstdint>
#include <utility>
#include <vector>

#include "fastinfer/gemm.h"

namespace fastinfer::gemm {

// Owning device allocation (cudaMalloc at preparation, cudaFree on destruction).
class DeviceBytes {
 public:
  DeviceBytes() = default;
  DeviceBytes(int device, std::size_t bytes);
  ~DeviceBytes();
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  DeviceBytes& operator=(DeviceBytes&& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  int device_ = 0;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct Bf16Fp4Weights::Impl {
  Device device{};
  std::int64_t n = 0, k = 0;
  float alpha = 1.0f;
  // CPU weights: packed [N, K/2] and linear scales [N, K/16].
  std::vector<std::uint8_t> host_packed, host_scales;
  // CUDA weights: the same two (for the large-M path) plus the small-M tiles (small_m_params.h).
  DeviceBytes packed, scales_linear, tiles, tile_scales;
  int kc_count = 0;  // k chunks of 64 per row tile
};

}  // namespace fastinfer::gemm
