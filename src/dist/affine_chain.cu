// The affine-chain kernel (affine_chain.h). Per CTA 8 rows of X = [M; S] for one (sequence,
// head); each step is an fp32 (8 x 128) x (128 x 128) product with M_j staged in shared memory
// half by half by all threads at once (the 16 or 32 row groups of a (sequence, head) share M_j
// through L2). The chains are short (a few CP chunks, or a few ranks): this kernel is a small part
// of the distributed prefill, measured in docs/GDN_DISTRIBUTED.md.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "dist/affine_chain.h"
#include "gdn/kernels/affine_step_sm90.cuh"
#include "runtime/cuda_check.h"

namespace fastinfer::dist::detail {
namespace {

constexpr int kD = 128;
constexpr int kRows = 8;                      // rows of X per CTA
constexpr int kThreads = 128;                 // 16 threads per row, 8 columns each
constexpr int kGroupsPerPart = kD / kRows;    // 16 CTAs per 128-row part

__device__ float load_state(const void* base, ChainStateType type, std::int64_t i) {
  switch (type) {
    case ChainStateType::kFloat32: return static_cast<const float*>(base)[i];
    case ChainStateType::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case ChainStateType::kFloat16: return __half2float(static_cast<const __half*>(base)[i]);
  }
  return 0.f;
}

__device__ int step_count(const AffineChainParams& p, int n) {
  if (p.fixed_steps >= 0) return p.fixed_steps;
  if (p.chunk_len <= 0) return 0;
  std::int64_t len;
  if (p.offsets_are_int64) {
    const auto* cu = static_cast<const std::int64_t*>(p.cu_seqlens);
    len = cu[n + 1] - cu[n];
  } else {
    const auto* cu = static_cast<const std::int32_t*>(p.cu_seqlens);
    len = cu[n + 1] - cu[n];
  }
  return len > 0 ? static_cast<int>((len + p.chunk_len - 1) / p.chunk_len) : 0;
}

__global__ void __launch_bounds__(kThreads) affine_chain_kernel(const AffineChainParams p) {
  __shared__ alignas(16) float rows_k[kRows][kD];
  __shared__ alignas(16) float m_half[kD / 2][kD];
  const int h = blockIdx.y, n = blockIdx.z;
  const bool m_part = p.with_m && blockIdx.x < kGroupsPerPart;
  const int group = blockIdx.x % kGroupsPerPart;
  const int r = threadIdx.x / 16, j0 = (threadIdx.x % 16) * 8, row = group * kRows + r;
  const std::int64_t head_offset = (static_cast<std::int64_t>(n) * p.num_heads + h) * kD * kD;

  float x[8];
  if (m_part) {
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = row == j0 + j ? 1.f : 0.f;
  } else {
    const int slot = p.init_indices ? p.init_indices[n] : n;
    const bool has_init = p.init != nullptr && slot >= 0;
    const std::int64_t base = slot * p.init_slot_stride + (static_cast<std::int64_t>(h) * kD + row) * kD + j0;
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = has_init ? load_state(p.init, p.init_type, base + j) : 0.f;
  }

  const int steps = step_count(p, n);
  for (int s = 0; s < steps; ++s) {
    const std::int64_t map = n * p.seq_stride + s * p.step_stride + static_cast<std::int64_t>(h) * kD * kD;
    __syncthreads();  // the previous step's reads of rows_k are done
#pragma unroll
    for (int j = 0; j < 8; ++j) rows_k[r][j0 + j] = x[j];
    float next[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (!m_part) {
      const float4* b = reinterpret_cast<const float4*>(p.step_b + map + row * kD + j0);
      const float4 b0 = b[0], b1 = b[1];
      next[0] = b0.x, next[1] = b0.y, next[2] = b0.z, next[3] = b0.w;
      next[4] = b1.x, next[5] = b1.y, next[6] = b1.z, next[7] = b1.w;
    }
    gdn::detail::accumulate_row_times_map<kThreads>(rows_k, m_half, reinterpret_cast<const float4*>(p.step_m + map), r, j0, next);
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = next[j];
  }

  float* out = (m_part ? p.out_m : p.out_state) + head_offset + row * kD + j0;
  reinterpret_cast<float4*>(out)[0] = make_float4(x[0], x[1], x[2], x[3]);
  reinterpret_cast<float4*>(out)[1] = make_float4(x[4], x[5], x[6], x[7]);
}

}  // namespace

void launch_affine_chain(const AffineChainParams& params, Stream stream) {
  if (params.num_seqs == 0 || params.num_heads == 0) return;
  const dim3 grid(kGroupsPerPart * (params.with_m ? 2 : 1), params.num_heads, params.num_seqs);
  affine_chain_kernel<<<grid, kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(params);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::dist::detail
