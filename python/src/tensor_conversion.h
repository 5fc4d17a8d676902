#pragma once
// Zero-copy conversion of a DLPack-capable array (torch, numpy, ...) into a TensorView.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>

#include <cstdint>
#include <optional>
#include <nanobind/ndarray.h>

#include "fastinfer/context.h"
#include "fastinfer/tensor.h"

namespace fastinfer::python {

using Array = nanobind::ndarray<nanobind::device::none>;  // any device, dtype, shape, strides

// Throws fastinfer::Error (TypeError) for dtypes or devices fastinfer does not support.
TensorView to_view(const Array& a);

// Same, for optional arguments (None -> nullopt).
std::optional<TensorView> to_optional_view(const std::optional<Array>& a);

// The CUDA stream argument: an integer handle (torch.cuda.Stream.cuda_stream) or 0 / None.
inline Stream to_stream(std::uintptr_t handle) { return reinterpret_cast<Stream>(handle); }

}  // namespace fastinfer::python
