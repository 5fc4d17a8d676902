#pragma once
// T = (I + A)^-1 for the strictly lower-triangular 64x64 fp32 tile A (row pitch 65) by the
// producer warpgroup's 128 threads, in phases separated by producer barriers:
//   diagonal:          the four 16x16 diagonal blocks by right-looking forward substitution
//                      (thread = one column; after x_j is final every later row is updated at
//                      once, so the dependency chain is 16 steps, not 120 FMAs);
//   partial<bi>, apply<bi> for block rows bi = 1, 2, 3 (block forward substitution):
//     W[bj]          = sum_{kk = 16 bj}^{16 bi - 1} A[bi rows][kk] X[kk][bj cols]     (partial)
//     X[bi][bj]      = -X[bi][bi] W[bj]                                               (apply)
//   with every loop bound known at compile time and one accumulator per bj, so the loads of a
//   thread are independent and pipeline (the first version ran ~20k cycles per chunk here,
//   latency-bound, measured on the H200).
// Phases are __host__ __device__ so a CPU test can replay them thread by thread
// (tests/gdn/prefill_fast_inverse_test.cu). The upper blocks of `inverse` are never written; the
// upper triangles of the diagonal blocks are written as zeros.
namespace fastinfer::gdn::kernels::fast {

struct FastInverse {
  static constexpr int kSize = 64, kBlock = 16, kPitch = kSize + 1, kThreads = 128;
  static constexpr int kScratchPitch = 3 * kBlock;  // W of one block row: 16 x 48 fp32

  __host__ __device__ static void diagonal(const float* a, float* inverse, int ptid) {
    if (ptid >= kSize) return;
    const int b = ptid / kBlock, c = ptid % kBlock;
    const float* a_bb = a + kBlock * b * (kPitch + 1);
    float* inv_bb = inverse + kBlock * b * (kPitch + 1);
    float s[kBlock];
#pragma unroll
    for (int i = 0; i < kBlock; ++i) s[i] = i == c ? 1.0f : 0.0f;
#pragma unroll
    for (int j = 0; j < kBlock; ++j) {
      const float x = s[j];
      inv_bb[j * kPitch + c] = x;
#pragma unroll
      for (int i = j + 1; i < kBlock; ++i) s[i] -= a_bb[i * kPitch + j] * x;
    }
  }

  // Thread ptid handles the (row, column) pairs ptid and ptid + 128 of the 16 x 16 block shape.
  template <int kBi>
  __host__ __device__ static void partial(const float* a, const float* inverse, float* scratch, int ptid) {
#pragma unroll
    for (int h = 0; h < kBlock * kBlock / kThreads; ++h) {
      const int e = ptid + kThreads * h, r = e / kBlock, c = e % kBlock;
      const float* a_row = a + (kBlock * kBi + r) * kPitch;
      float w[kBi];
#pragma unroll
      for (int bj = 0; bj < kBi; ++bj) w[bj] = 0.0f;
#pragma unroll 8
      for (int kk = 0; kk < kBlock * kBi; ++kk) {
        const float av = a_row[kk];
#pragma unroll
        for (int bj = 0; bj < kBi; ++bj)
          if (kk >= kBlock * bj) w[bj] += av * inverse[kk * kPitch + kBlock * bj + c];
      }
#pragma unroll
      for (int bj = 0; bj < kBi; ++bj) scratch[r * kScratchPitch + kBlock * bj + c] = w[bj];
    }
  }

  template <int kBi>
  __host__ __device__ static void apply(float* inverse, const float* scratch, int ptid) {
#pragma unroll
    for (int h = 0; h < kBlock * kBlock / kThreads; ++h) {
      const int e = ptid + kThreads * h, r = e / kBlock, c = e % kBlock;
      const float* d_row = inverse + (kBlock * kBi + r) * kPitch + kBlock * kBi;
      float x[kBi];
#pragma unroll
      for (int bj = 0; bj < kBi; ++bj) x[bj] = 0.0f;
#pragma unroll
      for (int m = 0; m < kBlock; ++m) {
        if (m <= r) {
          const float dm = d_row[m];
#pragma unroll
          for (int bj = 0; bj < kBi; ++bj) x[bj] -= dm * scratch[m * kScratchPitch + kBlock * bj + c];
        }
      }
#pragma unroll
      for (int bj = 0; bj < kBi; ++bj) inverse[(kBlock * kBi + r) * kPitch + kBlock * bj + c] = x[bj];
    }
  }
};

}  // namespace fastinfer::gdn::kernels::fast
