#pragma once
// Conversions between TensorView and DLPack's DLTensor (zero copy, both directions).
#include <dlpack/dlpack.h>

#include "fastinfer/tensor.h"

namespace fastinfer {

// Throws fastinfer::Error (kType) for dtypes or devices fastinfer does not support, and for
// byte_offset values that are not a multiple of the element size.
TensorView from_dlpack(const DLTensor& t);

// The returned DLTensor points at the view's shape and strides arrays: keep `view` alive and
// unchanged while the DLTensor is in use.
DLTensor to_dlpack(TensorView& view);

}  // namespace fastinfer
