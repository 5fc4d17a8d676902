#pragma once
// Pieces shared by the fused NVFP4 x bf16 wgmma kernels (fused_wgmma_sm90.cuh, the persistent form
// fused_persistent_sm90.cuh) and their consumer main loop (fused_mainloop_sm90.cuh): kernel
// parameters, the stage plan, wgmma atoms and descriptors, PTX helpers, and the producer's stage load.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cute/arch/mma_sm90_gmma.hpp>
#include <cstdint>
#include <utility>

#include "gdn/kernels/decode_bulk_copy.cuh"
#include "gemm/large_m/fused_wgmma_sm90.h"

namespace fastinfer::gemm::detail {
namespace fused {

namespace cg = cooperative_groups;
using gdn::decode_sm90::bulk_load;
using gdn::decode_sm90::mbarrier_arrive;
using gdn::decode_sm90::mbarrier_arrive_expect_tx;
using gdn::decode_sm90::mbarrier_init;
using gdn::decode_sm90::mbarrier_init_fence;
using gdn::decode_sm90::mbarrier_wait;
using gdn::decode_sm90::named_barrier_sync;

__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
using gdn::decode_sm90::smem_address;

struct Params {
  const void* image;                 // activation image (fused_image_bytes)
  const std::uint8_t* w_packed;      // [N, K/2]
  const std::uint8_t* w_scales;      // [N, K/16] e4m3
  void* out;                         // [M, N], row stride ldo
  int m, n, k, ldo;
  float alpha;                       // alpha * w_dequant
  bool out_is_fp16;
};

inline constexpr int kThreads = 384;       // producer warpgroup + 2 consumer warpgroups
inline constexpr int kCodeBytes = kFusedRows * 32;  // 128 rows x 64 codes
inline constexpr int kScaleBytes = kFusedRows * 4;  // 128 rows x 4 blocks
inline constexpr int kOutPitch = kFusedRows + 8;    // staged output row (tokens x rows), padded
inline constexpr int kPartialPitch = kFusedRows + 4;  // split-K fp32 partial row, padded

template <int Tokens>
struct Plan {
  static constexpr int kActBytes = Tokens * 128;
  // Stage = activation tile (1024-aligned for the swizzle) + codes + scales, rounded to 1024.
  static constexpr int kStageBytes = kActBytes + 5120;
  // Stages: ~185 KB of loads in flight per SM (one CTA per SM); unmeasured first choice.
  static constexpr int kStages = Tokens >= 256 ? 5 : Tokens >= 128 ? 8 : 12;
  static constexpr int kRingBytes = kStages * kStageBytes;
  static constexpr int kBarrierBytes = 2 * kStages * 8;
  static constexpr int kSmemBytes = 1024 + kRingBytes + kBarrierBytes;  // + alignment slack
  static_assert(Tokens * kPartialPitch * 4 <= kRingBytes, "the output staging reuses the ring");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");
};

template <int Tokens>
struct Wgmma;
template <>
struct Wgmma<64> {
  using Op = cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct Wgmma<128> {
  using Op = cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct Wgmma<256> {
  using Op = cute::SM90::GMMA::MMA_64x256x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};

template <class Op, int... I>
__device__ __forceinline__ void wgmma_rs(const std::uint32_t (&a)[4], std::uint64_t desc, float (&d)[sizeof...(I)],
                                         std::integer_sequence<int, I...>) {
  Op::fma(a[0], a[1], a[2], a[3], desc, d[I]..., cute::SM90::GMMA::ScaleOut::One);
}

// K-major B descriptor, 128-byte swizzle: rows of 128 B, 8-row atoms 1024 B apart (SBO); the k16
// step j starts 32 j bytes into the row (the hardware applies the swizzle to the address bits).
__device__ __forceinline__ std::uint64_t swizzled_desc(std::uint32_t smem_addr) {
  return static_cast<std::uint64_t>((smem_addr >> 4) & 0x3FFF) | (std::uint64_t{1} << 16) |
         (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
}

__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t selector) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

__device__ __forceinline__ std::uint32_t mul_bf16x2(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
}
// Arrives on `bar` once this thread's earlier cp.async copies have landed (counted in its init).
__device__ __forceinline__ void cp_async_arrive(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_address(bar)) : "memory");
}

// Cluster pieces (SplitK = C: the C CTAs of a cluster take consecutive K slices and sum their fp32
// tiles through distributed shared memory in rank order, deterministic).
__device__ __forceinline__ std::uint32_t cluster_rank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ std::uint16_t to_out_bits(float v, bool fp16) {
  return fp16 ? __half_as_ushort(__float2half_rn(v)) : __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

// Code row r of a stage: 32 bytes, its two 16-byte halves swapped when bit 2 of r is set, so the
// 8 rows a warp reads at once hit 32 different banks.
__device__ __forceinline__ int code_offset(int row, int half) { return row * 32 + ((half ^ ((row >> 2) & 1)) << 4); }

// Producer warp, ring position i: once every consumer thread released stage i % S, loads chunk
// `chunk` of token block `token_block` and rows n0 .. n0 + 127 into it (one bulk copy of the
// activation tile, cp.async copies of codes and scales), all completing on full[i % S].
template <int Tokens>
__device__ __forceinline__ void produce_stage(const Params& p, unsigned char* smem, std::uint64_t* full,
                                              std::uint64_t* empty, int lane, int i, int token_block, int n0,
                                              int chunk) {
  using P = Plan<Tokens>;
  constexpr int S = P::kStages;
  const int kc_count = p.k / kFusedChunkK;
  const long long code_row = p.k / 2, scale_row = p.k / 16;
  const int s = i % S;
  if (i >= S) mbarrier_wait(&empty[s], ((i / S) - 1) & 1);
  unsigned char* st = smem + s * P::kStageBytes;
  unsigned char* codes = st + P::kActBytes;
  if (lane == 0) {
    const unsigned char* image = static_cast<const unsigned char*>(p.image) +
                                 (static_cast<long long>(token_block) * kc_count + chunk) * P::kActBytes;
    mbarrier_arrive_expect_tx(&full[s], P::kActBytes);
    bulk_load(st, image, P::kActBytes, &full[s]);
  }
#pragma unroll
  for (int u = 0; u < kCodeBytes / 16 / 32; ++u) {
    const int q = lane + 32 * u, row = q >> 1, half = q & 1;
    const int n = n0 + row;
    const bool ok = n < p.n;
    const std::uint8_t* src = p.w_packed + (ok ? n : 0) * code_row + chunk * 32 + half * 16;
    cp_async16(codes + code_offset(row, half), src, ok ? 16 : 0);
  }
#pragma unroll
  for (int u = 0; u < kFusedRows / 32; ++u) {
    const int row = lane + 32 * u, n = n0 + row;
    const bool ok = n < p.n;
    cp_async4(codes + kCodeBytes + row * 4, p.w_scales + (ok ? n : 0) * scale_row + chunk * 4, ok ? 4 : 0);
  }
  cp_async_arrive(&full[s]);
}

}  // namespace fused
}  // namespace fastinfer::gemm::detail
