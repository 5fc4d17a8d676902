// Demo step for nvfp4::quantize + gemm::mm_bf16_fp4. On the GPU: a Llama-70B-like up-projection
// (N = 28672, K = 4096) at M = 16 decode tokens: quantize a bf16 weight on the device, prepare it,
// run the GEMM, check 2048 output columns against the fp64 CPU reference, print the GPU time.
// Without a GPU: the CPU path on N = 256, K = 512, M = 4, checked against dequantize-then-matmul.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "demos.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
#include "ref/gemm_ref.h"
#include "ref/host_tensor.h"
#include "ref/numeric.h"

namespace fastinfer::cli {
namespace {

using ref::HostTensor;

// Cheap deterministic fill (a 117M-element weight is too slow for std::uniform_real_distribution).
void fill_bf16(HostTensor& t, std::uint64_t seed, float scale) {
  auto* p = static_cast<std::uint16_t*>(t.data());
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const float u = static_cast<float>((x >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;  // [-1, 1)
    p[i] = ref::float_to_bf16(u * scale);
  }
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    e += (got[i] - want[i]) * (got[i] - want[i]);
    r += want[i] * want[i];
  }
  return std::sqrt(e / (r > 0 ? r : 1));
}

bool fail_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return false;
  std::printf("mm_bf16_fp4: %s failed: %s\n", what, cudaGetErrorString(e));
  return true;
}

bool run_gpu() {
  const int n = 28672, k = 4096, m = 16, n_check = 2048;
  HostTensor w(DType::kBFloat16, {n, k}), a(DType::kBFloat16, {m, k});
  fill_bf16(w, 1, 0.05f);
  fill_bf16(a, 2, 1.0f);
  const float g = nvfp4::global_scale_for(0.05f);
  void *dw, *dp, *ds, *da, *dout;
  if (fail_cuda(cudaMalloc(&dw, w.nbytes()), "cudaMalloc") || fail_cuda(cudaMalloc(&dp, w.nbytes() / 4), "cudaMalloc") ||
      fail_cuda(cudaMalloc(&ds, static_cast<std::size_t>(n) * k / 16), "cudaMalloc") ||
      fail_cuda(cudaMalloc(&da, a.nbytes()), "cudaMalloc") ||
      fail_cuda(cudaMalloc(&dout, static_cast<std::size_t>(m) * n * 2), "cudaMalloc"))
    return false;
  cudaMemcpy(dw, w.data(), w.nbytes(), cudaMemcpyHostToDevice);
  cudaMemcpy(da, a.data(), a.nbytes(), cudaMemcpyHostToDevice);
  const auto cuda = Device::cuda(0);
  nvfp4::quantize(TensorView::contiguous(dw, DType::kBFloat16, {n, k}, cuda), g,
                  TensorView::contiguous(dp, DType::kUInt8, {n, k / 2}, cuda),
                  TensorView::contiguous(ds, DType::kUInt8, {n, k / 16}, cuda));
  auto weights = gemm::prepare_bf16_fp4_weights(TensorView::contiguous(dp, DType::kUInt8, {n, k / 2}, cuda),
                                                TensorView::contiguous(ds, DType::kUInt8, {n, k / 16}, cuda),
                                                nvfp4::ScaleLayout::kLinear, 1.0f / g);
  const TensorView a_view = TensorView::contiguous(da, DType::kBFloat16, {m, k}, cuda);
  const TensorView out_view = TensorView::contiguous(dout, DType::kBFloat16, {m, n}, cuda);
  gemm::mm_bf16_fp4(a_view, *weights, out_view);  // warm-up (runner creation)
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const int reps = 50;
  cudaEventRecord(start);
  for (int i = 0; i < reps; ++i) gemm::mm_bf16_fp4(a_view, *weights, out_view);
  cudaEventRecord(stop);
  if (fail_cuda(cudaEventSynchronize(stop), "the GEMM")) return false;
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  ms /= reps;

  // Reference on the first n_check rows of W.
  HostTensor packed(DType::kUInt8, {n_check, k / 2}), scales(DType::kUInt8, {n_check, k / 16}), ref_out(DType::kFloat32, {m, n_check});
  std::vector<std::uint16_t> out(static_cast<std::size_t>(m) * n);
  cudaMemcpy(packed.data(), dp, packed.nbytes(), cudaMemcpyDeviceToHost);
  cudaMemcpy(scales.data(), ds, scales.nbytes(), cudaMemcpyDeviceToHost);
  cudaMemcpy(out.data(), dout, out.size() * 2, cudaMemcpyDeviceToHost);
  ref::mm_bf16_fp4(a, packed, scales, 1.0f / g, ref_out);
  std::vector<double> got, want;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n_check; ++j) {
      got.push_back(ref::bf16_to_float(out[static_cast<std::size_t>(i) * n + j]));
      want.push_back(ref_out.get(static_cast<std::int64_t>(i) * n_check + j));
    }
  const double err = rel_l2(got, want);
  const double bytes = 2.0 * m * k + n * (k / 2.0 + k / 16.0) + 2.0 * m * n;
  std::printf("mm_bf16_fp4: N=%d K=%d M=%d on the GPU: %.4f ms (%.2f TB/s), rel L2 vs fp64 reference %.2e (%s)\n", n, k,
              m, ms, bytes / ms * 1e-9, err, err < 1e-2 ? "ok" : "FAILED");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  for (void* p : {dw, dp, ds, da, dout}) cudaFree(p);
  return err < 1e-2;
}

bool run_cpu() {
  const int n = 256, k = 512, m = 4;
  HostTensor w(DType::kBFloat16, {n, k}), a(DType::kBFloat16, {m, k});
  fill_bf16(w, 3, 1.0f);
  fill_bf16(a, 4, 1.0f);
  const float g = nvfp4::global_scale_for(1.0f);
  HostTensor packed(DType::kUInt8, {n, k / 2}), scales(DType::kUInt8, {n, k / 16}), deq(DType::kFloat32, {n, k});
  HostTensor out(DType::kBFloat16, {m, n});
  nvfp4::quantize(w, g, packed, scales);
  nvfp4::dequantize(packed, scales, nvfp4::ScaleLayout::kLinear, g, deq);
  auto weights = gemm::prepare_bf16_fp4_weights(packed, scales, nvfp4::ScaleLayout::kLinear, 1.0f / g);
  gemm::mm_bf16_fp4(a, *weights, out);
  std::vector<double> got, want;
  double wq = 0, wr = 0;
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    wq += (deq.get(i) - w.get(i)) * (deq.get(i) - w.get(i));
    wr += w.get(i) * w.get(i);
  }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int kk = 0; kk < k; ++kk) s += a.get(i * k + kk) * deq.get(j * k + kk);
      got.push_back(out.get(i * n + j));
      want.push_back(s);
    }
  const double err = rel_l2(got, want);
  std::printf("mm_bf16_fp4: no GPU, CPU path N=%d K=%d M=%d: quantization rel error %.3f, GEMM rel L2 vs "
              "dequantize-then-matmul %.2e (%s)\n",
              n, k, m, std::sqrt(wq / wr), err, err < 1e-2 ? "ok" : "FAILED");
  return err < 1e-2;
}

}  // namespace

bool demo_mm_bf16_fp4(bool on_gpu) { return on_gpu ? run_gpu() : run_cpu(); }

}  // namespace fastinfer::cli
