#pragma once
// The few sm_90 asynchronous-copy primitives the pipelined decode kernel needs: transaction
// mbarriers and 1-D bulk copies (cp.async.bulk, the TMA engine without a tensor map) between
// global and shared memory. Sizes and addresses are multiples of 16 bytes.
#include <cstdint>

namespace fastinfer::gdn::decode_sm90 {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
}

// Makes initialised barriers visible to the async proxy (the copy engine); then __syncthreads().
__device__ __forceinline__ void mbarrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.shared::cta.b64 state, [%0];\n\t}" ::"r"(smem_address(bar))
               : "memory");
}

// Arrives and announces `bytes` of bulk copies that complete on this barrier's current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}" ::"r"(
                   smem_address(bar)),
               "r"(bytes)
               : "memory");
}

// Blocks until the phase of parity `parity` has completed (acquire: its copies are visible).
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, int parity) {
  const std::uint32_t addr = smem_address(bar);
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}

// global -> shared, completing `bytes` transactions on `bar`.
__device__ __forceinline__ void bulk_load(void* smem_dst, const void* gmem_src, std::uint32_t bytes, std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_address(smem_dst)),
               "l"(gmem_src), "r"(bytes), "r"(smem_address(bar))
               : "memory");
}

// shared -> global, tracked by the issuing thread's bulk groups (bulk_commit / bulk_wait_read).
__device__ __forceinline__ void bulk_store(void* gmem_dst, const void* smem_src, std::uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem_dst), "r"(smem_address(smem_src)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Waits until at most kPending of this thread's committed bulk groups still read shared memory.
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy reads (a bulk store).
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Named barrier over the first `threads` threads of the CTA (id 0 is __syncthreads).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Programmatic dependent launch (PTX griddepcontrol; no-ops in a launch without the attribute):
// the stream's next kernel may be scheduled from now on (it still waits for this grid before its
// own wait returns) ...
__device__ __forceinline__ void allow_dependent_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
// ... and this grid waits for the previous kernel to complete and its writes to be visible.
__device__ __forceinline__ void wait_for_previous_grid() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

}  // namespace fastinfer::gdn::decode_sm90
