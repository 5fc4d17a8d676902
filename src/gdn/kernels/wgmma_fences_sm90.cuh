#pragma once
// Fences around wgmma shared by the GDN kernels that issue it (prefill consumers, CP stage 2).
#include <cute/arch/mma_sm90_gmma.hpp>

namespace fastinfer::gdn {

// Pins wgmma operand or accumulator fragments ([tiles][4] registers of any 32-bit type), so the
// compiler neither reads them before the wgmma's wait nor moves their writes across its issue.
template <class T, int kTiles>
__device__ __forceinline__ void fence_operands(T (&fragments)[kTiles][4]) {
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) cute::warpgroup_fence_operand(fragments[t][i]);
}

// Generic-proxy writes of this thread to shared memory (st.shared, cp.async) become visible to
// later wgmma reads (async proxy) once ordered by a barrier.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

}  // namespace fastinfer::gdn
