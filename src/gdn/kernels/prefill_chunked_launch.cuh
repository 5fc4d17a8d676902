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
  // One CTA row per sequence, or per segment with the CP hooks.
  const int rows = params.segment_offsets != nullptr ? params.num_segments : params.num_seqs;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(rows), static_cast<unsigned>(params.num_state_heads));
  config.blockDim = dim3(kernels::ChunkedConfig::kThreads);
  config.dynamicSmemBytes = kernels::ChunkedSmem::kBytes;
  config.stream = stream;
  cudaLaunchAttribute programmatic{};
  programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &programmatic;
  config.numAttrs = params.programmatic_launch ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, kernels::gdn_prefill_chunked_kernel<kType>, params));
}

}  // namespace fastinfer::gdn
