#pragma once
// TensorView: a non-owning view of a strided tensor on the CPU or on a CUDA device.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "fastinfer/dtype.h"

namespace fastinfer {

struct Device {
  enum class Kind : std::uint8_t { kCPU, kCUDA };
  Kind kind = Kind::kCPU;
  int index = 0;  // CUDA ordinal; 0 for the CPU

  static constexpr Device cpu() { return {Kind::kCPU, 0}; }
  static constexpr Device cuda(int index) { return {Kind::kCUDA, index}; }
  constexpr bool is_cuda() const { return kind == Kind::kCUDA; }
  constexpr bool is_cpu() const { return kind == Kind::kCPU; }
  friend constexpr bool operator==(Device, Device) = default;
};

std::string to_string(Device d);  // "cpu", "cuda:0"

inline constexpr int kMaxDims = 6;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  int ndim = 0;
  std::array<std::int64_t, kMaxDims> shape{};
  std::array<std::int64_t, kMaxDims> strides{};  // in elements, not bytes
  Device device{};

  // A row-major (C-contiguous) view. Throws fastinfer::Error for more than kMaxDims dims.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                               Device device = Device::cpu());
  // A view with explicit strides (elements).
  static TensorView strided(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                            std::initializer_list<std::int64_t> strides, Device device = Device::cpu());

  // Dimension accessors accept negative indices (-1 = last).
  std::int64_t size(int dim) const { return shape[normalize(dim)]; }
  std::int64_t stride(int dim) const { return strides[normalize(dim)]; }
  std::int64_t numel() const;
  std::size_t element_size() const { return dtype_size(dtype); }
  bool is_contiguous() const;
  // True when the innermost dimension has stride 1 (or size 1).
  bool is_last_dim_contiguous() const;
  // Bytes spanned from data to one past the last element (0 for an empty tensor).
  std::int64_t span_bytes() const;

  template <class T>
  T* data_as() const {
    return static_cast<T*>(data);
  }

  std::string shape_string() const;  // "[4, 16, 128]"

 private:
  int normalize(int dim) const { return dim < 0 ? dim + ndim : dim; }
};

}  // namespace fastinfer
