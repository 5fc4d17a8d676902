// Mid-M kernels (fused decode + wgmma): 64- and 128-token CTA tiles.
#include <cuda_runtime.h>

#include <string>

#include "gemm/kernels/mid_m_sm90.cuh"
#include "runtime/check.h"
#include "runtime/cuda_check.h"
#include "runtime/once_per_device.h"

namespace fastinfer::gemm::detail {
namespace {

template <int TN>
void launch_mid_m_instance(const SmallMParams& p, int cluster, int device, bool enable_pdl, cudaStream_t stream) {
  // More than 48 KB of dynamic shared memory: opt in once per device, not per call.
  static OncePerDevice once;
  once(device, [] {
    FASTINFER_CUDA_CHECK(
        cudaFuncSetAttribute(mid_m_kernel<TN>, cudaFuncAttributeMaxDynamicSharedMemorySize, mid_m_smem_bytes(TN)));
  });
  const int row_groups = (p.n + kMidMRows - 1) / kMidMRows;
  const int token_groups = (p.m + TN - 1) / TN;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(token_groups), static_cast<unsigned>(row_groups * cluster), 1);
  config.blockDim = dim3(kMidMWarps * 32, 1, 1);
  config.dynamicSmemBytes = mid_m_smem_bytes(TN);
  config.stream = stream;
  cudaLaunchAttribute attrs[2];
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = 1;
  attrs[0].val.clusterDim.y = static_cast<unsigned>(cluster);
  attrs[0].val.clusterDim.z = 1;
  attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[1].val.programmaticStreamSerializationAllowed = enable_pdl ? 1 : 0;
  config.attrs = attrs;
  config.numAttrs = 2;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, mid_m_kernel<TN>, p));
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_mid_m(const SmallMParams& p, int tokens, int cluster, int device, bool enable_pdl, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (tokens == 64) return launch_mid_m_instance<64>(p, cluster, device, enable_pdl, s);
  if (tokens == 128) return launch_mid_m_instance<128>(p, cluster, device, enable_pdl, s);
  check::fail("gemm::mm_bf16_fp4", "tactic", "name a compiled mid-M token tile (64 or 128)", std::to_string(tokens));
}

}  // namespace fastinfer::gemm::detail
