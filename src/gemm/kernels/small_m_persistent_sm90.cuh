#pragma once
// Persistent small-M mm_bf16_fp4 kernel: the grid is a whole number of CTAs per SM and every warp
// streams an equal contiguous share of the weight's group-chunk list (small_m_persistent.h), so no
// SM waits on a tail wave and no cluster synchronisation is needed. Per chunk the work is the same
// as small_m_kernel with R = 4 (cp.async ring per warp, decode in registers, mma.m16n8k16 with the
// weight as A). When the warp's share leaves a row group it flushes: directly to `out` if it
// streamed the whole row group, else through a workspace slot and the row group's counter (the
// last contributor sums the slots in a fixed order, so two runs give identical bits).
// (Session 4, batch 1: fetching each stage's weights with cp.async.bulk by one lane per warp was
// 3-15 % slower than the 16-byte cp.async of all lanes in every cell; dropped.)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm/kernels/small_m_sm90.cuh"
#include "gemm/small_m_persistent.h"

namespace fastinfer::gemm::detail {

template <int T, int W, int S>
struct SmallMPersistentKernel {
  static constexpr int R = kPersistRowTiles;
  static constexpr int kThreads = W * 32;
  static constexpr int kWeightBytes = R * 512;
  static constexpr int kScaleBytes = R * 64;
  static constexpr int kStageBytes = small_m_stage_bytes(R, T);
  static constexpr int kSmemBytes = W * S * kStageBytes;
  static_assert(S >= 2, "the ring needs two stages");
  static_assert(kSmemBytes <= 227 * 1024, "ring exceeds the shared memory of an SM");
};

__device__ __forceinline__ unsigned atomic_add_acq_rel_gpu(unsigned* address, unsigned value) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(address), "r"(value) : "memory");
  return old;
}

// Warp of the grid that streams group chunk x (the largest w with floor(total * w / nw) <= x).
__device__ __forceinline__ int persistent_owner(long long x, long long total, int nw) {
  return static_cast<int>(((x + 1) * nw - 1) / total);
}

__device__ __forceinline__ void store_out(const SmallMParams& p, int n, int m, float v) {
  if (n < p.n && m < p.m) {
    const long long o = static_cast<long long>(m) * p.ldo + n;
    if (p.out_is_fp16) static_cast<__half*>(p.out)[o] = __float2half_rn(v * p.alpha_scaled);
    else static_cast<__nv_bfloat16*>(p.out)[o] = __float2bfloat16_rn(v * p.alpha_scaled);
  }
}

// C fragments of row group rg -> out. c0, c1 = (row g, tokens 2t, 2t+1), c2, c3 = row g + 8.
template <int T>
__device__ __forceinline__ void store_fragments(const SmallMParams& p, int rg, const float4 (&frag)[4][T]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt) {
      const int row = rg * kPersistRows + r * kTileRows + g, col = tt * 8 + 2 * t;
      store_out(p, row, col, frag[r][tt].x);
      store_out(p, row, col + 1, frag[r][tt].y);
      store_out(p, row + 8, col, frag[r][tt].z);
      store_out(p, row + 8, col + 1, frag[r][tt].w);
    }
}

// The warp's sums of row group rg -> out, directly if the whole row group was this warp's, else
// through its slot and the row group's counter. Slots hold the C fragments as they sit in the
// lanes ([4 row tiles][T][32 lanes] float4), so writes and reads are whole 16-byte units; lanes
// whose token columns are all past M skip them. The last contributor loads every slot (fragments
// of one contributor in flight together) and adds them in contributor order. Whole warp.
template <int T>
__device__ __forceinline__ void persistent_flush(const SmallMPersistentParams& pp, int rg, int gw, const float (&acc)[4][T][4]) {
  const SmallMParams& p = pp.base;
  const int lane = threadIdx.x % 32, t = lane % 4;
  const long long kc_count = p.kc_count;
  const int first = persistent_owner(rg * kc_count, pp.total, pp.warps_total);
  const int last = persistent_owner(rg * kc_count + kc_count - 1, pp.total, pp.warps_total);
  float4 frag[4][T];
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt) frag[r][tt] = make_float4(acc[r][tt][0], acc[r][tt][1], acc[r][tt][2], acc[r][tt][3]);
  if (first == last) {
    store_fragments<T>(p, rg, frag);
    return;
  }
  constexpr int kSlotUnits = persistent_slot_floats(T) / 4;  // float4 per slot
  float4* group_slots = reinterpret_cast<float4*>(pp.partials) + static_cast<long long>(rg) * pp.slots_per_group * kSlotUnits;
  float4* mine = group_slots + (gw - first) * kSlotUnits;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt)
      if (tt * 8 + 2 * t < p.m) mine[(r * T + tt) * 32 + lane] = frag[r][tt];
  // The warp barrier orders every lane's slot stores before lane 0's release; lane 0's acquire and
  // the barrier order the other slots' loads after it (the CTA-level pattern of cutlass/barrier.h).
  __syncwarp();
  unsigned arrived = 0;
  if (lane == 0) arrived = atomic_add_acq_rel_gpu(pp.counters + rg, 1u);
  arrived = __shfl_sync(0xffffffffu, arrived, 0);
  const int contributors = last - first + 1;
  if (arrived != static_cast<unsigned>(contributors - 1)) return;
  __syncwarp();
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt) frag[r][tt] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int j = 0; j < contributors; ++j) {
    float4 v[4][T];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int tt = 0; tt < T; ++tt)
        v[r][tt] = tt * 8 + 2 * t < p.m ? __ldcg(group_slots + j * kSlotUnits + (r * T + tt) * 32 + lane)
                                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int tt = 0; tt < T; ++tt) {
        frag[r][tt].x += v[r][tt].x;
        frag[r][tt].y += v[r][tt].y;
        frag[r][tt].z += v[r][tt].z;
        frag[r][tt].w += v[r][tt].w;
      }
  }
  store_fragments<T>(p, rg, frag);
  if (lane == 0) pp.counters[rg] = 0;  // every contributor has counted: ready for the next call
}

template <int T, int W, int S>
__global__ void __launch_bounds__(W * 32) small_m_persistent_kernel(SmallMPersistentParams pp) {
  using K = SmallMPersistentKernel<T, W, S>;
  constexpr int R = K::R;
  extern __shared__ __align__(16) unsigned char smem[];
  const SmallMParams& p = pp.base;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int gw = blockIdx.x * W + warp;
  const long long x0 = pp.total * gw / pp.warps_total;
  const long long x1 = pp.total * (gw + 1) / pp.warps_total;
  const int n_chunks = static_cast<int>(x1 - x0);
  const int kc_count = p.kc_count;
  unsigned char* ring = smem + warp * S * K::kStageBytes;

  // Weight and scale sources of chunk x0: the group-chunk list is the storage order.
  const unsigned char* w_src = static_cast<const unsigned char*>(p.w_tiles) + x0 * (kTileGroup * 512) + lane * 16;
  const bool copies_scales = lane < 4 * R;
  const unsigned char* s_src =
      static_cast<const unsigned char*>(p.w_scales) + x0 * (kTileGroup * 64) + (copies_scales ? lane : 0) * 16;
  // Activation rows: lane (g, t) copies 16-byte units 2t, 2t+1 of token row g of each 8-token tile
  // (as small_m_kernel); the k chunk wraps to 0 at each new row group.
  const unsigned char* a_src[T];
  bool a_valid[T];
#pragma unroll
  for (int tt = 0; tt < T; ++tt) {
    const int m = tt * 8 + g;
    a_valid[tt] = m < p.m;
    a_src[tt] = reinterpret_cast<const unsigned char*>(static_cast<const __nv_bfloat16*>(p.a) +
                                                       static_cast<long long>(a_valid[tt] ? m : 0) * p.lda + 16 * t);
  }
  const int k_left0 = p.k - 16 * t;
  const unsigned ring_s = static_cast<unsigned>(__cvta_generic_to_shared(ring));
  constexpr unsigned kActOffset = K::kWeightBytes + K::kScaleBytes;
#pragma unroll
  for (int tt = 0; tt < T; ++tt)
    if (!a_valid[tt])
#pragma unroll
      for (int s = 0; s < S; ++s)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<uint4*>(ring + s * K::kStageBytes + kActOffset + (tt * 8 + g) * 128 + (((2 * t + h) ^ g) * 16)) =
              make_uint4(0, 0, 0, 0);

  // Chunk i's weights into the stage at shared offset st.
  auto issue_weights = [&](int i, unsigned st) {
    const unsigned char* w = w_src + static_cast<long long>(i) * (kTileGroup * 512);
#pragma unroll
    for (int r = 0; r < R; ++r) cp_async16(st + r * 512 + lane * 16, w + r * 512);
    if (copies_scales) cp_async16(st + K::kWeightBytes + lane * 16, s_src + static_cast<long long>(i) * (kTileGroup * 64));
  };
  auto issue_acts = [&](int kc, unsigned st) {
#pragma unroll
    for (int tt = 0; tt < T; ++tt)
      if (a_valid[tt])
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int u = 2 * t + h;
          cp_async16_zfill(st + kActOffset + (tt * 8 + g) * 128 + ((u ^ g) * 16), a_src[tt] + kc * 128 + h * 16,
                           k_left0 - kc * kChunkK - 8 * h > 0);
        }
  };

  float acc[R][T][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int tt = 0; tt < T; ++tt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][tt][i] = 0.0f;

  // Weights are constant: with PDL the first stages' weight copies go out before waiting for the
  // producer of `a` (and before any workspace access: the previous call may still be running).
#pragma unroll
  for (int s = 0; s < S - 1; ++s)
    if (s < n_chunks) issue_weights(s, ring_s + s * K::kStageBytes);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  int issue_kc = static_cast<int>(x0 % kc_count);
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < n_chunks) {
      issue_acts(issue_kc, ring_s + s * K::kStageBytes);
      issue_kc = issue_kc + 1 == kc_count ? 0 : issue_kc + 1;
    }
    cp_async_commit();
  }

  int read_kc = static_cast<int>(x0 % kc_count);
  int rg = static_cast<int>(x0 / kc_count);
  unsigned read_off = 0, issue_off = (S - 1) * K::kStageBytes;
  constexpr unsigned kRingBytes = S * K::kStageBytes;
  for (int i = 0; i < n_chunks; ++i) {
    cp_async_wait<S - 2>();
    __syncwarp();  // stage i visible to the whole warp; stage i - 1 read by every lane
    if (i + S - 1 < n_chunks) {
      issue_weights(i + S - 1, ring_s + issue_off);
      issue_acts(issue_kc, ring_s + issue_off);
      issue_kc = issue_kc + 1 == kc_count ? 0 : issue_kc + 1;
    }
    cp_async_commit();
    issue_off = issue_off + K::kStageBytes == kRingBytes ? 0 : issue_off + K::kStageBytes;

    const unsigned char* st = ring + read_off;
    read_off = read_off + K::kStageBytes == kRingBytes ? 0 : read_off + K::kStageBytes;
    mma_stage<R, T, K::kWeightBytes, kActOffset>(st, lane, g, t, acc);

    read_kc = read_kc + 1 == kc_count ? 0 : read_kc + 1;
    if (read_kc == 0 || i + 1 == n_chunks) {  // leaving row group rg
      persistent_flush<T>(pp, rg, gw, acc);
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int tt = 0; tt < T; ++tt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[r][tt][e] = 0.0f;
      ++rg;
    }
  }
  cp_async_wait<0>();
  asm volatile("griddepcontrol.launch_dependents;");
}

}  // namespace fastinfer::gemm::detail
