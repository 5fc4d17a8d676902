#pragma once
// Definitions behind gdn/prefill_fast_launch.h; included by the instantiation files only.
#include <cuda_runtime.h>

#include "gdn/kernels/prefill_fast_sm90.cuh"
#include "gdn/prefill_fast_launch.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn {

template <InputType kType>
void prepare_prefill_fast() {
  FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(kernels::fast::gdn_prefill_fast_kernel<kType>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, kernels::fast::FastSmem::kBytes));
}

template <InputType kType>
void launch_prefill_fast(const PrefillParams& params, int ctas, Stream stream, unsigned long long* profile) {
  const std::int64_t rows = params.segment_offsets != nullptr ? params.num_segments : params.num_seqs;
  const std::int64_t items = rows * params.num_state_heads;
  if (items == 0 || params.total_tokens == 0) return;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(items < ctas ? items : ctas));
  config.blockDim = dim3(kernels::fast::FastConfig::kThreads);
  config.dynamicSmemBytes = kernels::fast::FastSmem::kBytes;
  config.stream = stream;
  cudaLaunchAttribute programmatic{};
  programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &programmatic;
  config.numAttrs = params.programmatic_launch ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, kernels::fast::gdn_prefill_fast_kernel<kType>, params, profile));
}

}  // namespace fastinfer::gdn
