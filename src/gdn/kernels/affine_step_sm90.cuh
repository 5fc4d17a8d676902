#pragma once
// One step of a row-blocked affine chain X_q = X_{q-1} M_q + B_q with 128 x 128 fp32 maps: the
// shared inner product of the CP fix-up (cp_fixup_sm90.cuh) and the distributed affine chain
// (dist/affine_chain.cu). Both must give the same bits as before they shared it (GPU tests compare
// CP and dist results bitwise), so the fmaf order below is part of the contract.
#include <cuda_runtime.h>

namespace fastinfer::gdn::detail {

inline constexpr int kAffineStepD = 128;  // head dim of the maps

// next[j] += sum_k rows_k[r][k] * M[k][j0 + j] for j < 8, k ascending, one fmaf per term.
// M (row-major, 16-byte aligned, global) is staged half by half in m_half by all kThreads threads
// at once: one L2 round trip per half instead of one per few rows of k. The caller has stored its
// row in rows_k; the barrier before the first staging store makes it visible, and the caller's
// own barrier before its next store to rows_k ends this step's reads.
template <int kThreads, int kRows>
__device__ __forceinline__ void accumulate_row_times_map(const float (&rows_k)[kRows][kAffineStepD],
                                                         float (&m_half)[kAffineStepD / 2][kAffineStepD],
                                                         const float4* m, int r, int j0, float (&next)[8]) {
  constexpr int kD = kAffineStepD;
  constexpr int kQuadsPerThread = kD / 2 * kD / 4 / kThreads;
#pragma unroll 1
  for (int half = 0; half < 2; ++half) {
    float4 quads[kQuadsPerThread];
#pragma unroll
    for (int i = 0; i < kQuadsPerThread; ++i) quads[i] = __ldg(m + half * (kD / 2 * kD / 4) + threadIdx.x + i * kThreads);
    __syncthreads();  // rows_k is written; the previous half is no longer read
#pragma unroll
    for (int i = 0; i < kQuadsPerThread; ++i) reinterpret_cast<float4*>(&m_half[0][0])[threadIdx.x + i * kThreads] = quads[i];
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kD / 2; ++k) {
      const float xk = rows_k[r][half * (kD / 2) + k];
      const float4 m0 = *reinterpret_cast<const float4*>(&m_half[k][j0]);
      const float4 m1 = *reinterpret_cast<const float4*>(&m_half[k][j0 + 4]);
      next[0] = fmaf(xk, m0.x, next[0]);
      next[1] = fmaf(xk, m0.y, next[1]);
      next[2] = fmaf(xk, m0.z, next[2]);
      next[3] = fmaf(xk, m0.w, next[3]);
      next[4] = fmaf(xk, m1.x, next[4]);
      next[5] = fmaf(xk, m1.y, next[5]);
      next[6] = fmaf(xk, m1.z, next[6]);
      next[7] = fmaf(xk, m1.w, next[7]);
    }
  }
}

}  // namespace fastinfer::gdn::detail
