#pragma once
// The benchmark harness shared by every routine: device buffers, random fills on the device,
// median CUDA-event timing with inputs rotated over more than the L2, the two ceilings measured in
// the same process (copy bandwidth, bf16 tensor-core peak) and the cuBLAS bf16 anchor.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "fastinfer/dtype.h"

namespace fastinfer::bench {

// Owning device allocation (cudaMalloc; freed on destruction).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Fills `count` elements of `dtype` (float32/float16/bfloat16/uint8) with uniform values in
// [lo, hi) (uint8: uniform bytes), deterministically from `seed`, on the device.
void fill_uniform(void* ptr, DType dtype, std::size_t count, float lo, float hi, std::uint64_t seed,
                  cudaStream_t stream = nullptr);

// How many input sets to rotate through so that one pass touches at least 3x the L2 (>= 1, <= 64).
int rotation_count(std::size_t bytes_per_set);

// Median GPU time in ms of `fn(i)` over `reps` runs after `warmup` runs; each run is bracketed by
// its own CUDA events on `stream`; `i` counts runs so callers rotate input sets with i % sets.
double median_ms(const std::function<void(int)>& fn, int warmup = 5, int reps = 30, cudaStream_t stream = nullptr);

// Called after every median_ms measurement (the CLI draws its progress line from it); empty = none.
void set_measurement_hook(std::function<void()> hook);

// Host wall time per call in microseconds (mean over `reps` back-to-back calls, after warm-up),
// synchronizing only at the end: what a caller's thread pays per call.
double host_us_per_call(const std::function<void()>& fn, int reps = 2000);

struct Ceilings {
  double copy_tbps = 0;    // device-to-device copy, bytes read + written per second / 1e12
  double bf16_tflops = 0;  // cuBLASLt bf16 8192^3 on random data
};
// Measured once per process (about a second of GPU time).
const Ceilings& ceilings();

// cuBLASLt bf16 out[M,N] = a[M,K] @ W[N,K]^T, the anchor of the GEMM routines (median ms).
double cublas_bf16_gemm_ms(int m, int n, int k);

// GPU name, SMs, clocks, CUDA version, commit (FASTINFER_COMMIT env), date, ceilings.
nlohmann::json environment_json();

// A floor in ms from bytes and flops against the measured ceilings.
inline double floor_ms(double bytes, double flops) {
  const Ceilings& c = ceilings();
  const double t_bytes = bytes / (c.copy_tbps * 1e12) * 1e3;
  const double t_flops = flops / (c.bf16_tflops * 1e12) * 1e3;
  return t_bytes > t_flops ? t_bytes : t_flops;
}

}  // namespace fastinfer::bench
