#pragma once
// Device memory for GPU tests: an owning cudaMalloc block (DeviceBuffer) and a device copy of a
// host tensor with the same shape and strides (DeviceTensor), with upload/download helpers.
// Every CUDA call is checked (fastinfer::Error on failure).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "fastinfer/tensor.h"
#include "ref/host_tensor.h"
#include "runtime/cuda_check.h"

namespace fastinfer::testing {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // A zero-byte request still gets a real (16-byte) allocation so the pointer is never null.
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    FASTINFER_CUDA_CHECK(cudaMalloc(&ptr_, bytes ? bytes : 16));
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

  void upload(const void* host, Stream stream = nullptr) const {
    FASTINFER_CUDA_CHECK(cudaMemcpyAsync(ptr_, host, bytes_, cudaMemcpyHostToDevice, stream));
    if (stream == nullptr) FASTINFER_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  void download(void* host, Stream stream = nullptr) const {
    FASTINFER_CUDA_CHECK(cudaMemcpyAsync(host, ptr_, bytes_, cudaMemcpyDeviceToHost, stream));
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  // Every byte 0xFF: NaN for float32/float16/bfloat16, so unwritten elements show up.
  void poison(Stream stream = nullptr) const { FASTINFER_CUDA_CHECK(cudaMemsetAsync(ptr_, 0xFF, bytes_, stream)); }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A device copy of a contiguous host tensor; view() has the host tensor's shape and strides on
// cuda:`device`.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  explicit DeviceTensor(const ref::HostTensor& h, int device = 0) : buffer_(h.nbytes()), view_(h.view()) {
    view_.data = buffer_.get();
    view_.device = Device::cuda(device);
    upload(h);
  }
  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }
  const DeviceBuffer& buffer() const { return buffer_; }
  void* data() const { return buffer_.get(); }
  std::size_t nbytes() const { return buffer_.bytes(); }

  void upload(const ref::HostTensor& h, Stream stream = nullptr) const {
    check_same_size(h);
    buffer_.upload(h.data(), stream);
  }
  void download(ref::HostTensor& h, Stream stream = nullptr) const {
    check_same_size(h);
    buffer_.download(h.data(), stream);
  }
  // A host tensor of the same shape holding the device contents.
  ref::HostTensor to_host(Stream stream = nullptr) const {
    ref::HostTensor h = like(view_);
    download(h, stream);
    return h;
  }
  void poison(Stream stream = nullptr) const { buffer_.poison(stream); }

 private:
  static ref::HostTensor like(const TensorView& v);
  void check_same_size(const ref::HostTensor& h) const {
    if (h.nbytes() != buffer_.bytes())
      throw Error(Error::Kind::kValue, "DeviceTensor: host tensor has " + std::to_string(h.nbytes()) +
                                           " bytes, device buffer " + std::to_string(buffer_.bytes()));
  }

  DeviceBuffer buffer_;
  TensorView view_;
};

inline ref::HostTensor DeviceTensor::like(const TensorView& v) {
  // HostTensor takes an initializer_list; build it for up to kMaxDims dimensions.
  const auto& s = v.shape;
  switch (v.ndim) {
    case 0: return ref::HostTensor(v.dtype, {});
    case 1: return ref::HostTensor(v.dtype, {s[0]});
    case 2: return ref::HostTensor(v.dtype, {s[0], s[1]});
    case 3: return ref::HostTensor(v.dtype, {s[0], s[1], s[2]});
    case 4: return ref::HostTensor(v.dtype, {s[0], s[1], s[2], s[3]});
    case 5: return ref::HostTensor(v.dtype, {s[0], s[1], s[2], s[3], s[4]});
    default: return ref::HostTensor(v.dtype, {s[0], s[1], s[2], s[3], s[4], s[5]});
  }
}

// True when both host tensors hold the same bytes.
inline bool bytes_equal(const ref::HostTensor& a, const ref::HostTensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

}  // namespace fastinfer::testing
