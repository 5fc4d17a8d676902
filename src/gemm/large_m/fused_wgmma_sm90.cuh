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
#include "gemm/large_m/fused_mainloop_sm90.cuh"

namespace fastinfer::gemm::detail {
namespace fused {

template <int Tokens, int SplitK, FusedIssue Issue>
__global__ void __launch_bounds__(kThreads, 1) fused_wgmma_kernel(const Params p) {
  // Cluster barriers every thread of the cluster takes at the end (producer warps included).
  constexpr int kEndSyncs = SplitK > 1 ? 2 : 0;
  using P = Plan<Tokens>;
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
  // The activation image (and `out`) may belong to the previous kernel under PDL.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // This CTA's k64 chunks [kc_begin, kc_begin + n_chunks) (its rank's K slice under split-K),
  // computed after the register split in each role (values live across setmaxnreg spill).
  auto k_slice = [&](int& kc_begin, int& n_chunks) {
    const std::uint32_t rank = SplitK > 1 ? cluster_rank() : 0;
    kc_begin = SplitK > 1 ? static_cast<int>(static_cast<long long>(kc_count) * rank / SplitK) : 0;
    n_chunks = (SplitK > 1 ? static_cast<int>(static_cast<long long>(kc_count) * (rank + 1) / SplitK) : kc_count) - kc_begin;
  };

  if (warp < 4) {  // producer warpgroup: warp 0 issues, the others wait for the end
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
    if (warp == 0) {
      int kc_begin, n_chunks;
      k_slice(kc_begin, n_chunks);
      for (int i = 0; i < n_chunks; ++i) produce_stage<Tokens>(p, smem, full, empty, lane, i, token_block, n0, kc_begin + i);
      asm volatile("cp.async.wait_all;" ::: "memory");
    }
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
  int kc_begin, n_chunks;
  k_slice(kc_begin, n_chunks);
  Mainloop<Tokens, Issue> mainloop{smem, full, empty, row_g, t, sw, wg};
  mainloop.run(acc, 0, n_chunks, n_chunks);
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
    for (int q = consumer * SplitK + static_cast<int>(cluster_rank()); q < kPieces; q += 256 * SplitK) {
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
// The k order inside a chunk is permuted: piece c holds wgmma k 8c .. 8c+7, i.e. of step j = c / 2,
// half h = c % 2, for t = 0..3 the storage k 16t + 4j + h and 16t + 4j + h + 2, matching the
// weight lanes' decode (decode_fragment).
// Threads u < flag_count also zero the persistent form's flags (none for the other forms).
template <int Tokens>
__global__ void __launch_bounds__(256) fused_image_kernel(const __nv_bfloat16* __restrict__ a, int m, int lda,
                                                          int kc_count, uint4* __restrict__ image, long long units,
                                                          int* __restrict__ flags, int flag_count) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long u = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (u < flag_count) flags[u] = 0;
  if (u >= units) return;
  const int c = static_cast<int>(u % 8), r = static_cast<int>((u / 8) % Tokens);
  const long long tile = u / (8 * Tokens);  // block * kc_count + chunk
  const int chunk = static_cast<int>(tile % kc_count);
  const long long token = tile / kc_count * Tokens + r;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (token < m) {
    // Piece c = step j = c / 2, half h = c % 2: per t the pair (storage k 16t + 4j + h, + 2).
    const __nv_bfloat16* row = a + token * lda + chunk * kFusedChunkK + 4 * (c >> 1);
    const std::uint32_t pick = (c & 1) ? 0x7632u : 0x5410u;
    std::uint32_t w[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const uint2 q = *reinterpret_cast<const uint2*>(row + 16 * t);  // storage k 16t + 4j + 0..3
      w[t] = prmt(q.x, q.y, pick);
    }
    v = make_uint4(w[0], w[1], w[2], w[3]);
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
namespace fused {

// The image pass (a[M, K] -> the swizzled activation image), zeroing `flag_count` flags.
template <int Tokens>
void launch_image_pass(const LargeMParams& p, void* image, int* flags, int flag_count, Stream stream) {
  const int kc_count = p.k / kFusedChunkK;
  const int token_blocks = (p.m + Tokens - 1) / Tokens;
  const long long units = static_cast<long long>(token_blocks) * Tokens * kc_count * 8;
  const long long threads = units > flag_count ? units : flag_count;
  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>((threads + 255) / 256));
  config.blockDim = dim3(256);
  config.stream = stream;
  config.attrs = &pdl;
  config.numAttrs = p.enable_pdl ? 1 : 0;
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, fused_image_kernel<Tokens>, static_cast<const __nv_bfloat16*>(p.a),
                                          p.m, p.lda, kc_count, static_cast<uint4*>(image), units, flags, flag_count));
}

}  // namespace fused

template <int Tokens, int SplitK, FusedIssue Issue>
void run_fused_wgmma_sm90(const LargeMParams& p, void* image, Stream stream) {
  using P = fused::Plan<Tokens>;
  static std::array<std::once_flag, 64> once;  // the shared-memory opt-in is per device
  if (p.device < 0 || p.device >= static_cast<int>(once.size()))
    throw Error(Error::Kind::kValue, "mm_bf16_fp4: device ordinal out of range for the fused large-M kernel");
  std::call_once(once[p.device], [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(fused::fused_wgmma_kernel<Tokens, SplitK, Issue>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, P::kSmemBytes));
  });
  const int token_blocks = (p.m + Tokens - 1) / Tokens;
  fused::launch_image_pass<Tokens>(p, image, nullptr, 0, stream);

  fused::Params kp{image, p.w_packed, p.w_scales, p.out, p.m, p.n, p.k, p.ldo,
                   p.alpha * p.w_dequant * fused::kDecodeCompensation,
                   p.out_dtype == DType::kFloat16};
  const int row_blocks = (p.n + kFusedRows - 1) / kFusedRows;
  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.stream = stream;
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
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, fused::fused_wgmma_kernel<Tokens, SplitK, Issue>, kp));
}

}  // namespace fastinfer::gemm::detail
