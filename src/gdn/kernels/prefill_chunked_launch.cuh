#pragma once
// Definitions behind gdn/prefill_launch.h; included by the instantiation files only.
#include <cuda_runtime.h>

#include "gdn/kernels/prefill_chunked_sm90.cuh"
#include "gdn/prefill_launch.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn {

template <InputType kType>
void prepare_prefill_chunked() {
  FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(kernels::gdn_prefill_chunked_kernel<kType>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            kernels::ChunkedSmem::kBytes));
}

template <InputType kType>
void launch_prefill_chunked(const PrefillParams& params, Stream stream) {
  const dim3 grid(static_cast<unsigned>(params.num_seqs), static_cast<unsigned>(params.num_state_heads));
  kernels::gdn_prefill_chunked_kernel<kType>
      <<<grid, kernels::ChunkedConfig::kThreads, kernels::ChunkedSmem::kBytes, stream>>>(params);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gdn
