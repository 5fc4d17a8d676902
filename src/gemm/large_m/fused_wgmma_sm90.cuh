#pragma once
// Fused NVFP4 x bf16 wgmma kernel (tactic fused_wgmma, see fused_wgmma_sm90.h and
// docs/GEMM_LARGE_M.md). CTA = 3 warpgroups:
//   - producer (warp 0): per k64 stage one bulk copy of the activation tile (the image pass laid it
//     out in wgmma's 128-byte swizzle) and cp.async copies of the 128 rows' codes (32 B each) and
//     scales (4 B each) from the linear [N, K/2] / [N, K/16] arrays, all completing on one mbarrier;
//   - two consumer warpgroups, 64 rows of N each: load the lane's 8 code bytes per row, decode
//     e2m1 x e4m3 into bf16 A fragments (exact: 2 x 4 significant bits), wgmma m64 n<tokens> k16
//     (A from registers, B from shared memory), decoding stage i while stage i - 1's wgmmas run
//     (Pingpong: the two warpgroups take turns issuing).
// Epilogue: alpha * acc -> out dtype, staged transposed in shared memory, 16-byte row stores;
// split-K clusters first add their fp32 tiles through distributed shared memory in rank order.
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

// A fragment of one k16 step from word x (byte i = the two codes of A register i, low nibble =
// lower k). Magnitudes from two prmt byte tables holding bf16(e2m1 * 2^120); scales are
// bf16(sf * 2^-120) (a shifted e4m3 byte: e4m3 subnormals become exact bf16 subnormals), so each
// product e2m1 * sf is exact and normal. s_g / s_g8: the scale pair of rows g / g + 8.
__device__ __forceinline__ void decode_fragment(std::uint32_t x, std::uint32_t s_g, std::uint32_t s_g8,
                                                std::uint32_t (&a)[4]) {
  constexpr std::uint32_t kHigh0to3 = 0x7B7B7B00u, kHigh4to7 = 0x7C7C7C7Cu;
  constexpr std::uint32_t kLow0to3 = 0xC0800000u, kLow4to7 = 0xC0804000u;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::uint32_t s = x >> (16 * half);  // codes of registers 2 half, 2 half + 1
    const std::uint32_t index = s & 0x7777u;   // magnitudes (bit 3 of a prmt selector must stay 0)
    const std::uint32_t high = prmt(kHigh0to3, kHigh4to7, index);
    const std::uint32_t low = prmt(kLow0to3, kLow4to7, index);
    const std::uint32_t r0 = prmt(low, high, 0x5140u) | ((s << 12) & 0x8000u) | ((s << 24) & 0x80000000u);
    const std::uint32_t r1 = prmt(low, high, 0x7362u) | ((s << 4) & 0x8000u) | ((s << 16) & 0x80000000u);
    a[2 * half] = mul_bf16x2(r0, s_g);       // row g
    a[2 * half + 1] = mul_bf16x2(r1, s_g8);  // row g + 8
  }
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

// Producer warp: fills stage i % S once every consumer warp released it.
template <int Tokens>
__device__ __forceinline__ void produce(const Params& p, unsigned char* smem, std::uint64_t* full, std::uint64_t* empty,
                                        int lane, int kc_begin, int n_chunks) {
  using P = Plan<Tokens>;
  constexpr int S = P::kStages;
  const int kc_count = p.k / kFusedChunkK;
  const int n0 = blockIdx.y * kFusedRows;
  const int token_block = blockIdx.x;
  const unsigned char* image = static_cast<const unsigned char*>(p.image) +
                               static_cast<long long>(token_block) * kc_count * P::kActBytes;
  const long long code_row = p.k / 2, scale_row = p.k / 16;
  for (int i = 0; i < n_chunks; ++i) {
    const int s = i % S, chunk = kc_begin + i;
    if (i >= S) mbarrier_wait(&empty[s], ((i / S) - 1) & 1);
    unsigned char* st = smem + s * P::kStageBytes;
    unsigned char* codes = st + P::kActBytes;
    if (lane == 0) {
      mbarrier_arrive_expect_tx(&full[s], P::kActBytes);
      bulk_load(st, image + static_cast<long long>(chunk) * P::kActBytes, P::kActBytes, &full[s]);
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
  asm volatile("cp.async.wait_all;" ::: "memory");
}

template <int Tokens, int SplitK, bool Pingpong>
__global__ void __launch_bounds__(kThreads, 1) fused_wgmma_kernel(const Params p) {
  // Cluster barriers every thread of the cluster takes at the end (producer warps included).
  constexpr int kEndSyncs = SplitK > 1 ? 2 : 0;
  using P = Plan<Tokens>;
  using Op = typename Wgmma<Tokens>::Op;
  constexpr int S = P::kStages;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  auto* full = reinterpret_cast<std::uint64_t*>(smem + P::kRingBytes);
  std::uint64_t* empty = full + S;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kc_count = p.k / kFusedChunkK;
  const int n0 = blockIdx.y * kFusedRows;
  const int token_block = blockIdx.x;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbarrier_init(&full[s], 1 + 32);  // producer's expect_tx + 32 lanes' cp.async arrivals
      mbarrier_init(&empty[s], 256);    // one arrival per consumer thread (see the release below)
    }
    mbarrier_init_fence();
  }
  __syncthreads();
  const std::uint32_t rank = SplitK > 1 ? cluster_rank() : 0;
  const int kc_begin = SplitK > 1 ? static_cast<int>(static_cast<long long>(kc_count) * rank / SplitK) : 0;
  const int n_chunks = (SplitK > 1 ? static_cast<int>(static_cast<long long>(kc_count) * (rank + 1) / SplitK) : kc_count) - kc_begin;
  // The activation image (and `out`) may belong to the previous kernel under PDL.
  asm volatile("griddepcontrol.wait;" ::: "memory");

  if (warp < 4) {  // producer warpgroup: warp 0 issues, the others wait for the end
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
    if (warp == 0) produce<Tokens>(p, smem, full, empty, lane, kc_begin, n_chunks);
#pragma unroll 1
    for (int e = 0; e < kEndSyncs; ++e) cluster_sync();  // no CTA leaves while a peer may still use it
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");
  const int wg = warp / 4 - 1, warp_in_wg = warp % 4;
  const int g = lane / 4, t = lane % 4;
  const int row_g = wg * 64 + warp_in_wg * 16 + g;  // the lane's rows: row_g and row_g + 8
  const int sw = (row_g >> 2) & 1;  // rows row_g and row_g + 8 share the half swap

  float acc[Tokens / 2];
#pragma unroll
  for (int e = 0; e < Tokens / 2; ++e) acc[e] = 0.0f;
  std::uint32_t afrag[2][4][4];  // A fragments of stages i and i - 1 (the latter may still be read)

  // Stage i: decode its four k16 steps while stage i - 1's wgmmas run, issue its wgmmas as one
  // commit group, then wait until stage i - 1's group retired (its slot and fragments are free).
  auto stage = [&](int i, auto buffer) {
    constexpr int b = decltype(buffer)::value;
    const int s = i % S;
    mbarrier_wait(&full[s], (i / S) & 1);
    const unsigned char* st = smem + s * P::kStageBytes;
    const unsigned char* codes = st + P::kActBytes;
    const std::uint8_t* scales = codes + kCodeBytes;
    const std::uint32_t sc_g = *reinterpret_cast<const std::uint32_t*>(scales + row_g * 4);
    const std::uint32_t sc_g8 = *reinterpret_cast<const std::uint32_t*>(scales + (row_g + 8) * 4);
    // K order of the image pass: step j, logical k (2t, 2t+1, 2t+8, 2t+9) = physical 16t + 4j + 0..3,
    // so the lane's 16 codes per row are bytes 8t .. 8t+7 (one 8-byte load) under one block scale (t).
    const int offset = (((t >> 1) ^ sw) << 4) + (t & 1) * 8;
    const uint2 w0 = *reinterpret_cast<const uint2*>(codes + row_g * 32 + offset);
    const uint2 w8 = *reinterpret_cast<const uint2*>(codes + (row_g + 8) * 32 + offset);
    // bf16(sf * 2^-120) = (e4m3 & 0x7f) << 4 for rows g and g + 8, then each duplicated to a pair.
    const std::uint32_t sf = (prmt(sc_g, sc_g8, static_cast<std::uint32_t>(t | ((t + 4) << 8))) << 4) & 0x07F007F0u;
    const std::uint32_t s_g = prmt(sf, 0u, 0x1010u), s_g8 = prmt(sf, 0u, 0x3232u);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // Bytes 2j, 2j + 1 of the lane's 8 (word j / 2) of rows g and g + 8 -> A registers 0..3.
      constexpr std::uint32_t kSel[2] = {0x5140u, 0x7362u};
      const std::uint32_t x = j < 2 ? prmt(w0.x, w8.x, kSel[j & 1]) : prmt(w0.y, w8.y, kSel[j & 1]);
      decode_fragment(x, s_g, s_g8, afrag[b][j]);
    }
    // Pingpong: the two warpgroups take turns issuing (named barriers 2 and 3), so one decodes
    // while the other's wgmmas run instead of both decoding at once.
    if constexpr (Pingpong) named_barrier_sync(2 + wg, 256);
#pragma unroll
    for (int e = 0; e < Tokens / 2; ++e) cute::warpgroup_fence_operand(acc[e]);
    cute::warpgroup_arrive();
    const std::uint32_t act = smem_address(st);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      wgmma_rs<Op>(afrag[b][j], swizzled_desc(act + 32 * j), acc, std::make_integer_sequence<int, Tokens / 2>{});
    cute::warpgroup_commit_batch();
    if constexpr (Pingpong)  // the other warpgroup's turn (warpgroup 1 skips it after its last stage)
      if (wg == 0 || i + 1 < n_chunks) named_barrier_arrive(2 + (wg ^ 1), 256);
    cute::warpgroup_wait<1>();
#pragma unroll
    for (int e = 0; e < Tokens / 2; ++e) cute::warpgroup_fence_operand(acc[e]);
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) cute::warpgroup_fence_operand(afrag[b ^ 1][j][q]);
    // Release stage i - 1: every consumer thread arrives (release) after its own loads of it. One
    // arrival per warp after __syncwarp is as correct, but compute-sanitizer racecheck credits a
    // barrier only with the arriving thread's accesses and reports the other lanes' loads against
    // the refill (docs/GEMM_LARGE_M.md, "Racecheck finding").
    if (i > 0) mbarrier_arrive(&empty[(i - 1) % S]);
  };
  if constexpr (Pingpong)
    if (wg == 1 && n_chunks > 0) named_barrier_arrive(2, 256);  // warpgroup 0 issues first
  int i = 0;
  for (; i + 1 < n_chunks; i += 2) {
    stage(i, std::integral_constant<int, 0>{});
    stage(i + 1, std::integral_constant<int, 1>{});
  }
  if (i < n_chunks) stage(i, std::integral_constant<int, 0>{});
  cute::warpgroup_wait<0>();
#pragma unroll
  for (int e = 0; e < Tokens / 2; ++e) cute::warpgroup_fence_operand(acc[e]);
  asm volatile("griddepcontrol.launch_dependents;");

  // Both consumer warpgroups are done with the ring (every issued stage was consumed): it holds
  // the output tile now, transposed (tile[token][row]), then 16-byte pieces of output rows are stored.
  named_barrier_sync(1, 256);
  const int m0 = token_block * Tokens;
  const int consumer = threadIdx.x - 128;
  constexpr int kPieces = Tokens * kFusedRows / 8;
  if constexpr (SplitK == 1) {
    auto* tile = reinterpret_cast<std::uint16_t*>(smem);
#pragma unroll
    for (int c = 0; c < Tokens / 8; ++c)
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int row = row_g + 8 * (h / 2), token = 8 * c + 2 * t + (h % 2);
        tile[token * kOutPitch + row] = to_out_bits(acc[4 * c + h] * p.alpha, p.out_is_fp16);
      }
    named_barrier_sync(1, 256);
#pragma unroll 4
    for (int q = consumer; q < kPieces; q += 256) {
      const int token = q / (kFusedRows / 8), piece = q % (kFusedRows / 8);
      const int m = m0 + token, n = n0 + piece * 8;
      if (m < p.m && n < p.n)  // n % 8 == 0: a piece is wholly inside or outside
        *reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(p.out) + static_cast<long long>(m) * p.ldo + n) =
            *reinterpret_cast<const uint4*>(tile + token * kOutPitch + piece * 8);
    }
  } else {
    // fp32 partial tile per CTA; piece q is summed by rank q % SplitK over ranks 0, 1, ... in order.
    auto* partial = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int c = 0; c < Tokens / 8; ++c)
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int row = row_g + 8 * (h / 2), token = 8 * c + 2 * t + (h % 2);
        partial[token * kPartialPitch + row] = acc[4 * c + h];
      }
    cluster_sync();
    cg::cluster_group cluster = cg::this_cluster();
    for (int q = consumer * SplitK + static_cast<int>(rank); q < kPieces; q += 256 * SplitK) {
      const int token = q / (kFusedRows / 8), piece = q % (kFusedRows / 8);
      const int m = m0 + token, n = n0 + piece * 8;
      if (m >= p.m || n >= p.n) continue;
      float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int r = 0; r < SplitK; ++r) {
        const float* src = cluster.map_shared_rank(partial, r) + token * kPartialPitch + piece * 8;
        const float4 lo = *reinterpret_cast<const float4*>(src), hi = *reinterpret_cast<const float4*>(src + 4);
        sum[0] += lo.x, sum[1] += lo.y, sum[2] += lo.z, sum[3] += lo.w;
        sum[4] += hi.x, sum[5] += hi.y, sum[6] += hi.z, sum[7] += hi.w;
      }
      std::uint16_t bits[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) bits[e] = to_out_bits(sum[e] * p.alpha, p.out_is_fp16);
      *reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(p.out) + static_cast<long long>(m) * p.ldo + n) =
          *reinterpret_cast<const uint4*>(bits);
    }
    cluster_sync();  // peers may still read this CTA's partial tile
  }
}

// Activation image: unit (block, chunk, token r, 16-byte piece c) = 8 values of a[block*Tokens + r]
// in chunk `chunk`, stored at piece c ^ (r % 8) of its 128-byte row (the 128-byte swizzle); zeros
// past M.
// The k order inside a chunk is permuted: piece c holds logical k 8c .. 8c+7, i.e. of step j = c / 2,
// half h = c % 2, the pairs at physical 16t + 4j + 2h (t = 0..3), matching the weight lanes' bytes.
template <int Tokens>
__global__ void __launch_bounds__(256) fused_image_kernel(const __nv_bfloat16* __restrict__ a, int m, int lda,
                                                          int kc_count, uint4* __restrict__ image, long long units) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long u = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (u >= units) return;
  const int c = static_cast<int>(u % 8), r = static_cast<int>((u / 8) % Tokens);
  const long long tile = u / (8 * Tokens);  // block * kc_count + chunk
  const int chunk = static_cast<int>(tile % kc_count);
  const long long token = tile / kc_count * Tokens + r;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (token < m) {
    const __nv_bfloat16* row = a + token * lda + chunk * kFusedChunkK;
    const int base = 4 * (c >> 1) + 2 * (c & 1);
    v.x = *reinterpret_cast<const std::uint32_t*>(row + base);
    v.y = *reinterpret_cast<const std::uint32_t*>(row + base + 16);
    v.z = *reinterpret_cast<const std::uint32_t*>(row + base + 32);
    v.w = *reinterpret_cast<const std::uint32_t*>(row + base + 48);
  }
  image[(tile * Tokens + r) * 8 + (c ^ (r % 8))] = v;
}

}  // namespace fused
}  // namespace fastinfer::gemm::detail

// Host side (defined here, instantiated per token tile in instantiations/).
#include <array>
#include <mutex>

#include "fastinfer/error.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gemm::detail {

template <int Tokens, int SplitK, bool Pingpong>
void run_fused_wgmma_sm90(const LargeMParams& p, void* image, Stream stream) {
  using P = fused::Plan<Tokens>;
  static std::array<std::once_flag, 64> once;  // the shared-memory opt-in is per device
  if (p.device < 0 || p.device >= static_cast<int>(once.size()))
    throw Error(Error::Kind::kValue, "mm_bf16_fp4: device ordinal out of range for the fused large-M kernel");
  std::call_once(once[p.device], [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(fused::fused_wgmma_kernel<Tokens, SplitK, Pingpong>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, P::kSmemBytes));
  });
  const int kc_count = p.k / kFusedChunkK;
  const int token_blocks = (p.m + Tokens - 1) / Tokens;
  const long long units = static_cast<long long>(token_blocks) * Tokens * kc_count * 8;

  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>((units + 255) / 256));
  config.blockDim = dim3(256);
  config.stream = stream;
  config.attrs = &pdl;
  config.numAttrs = p.enable_pdl ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, fused::fused_image_kernel<Tokens>,
                                          static_cast<const __nv_bfloat16*>(p.a), p.m, p.lda, kc_count,
                                          static_cast<uint4*>(image), units));

  fused::Params kp{image, p.w_packed, p.w_scales, p.out, p.m, p.n, p.k, p.ldo, p.alpha * p.w_dequant,
                   p.out_dtype == DType::kFloat16};
  const int row_blocks = (p.n + kFusedRows - 1) / kFusedRows;
  config.gridDim = dim3(static_cast<unsigned>(token_blocks), static_cast<unsigned>(row_blocks), SplitK);
  config.blockDim = dim3(fused::kThreads);
  config.dynamicSmemBytes = P::kSmemBytes;
  cudaLaunchAttribute attrs[2];
  attrs[0] = pdl;
  attrs[1].id = cudaLaunchAttributeClusterDimension;
  attrs[1].val.clusterDim.x = 1;
  attrs[1].val.clusterDim.y = 1;
  attrs[1].val.clusterDim.z = SplitK;
  config.attrs = p.enable_pdl ? attrs : attrs + 1;
  config.numAttrs = (p.enable_pdl ? 1 : 0) + (SplitK > 1 ? 1 : 0);  // no cluster attribute for single CTAs
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, fused::fused_wgmma_kernel<Tokens, SplitK, Pingpong>, kp));
}

}  // namespace fastinfer::gemm::detail
