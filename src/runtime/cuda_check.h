#pragma once
// Checking CUDA runtime calls: a failure becomes fastinfer::Error (kRuntime) naming the call site.
#include <cuda_runtime.h>

#include <string>

#include "fastinfer/error.h"

namespace fastinfer {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* what, const char* file, int line) {
  throw Error(Error::Kind::kRuntime, std::string(what) + " failed: " + cudaGetErrorName(status) + " (" +
                                         cudaGetErrorString(status) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace fastinfer

// The one macro of the project: it needs the call's text and location.
#define FASTINFER_CUDA_CHECK(call)                                                      \
  do {                                                                                  \
    cudaError_t fastinfer_status_ = (call);                                             \
    if (fastinfer_status_ != cudaSuccess)                                               \
      ::fastinfer::throw_cuda_error(fastinfer_status_, #call, __FILE__, __LINE__);      \
  } while (0)
