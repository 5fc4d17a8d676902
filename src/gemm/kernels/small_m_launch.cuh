#pragma once
// Launch of one small-M kernel instantiation (cluster size and PDL as launch attributes).
#include <cuda_runtime.h>

#include "gemm/kernels/small_m_sm90.cuh"
#include "runtime/cuda_check.h"
#include "runtime/once_per_device.h"

namespace fastinfer::gemm::detail {

// The ring needs more than the default 48 KB of dynamic shared memory: opt in once per device
// (per instantiation), not per call.
template <int R, int T, int W, bool Lean>
void allow_small_m_smem(int device) {
  static OncePerDevice once;
  once(device, [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(small_m_kernel<R, T, W, Lean>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              SmallMKernel<R, T, W, Lean>::kSmemBytes));
  });
}

// CTAs of this instantiation resident per SM (registers, shared memory), for the heuristic.
template <int R, int T, int W, bool Lean = false>
int small_m_blocks_per_sm_instance(int device) {
  allow_small_m_smem<R, T, W, Lean>(device);
  int blocks = 0;
  FASTINFER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, small_m_kernel<R, T, W, Lean>, W * 32,
                                                                     SmallMKernel<R, T, W, Lean>::kSmemBytes));
  return blocks;
}

template <int R, int T, int W, bool Lean = false>
void launch_small_m_instance(const SmallMParams& p, int cluster, int device, bool enable_pdl, cudaStream_t stream) {
  using K = SmallMKernel<R, T, W, Lean>;
  allow_small_m_smem<R, T, W, Lean>(device);
  const int row_groups = (p.n + K::kRows - 1) / K::kRows;
  const int token_groups = (p.m + K::kTokens - 1) / K::kTokens;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(row_groups * cluster), static_cast<unsigned>(token_groups), 1);
  config.blockDim = dim3(K::kThreads, 1, 1);
  config.dynamicSmemBytes = K::kSmemBytes;
  config.stream = stream;
  cudaLaunchAttribute attrs[2];
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = static_cast<unsigned>(cluster);
  attrs[0].val.clusterDim.y = 1;
  attrs[0].val.clusterDim.z = 1;
  attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[1].val.programmaticStreamSerializationAllowed = enable_pdl ? 1 : 0;
  config.attrs = attrs;
  config.numAttrs = 2;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, small_m_kernel<R, T, W, Lean>, p));
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gemm::detail
