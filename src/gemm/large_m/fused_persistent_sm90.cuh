#pragma once
// Persistent stream-K form of the fused NVFP4 x bf16 wgmma kernel (fused_wgmma_sm90.cuh; tactics
// fused_wgmma_*_sk, docs/GEMM_LARGE_M.md). One CTA per SM. The work units are (tile, k64 chunk)
// pairs, tile-major with K inner (tile = row block * token blocks + token block); CTA c takes the
// contiguous units [c U / G, (c + 1) U / G), so every SM gets the same number of k64 stages
// whatever the tile count (no partial last wave). Its units form segments, one per tile touched:
//   - whole tile: alpha * acc is stored straight from the registers;
//   - a tile's first piece (k = 0 .. x, always the CTA's last segment): the owner. It adds the
//     fp32 partials of the tile's later pieces, in CTA order c + 1, c + 2, ... (deterministic), then
//     stores;
//   - a later piece (always the CTA's first segment): its fp32 partial goes to slot c of the
//     workspace, then flag c is set (release). Its writer started with it, so the owner's wait is
//     short and never circular (a CTA only waits for higher CTAs' first segments, which wait for
//     nothing). G <= SM count and one CTA per SM: every CTA is resident.
// The flags are zeroed by the image pass of the same call (the workspace is undefined on entry).
// The ring runs on across segments: the producer streams the CTA's whole unit range, the consumer
// epilogue of one segment overlaps the loads (and, interleaved issue, the decode) of the next.
#include "gemm/large_m/fused_wgmma_sm90.cuh"
#include "runtime/once_per_device.h"

namespace fastinfer::gemm::detail {
namespace fused {

struct PersistentParams {
  Params base;
  int* flags;         // [ctas], zero on entry (image pass)
  float4* partials;   // [ctas][Tokens / 8][256] per consumer thread, fp32 accumulators
  int token_blocks;   // ceil(M / Tokens)
  int ctas;           // G
};

// The segment of the unit range [u, end) that lies in u's tile.
struct Segment {
  int tile, k0, k1;
};
// Unit counts fit in int (fused_persistent_ctas rejects larger problems).
__device__ __forceinline__ Segment segment_at(int u, int end, int kc) {
  Segment sg;
  sg.tile = u / kc;
  sg.k0 = u % kc;
  sg.k1 = min(kc, sg.k0 + (end - u));
  return sg;
}
__device__ __forceinline__ int unit_begin(int units, int c, int ctas) {
  return static_cast<int>(static_cast<long long>(units) * c / ctas);
}

__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <int Tokens, FusedIssue Issue>
__global__ void __launch_bounds__(kThreads, 1) fused_persistent_kernel(const PersistentParams pp) {
  using P = Plan<Tokens>;
  constexpr int S = P::kStages;
  constexpr int kAcc = Tokens / 2;
  const Params& p = pp.base;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  auto* full = reinterpret_cast<std::uint64_t*>(smem + P::kRingBytes);
  std::uint64_t* empty = full + S;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbarrier_init(&full[s], 1 + 32);  // producer's expect_tx + 32 lanes' cp.async arrivals
      mbarrier_init(&empty[s], 256);    // one arrival per consumer thread
    }
    mbarrier_init_fence();
  }
  __syncthreads();
  // The activation image, the flags (image pass) and `out` may belong to earlier kernels under PDL.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // The CTA's unit range (computed after the register split: values live across setmaxnreg spill).
  auto unit_range = [&](int& units, int& begin, int& end) {
    units = pp.token_blocks * ((p.n + kFusedRows - 1) / kFusedRows) * (p.k / kFusedChunkK);
    begin = unit_begin(units, blockIdx.x, pp.ctas);
    end = unit_begin(units, blockIdx.x + 1, pp.ctas);
  };

  if (warp < 4) {  // producer warpgroup: warp 0 streams the CTA's units through the ring
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
    if (warp == 0) {
      const int kc = p.k / kFusedChunkK;
      int units, begin, end;
      unit_range(units, begin, end);
      // Walk the units in order, tracking (token block, row block, chunk) without divisions (the
      // producer runs with 56 registers).
      int chunk = begin % kc, tile = begin / kc;
      int token_block = tile % pp.token_blocks, n0 = tile / pp.token_blocks * kFusedRows;
      for (int i = 0; i < end - begin; ++i) {
        produce_stage<Tokens>(p, smem, full, empty, lane, i, token_block, n0, chunk);
        if (++chunk == kc) {
          chunk = 0;
          if (++token_block == pp.token_blocks) token_block = 0, n0 += kFusedRows;
        }
      }
      asm volatile("cp.async.wait_all;" ::: "memory");
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");
  const int wg = warp / 4 - 1, warp_in_wg = warp % 4;
  const int g = lane / 4, t = lane % 4;
  const int row_g = wg * 64 + warp_in_wg * 16 + g;  // the lane's rows: row_g and row_g + 8
  const int sw = (row_g >> 2) & 1;
  const int consumer = threadIdx.x - 128;
  const int kc = p.k / kFusedChunkK, cta = blockIdx.x;
  int units, begin, end;
  unit_range(units, begin, end);
  const int total = end - begin;
  Mainloop<Tokens, Issue> mainloop{smem, full, empty, row_g, t, sw, wg};
  float acc[kAcc];

  int i = 0;
  for (int u = begin; u < end;) {
    const Segment sg = segment_at(u, end, kc);
    const int n = sg.k1 - sg.k0;
#pragma unroll
    for (int e = 0; e < kAcc; ++e) acc[e] = 0.0f;
    mainloop.run(acc, i, i + n, total);
    i += n;
    u += n;
    if (u >= end) asm volatile("griddepcontrol.launch_dependents;");

    if (sg.k0 > 0) {  // a later piece of the tile: publish the fp32 partial (slot = this CTA)
      float4* slot = pp.partials + static_cast<long long>(cta) * (Tokens / 8) * 256 + consumer;
#pragma unroll
      for (int q = 0; q < Tokens / 8; ++q)
        __stcg(slot + q * 256, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
      named_barrier_sync(1, 256);  // every consumer's partial is written before the flag
      if (consumer == 0) {
        __threadfence();
        store_release(pp.flags + cta, 1);
      }
      continue;
    }
    if (sg.k1 < kc) {  // the tile's first piece: add the later pieces (CTAs cta + 1, ...) in order
      const int tile_end = (sg.tile + 1) * kc;
      if (consumer == 0)
        for (int c = cta + 1; c < pp.ctas && unit_begin(units, c, pp.ctas) < tile_end; ++c)
          while (load_acquire(pp.flags + c) == 0) {
          }
      named_barrier_sync(1, 256);
      for (int c = cta + 1; c < pp.ctas && unit_begin(units, c, pp.ctas) < tile_end; ++c) {
        const float4* slot = pp.partials + static_cast<long long>(c) * (Tokens / 8) * 256 + consumer;
#pragma unroll
        for (int q = 0; q < Tokens / 8; ++q) {
          const float4 v = __ldcg(slot + q * 256);
          acc[4 * q] += v.x, acc[4 * q + 1] += v.y, acc[4 * q + 2] += v.z, acc[4 * q + 3] += v.w;
        }
      }
    }
    // Store alpha * acc from the registers: (token 8c + 2t + h % 2, row row_g + 8 (h / 2)).
    const int m0 = sg.tile % pp.token_blocks * Tokens, n0 = sg.tile / pp.token_blocks * kFusedRows;
    auto* out = static_cast<std::uint16_t*>(p.out);
#pragma unroll
    for (int c = 0; c < Tokens / 8; ++c)
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int m = m0 + 8 * c + 2 * t + (h % 2), nn = n0 + row_g + 8 * (h / 2);
        if (m < p.m && nn < p.n)
          out[static_cast<long long>(m) * p.ldo + nn] = to_out_bits(acc[4 * c + h] * p.alpha, p.out_is_fp16);
      }
  }
}

}  // namespace fused
}  // namespace fastinfer::gemm::detail

namespace fastinfer::gemm::detail {

template <int Tokens, FusedIssue Issue>
void run_fused_persistent_sm90(const LargeMParams& p, void* workspace, int ctas, Stream stream) {
  using P = fused::Plan<Tokens>;
  static OncePerDevice once;  // the shared-memory opt-in is per device
  once(p.device, [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(fused::fused_persistent_kernel<Tokens, Issue>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, P::kSmemBytes));
  });
  const FusedPersistentLayout layout = fused_persistent_layout(p.m, p.k, Tokens, ctas, workspace);
  const int token_blocks = (p.m + Tokens - 1) / Tokens;
  fused::launch_image_pass<Tokens>(p, layout.image, layout.flags, ctas, stream);

  fused::PersistentParams kp{{layout.image, p.w_packed, p.w_scales, p.out, p.m, p.n, p.k, p.ldo,
                              p.alpha * p.w_dequant * fused::kDecodeCompensation,
                              p.out_dtype == DType::kFloat16},
                             layout.flags, static_cast<float4*>(layout.partials), token_blocks, ctas};
  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(ctas));
  config.blockDim = dim3(fused::kThreads);
  config.dynamicSmemBytes = P::kSmemBytes;
  config.stream = stream;
  config.attrs = &pdl;
  config.numAttrs = p.enable_pdl ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, fused::fused_persistent_kernel<Tokens, Issue>, kp));
}

}  // namespace fastinfer::gemm::detail
