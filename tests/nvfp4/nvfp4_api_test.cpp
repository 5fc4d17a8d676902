// fastinfer::nvfp4 public API on CPU tensors: the CPU path equals the reference, and bad
// arguments are rejected with a message naming the op and the argument, before anything is written.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>

#include "fastinfer/error.h"
#include "fastinfer/nvfp4.h"
#include "ref/host_tensor.h"
#include "support/expect_error.h"
#include "ref/nvfp4_ref.h"

namespace fastinfer {
namespace {

using ref::HostTensor;
using nvfp4::ScaleLayout;

using testing::expect_error;

TEST(Nvfp4Api, CpuPathMatchesReferenceBothLayouts) {
  const int n = 130, k = 96;
  HostTensor w(DType::kFloat16, {n, k});
  std::mt19937_64 rng(7);
  w.fill_uniform(rng, -10.0, 10.0);
  for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kSwizzled128x4}) {
    HostTensor p1(DType::kUInt8, {n, k / 2}), p2(DType::kUInt8, {n, k / 2});
    HostTensor s1(DType::kFloat8E4M3, {nvfp4::scale_bytes(n, k, layout)}), s2(DType::kUInt8, {nvfp4::scale_bytes(n, k, layout)});
    nvfp4::quantize(w, 26.0f, p1, s1, layout);
    ref::nvfp4_quantize(w, 26.0f, p2, s2, layout);
    for (std::int64_t i = 0; i < p1.numel(); ++i) ASSERT_EQ(p1.get(i), p2.get(i));
    for (std::int64_t i = 0; i < s1.numel(); ++i)
      ASSERT_EQ(static_cast<const std::uint8_t*>(s1.data())[i], static_cast<const std::uint8_t*>(s2.data())[i]);
    HostTensor back(DType::kFloat32, {n, k}), back_ref(DType::kFloat32, {n, k});
    nvfp4::dequantize(p1, s1, layout, 26.0f, back);
    ref::nvfp4_dequantize(p2, s2, layout, 26.0f, back_ref);
    for (std::int64_t i = 0; i < back.numel(); ++i) ASSERT_EQ(back.get(i), back_ref.get(i));
  }
}

TEST(Nvfp4Api, RejectsBadArgumentsAndWritesNothing) {
  const int n = 8, k = 32;
  HostTensor w(DType::kBFloat16, {n, k}), packed(DType::kUInt8, {n, k / 2}), scales(DType::kUInt8, {n, k / 16});
  w.fill(1.0);
  std::memset(packed.data(), 77, packed.nbytes());  // (HostTensor::fill stores floats only)
  HostTensor w_f64(DType::kFloat64, {n, k}), w_odd(DType::kBFloat16, {n, 40});
  HostTensor small_scales(DType::kUInt8, {n * k / 16 - 1}), bad_packed(DType::kUInt8, {n, k / 2 + 1});
  expect_error([&] { nvfp4::quantize(w_f64, 1.0f, packed, scales); }, "nvfp4::quantize: w must be float32, float16 or bfloat16");
  expect_error([&] { nvfp4::quantize(w_odd, 1.0f, packed, scales); }, "multiple of 16");
  expect_error([&] { nvfp4::quantize(w, 1.0f, bad_packed, scales); }, "packed.shape[1] (K/2)");
  expect_error([&] { nvfp4::quantize(w, 1.0f, packed, small_scales); }, "scales must hold at least 16 bytes");
  expect_error([&] { nvfp4::quantize(w, 1.0f, packed, scales, ScaleLayout::kSwizzled128x4); }, "512 bytes");
  expect_error([&] { nvfp4::quantize(w, 0.0f, packed, scales); }, "global_scale must be finite and > 0");
  TensorView fake_gpu = TensorView::contiguous(reinterpret_cast<void*>(0x1000), DType::kUInt8, {n, k / 2}, Device::cuda(0));
  expect_error([&] { nvfp4::quantize(w, 1.0f, fake_gpu, scales); }, "packed must be on the same device as w");
  for (std::int64_t i = 0; i < packed.numel(); ++i) ASSERT_EQ(packed.get(i), 77);
  HostTensor out_i32(DType::kInt32, {n, k});
  expect_error([&] { nvfp4::dequantize(packed, scales, ScaleLayout::kLinear, 1.0f, out_i32); }, "nvfp4::dequantize: out must be");
}

TEST(Nvfp4Api, ScaleBytesAndGlobalScale) {
  EXPECT_EQ(nvfp4::scale_bytes(1, 16, ScaleLayout::kLinear), 1);
  EXPECT_EQ(nvfp4::scale_bytes(1, 16, ScaleLayout::kSwizzled128x4), 512);
  EXPECT_EQ(nvfp4::scale_bytes(129, 80, ScaleLayout::kSwizzled128x4), 256 * 8);
  EXPECT_EQ(nvfp4::global_scale_for(2688.0f), 1.0f);
  EXPECT_EQ(nvfp4::global_scale_for(0.0f), 1.0f);
}

}  // namespace
}  // namespace fastinfer
