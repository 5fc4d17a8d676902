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

// The compiled (W, S) shapes of kPersistentShapes (small_m_persistent.h): calls
// f.template operator()<W, S>() for the one equal to (warps, stages); false if none.
template <class F>
bool with_persistent_shape(int warps, int stages, F&& f) {
  if (warps == 4 && stages == 4) return f.template operator()<4, 4>(), true;
  if (warps == 8 && stages == 3) return f.template operator()<8, 3>(), true;
  if (warps == 8 && stages == 2) return f.template operator()<8, 2>(), true;
  return false;
}

// What each instantiation file (small_m_persistent_t{1,2,4}.cu) compiles for its token tiles T.
template <int T>
bool launch_persistent_tiles(const SmallMPersistentParams& p, const PersistentShape& shape, int ctas, int device,
                             bool enable_pdl, cudaStream_t stream) {
  return with_persistent_shape(shape.warps, shape.stages, [&]<int W, int S>() {
    launch_persistent_instance<T, W, S>(p, ctas, device, enable_pdl, stream);
  });
}

template <int T>
int persistent_blocks_tiles(const PersistentShape& shape, int device) {
  int blocks = 0;
  with_persistent_shape(shape.warps, shape.stages,
                        [&]<int W, int S>() { blocks = persistent_blocks_per_sm_instance<T, W, S>(device); });
  return blocks;
}

inline bool persistent_shape_compiled(const PersistentShape& shape) {
  for (const auto& c : kPersistentShapes)
    if (c[0] == shape.warps && c[1] == shape.stages) return true;
  return false;
}

}  // namespace fastinfer::gemm::detail
