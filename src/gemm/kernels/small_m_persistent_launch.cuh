#pragma once
// Launch of one persistent small-M instantiation (PDL as a launch attribute, no cluster).
#include <cuda_runtime.h>

#include "gemm/kernels/small_m_persistent_sm90.cuh"
#include "runtime/cuda_check.h"
#include "runtime/once_per_device.h"

namespace fastinfer::gemm::detail {

// The ring needs more than the default 48 KB of dynamic shared memory: opt in once per device.
template <int T, int W, int S>
void allow_persistent_smem(int device) {
  static OncePerDevice once;
  once(device, [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(small_m_persistent_kernel<T, W, S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              SmallMPersistentKernel<T, W, S>::kSmemBytes));
  });
}

template <int T, int W, int S>
int persistent_blocks_per_sm_instance(int device) {
  allow_persistent_smem<T, W, S>(device);
  int blocks = 0;
  FASTINFER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, small_m_persistent_kernel<T, W, S>, W * 32,
                                                                     SmallMPersistentKernel<T, W, S>::kSmemBytes));
  return blocks;
}

template <int T, int W, int S>
void launch_persistent_instance(const SmallMPersistentParams& p, int ctas, int device, bool enable_pdl, cudaStream_t stream) {
  using K = SmallMPersistentKernel<T, W, S>;
  allow_persistent_smem<T, W, S>(device);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(ctas), 1, 1);
  config.blockDim = dim3(K::kThreads, 1, 1);
  config.dynamicSmemBytes = K::kSmemBytes;
  config.stream = stream;
  cudaLaunchAttribute attrs[1];
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = enable_pdl ? 1 : 0;
  config.attrs = attrs;
  config.numAttrs = 1;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, small_m_persistent_kernel<T, W, S>, p));
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gemm::detail
