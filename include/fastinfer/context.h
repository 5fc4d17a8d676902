#pragma once
// ExecContext: the device and stream one call runs on, resolved once at the top of every op and
// handed to every stage it launches.
#include <initializer_list>

#include "fastinfer/tensor.h"

struct CUstream_st;  // the CUDA runtime's opaque stream type (cudaStream_t == CUstream_st*)

namespace fastinfer {

using Stream = CUstream_st*;  // nullptr is the legacy default stream

struct ExecContext {
  Device device{};
  Stream stream = nullptr;
};

// A named tensor argument for resolve_context; an absent optional argument passes nullptr.
struct NamedTensor {
  const char* name;
  const TensorView* tensor;
};

// Returns the one device all present tensors live on (error naming the first tensor that
// disagrees) and the stream to use. CPU tensors resolve to the CPU device; the stream is ignored
// there.
ExecContext resolve_context(const char* op, std::initializer_list<NamedTensor> tensors,
                            Stream stream = nullptr);

}  // namespace fastinfer
