#pragma once
// HostTensor: an owning, contiguous CPU tensor for tests, the demo and the CPU path.
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include "fastinfer/tensor.h"
#include "ref/numeric.h"

namespace fastinfer::ref {

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, std::initializer_list<std::int64_t> shape)
      : bytes_(count(shape) * dtype_size(dtype)),
        view_(TensorView::contiguous(nullptr, dtype, shape, Device::cpu())) {
    view_.data = bytes_.data();
  }
  HostTensor(const HostTensor& o) : bytes_(o.bytes_), view_(o.view_) { view_.data = bytes_.data(); }
  HostTensor& operator=(const HostTensor& o) {
    bytes_ = o.bytes_;
    view_ = o.view_;
    view_.data = bytes_.data();
    return *this;
  }
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }
  std::int64_t numel() const { return view_.numel(); }
  std::size_t nbytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }

  double get(std::int64_t i) const { return load(view_, i); }
  void set(std::int64_t i, double v) { store(view_, i, v); }

  // Fills with uniform values in [lo, hi) from `rng`, rounded to the dtype.
  void fill_uniform(std::mt19937_64& rng, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (std::int64_t i = 0; i < numel(); ++i) set(i, dist(rng));
  }
  void fill(double v) {
    for (std::int64_t i = 0; i < numel(); ++i) set(i, v);
  }

 private:
  static std::size_t count(std::initializer_list<std::int64_t> shape) {
    std::size_t n = 1;
    for (auto s : shape) n *= static_cast<std::size_t>(s);
    return n;
  }
  std::vector<unsigned char> bytes_;
  TensorView view_;
};

}  // namespace fastinfer::ref
