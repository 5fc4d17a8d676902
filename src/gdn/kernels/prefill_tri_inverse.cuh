#pragma once
// (I + A)^-1 for a strictly lower-triangular 64x64 fp32 tile A in shared memory, computed by the
// whole CTA: the four 16x16 diagonal blocks by forward substitution (one column per thread,
// 16-long dependency chains), then the block rows below them by block forward substitution
//   X[bi][bj] = -X[bi][bi] * sum_{bk = bj}^{bi-1} A[bi][bk] X[bk][bj],
// three steps of two small fp32 products each. The upper blocks of `inverse` are left unwritten.
namespace fastinfer::gdn::kernels {

struct TriInverse {
  static constexpr int kSize = 64;
  static constexpr int kBlock = 16;
  static constexpr int kPitch = kSize + 1;                  // fp32 tiles: row pitch 65 words
  static constexpr int kScratchFloats = kBlock * 3 * kBlock;  // one block row of partial sums

  template <int kThreads>
  static __device__ void run(const float* a, float* inverse, float* scratch) {
    const int tid = threadIdx.x;
    if (tid < kSize) {
      const int b = tid / kBlock, c = tid % kBlock;
      const float* a_bb = a + kBlock * b * (kPitch + 1);
      float* inv_bb = inverse + kBlock * b * (kPitch + 1);
      float x[kBlock];
#pragma unroll
      for (int i = 0; i < kBlock; ++i) {
        float s = i == c ? 1.0f : 0.0f;  // x[j] == 0 for j < c, so the sum needs no guard
#pragma unroll
        for (int j = 0; j < i; ++j) s -= a_bb[i * kPitch + j] * x[j];
        x[i] = s;
        inv_bb[i * kPitch + c] = s;
      }
    }
    __syncthreads();
    for (int bi = 1; bi < kSize / kBlock; ++bi) {
      const int count = bi * kBlock * kBlock;
      for (int e = tid; e < count; e += kThreads) {
        const int bj = e / (kBlock * kBlock), r = e / kBlock % kBlock, c = e % kBlock;
        const float* a_row = a + (kBlock * bi + r) * kPitch;
        float s = 0.0f;
        for (int kk = kBlock * bj; kk < kBlock * bi; ++kk) s += a_row[kk] * inverse[kk * kPitch + kBlock * bj + c];
        scratch[r * 3 * kBlock + kBlock * bj + c] = s;
      }
      __syncthreads();
      for (int e = tid; e < count; e += kThreads) {
        const int bj = e / (kBlock * kBlock), r = e / kBlock % kBlock, c = e % kBlock;
        const float* d_row = inverse + (kBlock * bi + r) * kPitch + kBlock * bi;
        float s = 0.0f;
        for (int m = 0; m <= r; ++m) s -= d_row[m] * scratch[m * 3 * kBlock + kBlock * bj + c];
        inverse[(kBlock * bi + r) * kPitch + kBlock * bj + c] = s;
      }
      __syncthreads();
    }
  }
};

}  // namespace fastinfer::gdn::kernels
