#include "tensor_conversion.h"

#include <dlpack/dlpack.h>

#include "fastinfer/dlpack.h"

namespace fastinfer::python {

TensorView to_view(const Array& a) {
  // nanobind exposes the DLPack fields; reuse the one DLTensor -> TensorView conversion.
  std::int64_t shape[kMaxDims], strides[kMaxDims];
  const int ndim = static_cast<int>(a.ndim());
  for (int d = 0; d < ndim && d < kMaxDims; ++d) {
    shape[d] = static_cast<std::int64_t>(a.shape(d));
    strides[d] = static_cast<std::int64_t>(a.stride(d));
  }
  DLTensor t{};
  t.data = const_cast<void*>(a.data());
  t.device = {static_cast<DLDeviceType>(a.device_type()), a.device_id()};
  t.ndim = ndim;
  const nanobind::dlpack::dtype dt = a.dtype();
  t.dtype = {dt.code, dt.bits, dt.lanes};
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return from_dlpack(t);
}

std::optional<TensorView> to_optional_view(const std::optional<Array>& a) {
  if (!a) return std::nullopt;
  return to_view(*a);
}

}  // namespace fastinfer::python
