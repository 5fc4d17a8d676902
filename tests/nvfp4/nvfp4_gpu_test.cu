// The quantize / dequantize kernels produce the CPU reference's bytes bit for bit: random
// matrices with all-zero blocks, huge and tiny values, exact ties, both scale layouts, all input
// dtypes; the swizzled padding is written with zeros (outputs are poisoned first).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "fastinfer/error.h"
#include "fastinfer/nvfp4.h"
#include "ref/host_tensor.h"
#include "ref/nvfp4_ref.h"
#include "support/gpu_test.h"

namespace fastinfer {
namespace {

using ref::HostTensor;
using nvfp4::ScaleLayout;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

struct DeviceCopy {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  DeviceCopy(const void* host, std::size_t n, int poison = -1) : bytes(n) {
    EXPECT_EQ(cudaMalloc(&ptr, n > 0 ? n : 1), cudaSuccess);
    if (host) EXPECT_EQ(cudaMemcpy(ptr, host, n, cudaMemcpyHostToDevice), cudaSuccess);
    else EXPECT_EQ(cudaMemset(ptr, poison, n), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(ptr); }
  std::vector<std::uint8_t> read() const {
    std::vector<std::uint8_t> h(bytes);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

TensorView gpu_view(const DeviceCopy& d, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(d.ptr, t, shape, Device::cuda(0));
}

// Random values with the hard cases planted: zero blocks, huge and tiny blocks, exact ties.
HostTensor make_weights(DType dtype, int n, int k, std::uint64_t seed) {
  HostTensor w(dtype, {n, k});
  std::mt19937_64 rng(seed);
  w.fill_uniform(rng, -2.0, 2.0);
  std::uniform_int_distribution<int> pick(0, 9);
  const double huge = dtype == DType::kFloat16 ? 60000.0 : 1e30;
  const double tiny = dtype == DType::kFloat16 ? 1e-7 : 1e-30;
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < k / 16; ++b) {
      const int kind = pick(rng);
      for (int i = 0; i < 16; ++i) {
        const std::int64_t idx = static_cast<std::int64_t>(r) * k + b * 16 + i;
        if (kind == 0) w.set(idx, 0.0);
        if (kind == 1) w.set(idx, huge * (i % 3 - 1));
        if (kind == 2) w.set(idx, tiny * (i - 8));
        // sf == 1 exactly when g * amax / 6 == 1: with amax = 6 / g the values below are ties.
        if (kind == 3) w.set(idx, (i == 0 ? 6.0 : (0.25 + 0.5 * (i % 12))) * (i % 2 ? -1 : 1));
      }
    }
  return w;
}

void check_quantize(DType dtype, int n, int k, ScaleLayout layout, float g, std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "dtype " << static_cast<int>(dtype) << " n=" << n << " k=" << k
                                    << " layout " << static_cast<int>(layout) << " g=" << g);
  HostTensor w = make_weights(dtype, n, k, seed);
  const std::int64_t sbytes = nvfp4::scale_bytes(n, k, layout);
  HostTensor packed_ref(DType::kUInt8, {n, k / 2}), scales_ref(DType::kUInt8, {sbytes});
  ref::nvfp4_quantize(w, g, packed_ref, scales_ref, layout);

  DeviceCopy dw(w.data(), w.nbytes()), dp(nullptr, packed_ref.nbytes(), 0xAB), ds(nullptr, scales_ref.nbytes(), 0xCD);
  nvfp4::quantize(gpu_view(dw, dtype, {n, k}), g, gpu_view(dp, DType::kUInt8, {n, k / 2}),
                  gpu_view(ds, DType::kUInt8, {sbytes}), layout);
  CUDA_OK(cudaDeviceSynchronize());
  const auto p = dp.read(), s = ds.read();
  ASSERT_EQ(std::memcmp(p.data(), packed_ref.data(), p.size()), 0) << "packed bytes differ";
  for (std::size_t i = 0; i < s.size(); ++i)
    ASSERT_EQ(s[i], static_cast<const std::uint8_t*>(scales_ref.data())[i]) << "scale byte " << i;

  // Dequantize on the GPU into a poisoned bf16 and fp32 output; bit-equal to the reference.
  for (DType out_t : {DType::kFloat32, DType::kBFloat16}) {
    HostTensor out_ref(out_t, {n, k});
    ref::nvfp4_dequantize(packed_ref, scales_ref, layout, g, out_ref);
    DeviceCopy dout(nullptr, out_ref.nbytes(), 0xFF);  // NaN pattern
    nvfp4::dequantize(gpu_view(dp, DType::kUInt8, {n, k / 2}), gpu_view(ds, DType::kUInt8, {sbytes}), layout, g,
                      gpu_view(dout, out_t, {n, k}));
    CUDA_OK(cudaDeviceSynchronize());
    const auto o = dout.read();
    ASSERT_EQ(std::memcmp(o.data(), out_ref.data(), o.size()), 0) << "dequantized bytes differ";
  }
}

class Nvfp4Gpu : public testing::GpuTest {};

TEST_F(Nvfp4Gpu, QuantizeBytesEqualReference) {
  std::uint64_t seed = 100;
  for (DType dtype : {DType::kBFloat16, DType::kFloat16, DType::kFloat32})
    for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kSwizzled128x4})
      for (auto [n, k] : {std::pair<int, int>{1, 16}, {63, 48}, {130, 320}, {257, 1024}})
        for (float g : {1.0f, 0.37f, 2688.0f / 2.0f}) check_quantize(dtype, n, k, layout, g, seed++);
}

TEST_F(Nvfp4Gpu, RejectsMisalignedPacked) {
  DeviceCopy dw(nullptr, 16 * 32 * 2, 0), dp(nullptr, 16 * 16 + 8, 0), ds(nullptr, 32, 0);
  TensorView packed = TensorView::contiguous(static_cast<char*>(dp.ptr) + 1, DType::kUInt8, {16, 16}, Device::cuda(0));
  EXPECT_THROW(nvfp4::quantize(gpu_view(dw, DType::kBFloat16, {16, 32}), 1.0f, packed,
                               gpu_view(ds, DType::kUInt8, {32})),
               Error);
}

}  // namespace
}  // namespace fastinfer
