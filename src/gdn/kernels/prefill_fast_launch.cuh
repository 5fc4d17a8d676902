#pragma once
// Definitions behind gdn/prefill_fast_launch.h; included by the instantiation files only.
#include <cuda_runtime.h>

#include "gdn/kernels/prefill_fast_sm90.cuh"
#include "gdn/prefill_fast_launch.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn {

namespace prefill_fast_detail {
using kernels::fast::TSource;
template <InputType kType>
using Kernel = void (*)(const PrefillParams, unsigned long long*);
template <InputType kType>
constexpr Kernel<kType> kKernels[4] = {kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kSolve>,
                                       kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kTGated>,
                                       kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kInverseOrSolve>,
                                       kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kTGatedOrSolve>};
// The instantiation for the params' T source (the index into kKernels): T_g with the segment hooks
// (CP stage 4) may miss the rows of a segment past the plan, which solve.
inline int kernel_index(const PrefillParams& p) {
  if (p.chunk_t_gated != nullptr) return p.segment_offsets != nullptr ? 3 : 1;
  return p.chunk_inverse != nullptr ? 2 : 0;
}
}  // namespace prefill_fast_detail

template <InputType kType>
void prepare_prefill_fast() {
  for (auto kernel : prefill_fast_detail::kKernels<kType>)
    FASTINFER_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kernels::fast::FastSmem::kBytes));
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
  const auto kernel = prefill_fast_detail::kKernels<kType>[prefill_fast_detail::kernel_index(params)];
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, params, profile));
}

}  // namespace fastinfer::gdn
