#pragma once
// PTX building blocks of the warp-specialised GDN prefill kernel: ldmatrix (plain and
// transposed), cp.async with zero fill, mbarriers for the producer -> consumer stage hand-off, a
// named barrier for the producer warpgroup alone, and bf16/fp16 pair packing.
//
// ldmatrix.x4 reads four 8x8 16-bit matrices; lane l gives the row address of row l % 8 of matrix
// l / 8. Without .trans lane (group g, quad q) receives row g, columns 2q, 2q+1 of each matrix;
// with .trans it receives rows 2q, 2q+1 of column g. Barrier asm carries a "memory" clobber so the
// compiler never moves shared-memory accesses across it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gdn/kernels/prefill_fragments.cuh"

namespace fastinfer::gdn::kernels::fast {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// The transposing store of four 8x8 16-bit matrices: register i holds this lane's pair (row
// lane / 4, columns 2 (lane % 4), +1) of matrix i, stored as column lane / 4, rows 2 (lane % 4), +1;
// lane l gives the address of (memory) row l % 8 of matrix l / 8.
__device__ __forceinline__ void stmatrix_x4_trans(std::uint32_t address, std::uint32_t r0, std::uint32_t r1,
                                                  std::uint32_t r2, std::uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}

// 16 bytes global -> shared; src_bytes = 0 writes zeros without reading `src`.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
// 4 bytes global -> shared; src_bytes = 0 writes zeros without reading `src`.
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count) : "memory");
}
// Release: this thread's earlier shared-memory writes are visible to a thread whose wait sees
// the phase complete.
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
}
__device__ __forceinline__ bool mbarrier_try_wait(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
// Waits until the phase with the given parity has completed (acquire). A wait that never ends is
// a bug (a protocol error between the roles): trap after ~2^32 cycles (about 2 s) instead of
// hanging, so a test fails with an error.
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, std::uint32_t parity) {
  if (mbarrier_try_wait(bar, parity)) return;
  const long long start = clock64();
  while (!mbarrier_try_wait(bar, parity))
    if (clock64() - start > (1ll << 32)) __trap();
}

// The arrival of the thread that issues a stage's TMA loads: the phase completes when `bytes`
// more have landed.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

// One box of a 3-d tensor map (__grid_constant__ kernel parameter) into shared memory; its bytes
// count on `bar`.
__device__ __forceinline__ void tma_load_3d(void* dst, const void* tensor_map, std::uint64_t* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          smem_address(dst)),
      "l"(tensor_map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar))
      : "memory");
}

// One box of a 3-d tensor map from shared memory to global (a bulk async-group of this thread).
__device__ __forceinline__ void tma_store_3d(const void* tensor_map, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(tensor_map),
               "r"(smem_address(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// This thread's bulk stores have read their shared memory (it may be overwritten).
__device__ __forceinline__ void bulk_wait_group_read_all() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// This thread's bulk stores are complete.
__device__ __forceinline__ void bulk_wait_group_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// bar.sync on a hardware barrier other than 0 (which __syncthreads uses) for `threads` threads.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

template <InputType kType>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  typename Operand<kType>::Pair p = Operand<kType>::pack(lo, hi);
  return *reinterpret_cast<std::uint32_t*>(&p);
}

template <InputType kType>
__device__ __forceinline__ float2 unpack_pair(std::uint32_t u) {
  if constexpr (kType == InputType::kBFloat16) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u));
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(&u));
  }
}

template <InputType kType>
__device__ __forceinline__ void mma_pair(float (&c0)[4], float (&c1)[4], const std::uint32_t (&a)[4],
                                         const std::uint32_t (&b)[4]) {
  const std::uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
  mma<kType>(c0, a, b0);
  mma<kType>(c1, a, b1);
}

}  // namespace fastinfer::gdn::kernels::fast
