#include "fastinfer/tensor.h"

#include "fastinfer/error.h"

namespace fastinfer {

std::string to_string(Device d) {
  return d.is_cuda() ? "cuda:" + std::to_string(d.index) : std::string("cpu");
}

namespace {
void set_shape(TensorView& v, std::initializer_list<std::int64_t> shape) {
  if (shape.size() > static_cast<std::size_t>(kMaxDims)) {
    throw Error(Error::Kind::kValue, "TensorView: at most " + std::to_string(kMaxDims) +
                                         " dimensions are supported, got " + std::to_string(shape.size()));
  }
  v.ndim = static_cast<int>(shape.size());
  int i = 0;
  for (std::int64_t s : shape) v.shape[i++] = s;
}
}  // namespace

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                                  Device device) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  set_shape(v, shape);
  std::int64_t stride = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    v.strides[d] = stride;
    stride *= v.shape[d];
  }
  return v;
}

TensorView TensorView::strided(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                               std::initializer_list<std::int64_t> strides, Device device) {
  if (shape.size() != strides.size()) {
    throw Error(Error::Kind::kValue, "TensorView: shape and strides must have the same length, got " +
                                         std::to_string(shape.size()) + " and " + std::to_string(strides.size()));
  }
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  set_shape(v, shape);
  int i = 0;
  for (std::int64_t s : strides) v.strides[i++] = s;
  return v;
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

bool TensorView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

bool TensorView::is_last_dim_contiguous() const {
  return ndim == 0 || shape[ndim - 1] == 1 || strides[ndim - 1] == 1;
}

std::int64_t TensorView::span_bytes() const {
  if (numel() == 0) return 0;
  std::int64_t last = 0;
  for (int d = 0; d < ndim; ++d) last += (shape[d] - 1) * strides[d];
  return (last + 1) * static_cast<std::int64_t>(element_size());
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (int d = 0; d < ndim; ++d) {
    if (d) s += ", ";
    s += std::to_string(shape[d]);
  }
  return s + "]";
}

}  // namespace fastinfer
