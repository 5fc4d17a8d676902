// mm_bf16_fp4 on the CPU: the reference against an independent dequantize-then-matmul, the public
// CPU path, the small-M repack codecs, and argument validation (nothing written on failure).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "fastinfer/error.h"
#include "fastinfer/gemm.h"
#include "gemm/kernels/small_m_decode.cuh"
#include "nvfp4/nvfp4_codec.h"
#include "ref/gemm_ref.h"
#include "ref/host_tensor.h"
#include "support/expect_error.h"
#include "ref/nvfp4_ref.h"

namespace fastinfer {
namespace {

using ref::HostTensor;
using nvfp4::ScaleLayout;

using testing::expect_error;

struct Quantized {
  HostTensor packed, scales;
  float g;
};

Quantized quantize_random(int n, int k, std::uint64_t seed, ScaleLayout layout = ScaleLayout::kLinear) {
  HostTensor w(DType::kFloat32, {n, k});
  std::mt19937_64 rng(seed);
  w.fill_uniform(rng, -1.0, 1.0);
  Quantized q{HostTensor(DType::kUInt8, {n, k / 2}), HostTensor(DType::kUInt8, {nvfp4::scale_bytes(n, k, layout)}),
              nvfp4::global_scale_for(1.0f)};
  ref::nvfp4_quantize(w, q.g, q.packed, q.scales, layout);
  return q;
}

TEST(GemmRef, MatchesDequantizeThenMatmul) {
  const int m = 5, n = 24, k = 48;
  Quantized q = quantize_random(n, k, 1);
  HostTensor a(DType::kBFloat16, {m, k});
  std::mt19937_64 rng(2);
  a.fill_uniform(rng, -2.0, 2.0);
  HostTensor w(DType::kFloat32, {n, k});
  ref::nvfp4_dequantize(q.packed, q.scales, ScaleLayout::kLinear, 1.0f, w);  // e2m1 * sf (g = 1)
  HostTensor out(DType::kFloat32, {m, n});
  ref::mm_bf16_fp4(a, q.packed, q.scales, 0.5f, out);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int kk = 0; kk < k; ++kk) s += a.get(i * k + kk) * w.get(j * k + kk);
      EXPECT_NEAR(out.get(i * n + j), 0.5 * s, 1e-5 * (1 + std::fabs(s))) << i << "," << j;
    }
}

TEST(GemmApi, CpuPathEqualsReferenceForBothScaleLayouts) {
  const int m = 3, n = 130, k = 64;
  HostTensor a(DType::kBFloat16, {m, k});
  std::mt19937_64 rng(3);
  a.fill_uniform(rng, -1.0, 1.0);
  Quantized lin = quantize_random(n, k, 4, ScaleLayout::kLinear);
  Quantized swz = quantize_random(n, k, 4, ScaleLayout::kSwizzled128x4);
  HostTensor expected(DType::kBFloat16, {m, n});
  ref::mm_bf16_fp4(a, lin.packed, lin.scales, 1.0f / lin.g, expected);
  for (const Quantized* q : {&lin, &swz}) {
    auto w = gemm::prepare_bf16_fp4_weights(q->packed, q->scales,
                                            q == &lin ? ScaleLayout::kLinear : ScaleLayout::kSwizzled128x4, 1.0f / q->g);
    EXPECT_EQ(w->n(), n);
    EXPECT_EQ(w->k(), k);
    HostTensor out(DType::kBFloat16, {m, n});
    gemm::mm_bf16_fp4(a, *w, out);
    for (std::int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.get(i), expected.get(i)) << i;
  }
}

TEST(GemmApi, RejectsBadArgumentsAndWritesNothing) {
  const int m = 4, n = 32, k = 64;
  Quantized q = quantize_random(n, k, 5);
  auto w = gemm::prepare_bf16_fp4_weights(q.packed, q.scales, ScaleLayout::kLinear, 1.0f);
  HostTensor a(DType::kBFloat16, {m, k}), out(DType::kBFloat16, {m, n});
  a.fill(1.0);
  out.fill(-7.0);
  HostTensor a_f32(DType::kFloat32, {m, k}), a_k(DType::kBFloat16, {m, k + 16}), out_f32(DType::kFloat32, {m, n});
  HostTensor out_n(DType::kBFloat16, {m, n + 1}), out_m(DType::kBFloat16, {m + 1, n});
  expect_error([&] { gemm::mm_bf16_fp4(a_f32, *w, out); }, "gemm::mm_bf16_fp4: a must be bfloat16, got float32");
  expect_error([&] { gemm::mm_bf16_fp4(a_k, *w, out); }, "a.shape[1] (K, from the weights) must be 64, got 80");
  expect_error([&] { gemm::mm_bf16_fp4(a, *w, out_f32); }, "out must be bfloat16 or float16");
  expect_error([&] { gemm::mm_bf16_fp4(a, *w, out_n); }, "out.shape[1] (N, from the weights) must be 32");
  expect_error([&] { gemm::mm_bf16_fp4(a, *w, out_m); }, "out.shape[0] (M, from a) must be 4");
  TensorView fake = TensorView::contiguous(reinterpret_cast<void*>(0x1000), DType::kBFloat16, {m, n}, Device::cuda(0));
  expect_error([&] { gemm::mm_bf16_fp4(a, *w, fake); }, "out must be on the same device as a");
  TensorView fake_a = TensorView::contiguous(reinterpret_cast<void*>(0x1000), DType::kBFloat16, {m, k}, Device::cuda(0));
  expect_error([&] { gemm::mm_bf16_fp4(fake_a, *w, fake); }, "weights must be on the device of a (cuda:0), got cpu");
  for (std::int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.get(i), -7.0);

  HostTensor odd_packed(DType::kUInt8, {n, 12}), small_scales(DType::kUInt8, {n * k / 16 - 1});
  expect_error([&] { gemm::prepare_bf16_fp4_weights(odd_packed, q.scales, ScaleLayout::kLinear, 1.0f); },
               "b.shape[1] (K/2) must be a multiple of 8");
  expect_error([&] { gemm::prepare_bf16_fp4_weights(q.packed, small_scales, ScaleLayout::kLinear, 1.0f); },
               "b_descale must hold at least 128 bytes");
  expect_error([&] { gemm::prepare_bf16_fp4_weights(q.packed, q.scales, ScaleLayout::kSwizzled128x4, 1.0f); },
               "512 bytes");
  HostTensor f32_scales(DType::kFloat32, {n * k / 16});
  expect_error([&] { gemm::prepare_bf16_fp4_weights(q.packed, f32_scales, ScaleLayout::kLinear, 1.0f); },
               "b_descale must be uint8 or float8_e4m3");
}

// Small-M layout codecs (host side of the device decode): every scale byte re-encodes to the
// same value, and every code lands in disjoint bit slots that cover the word.
TEST(SmallMLayout, ScaleReencodingIsExact) {
  for (int b = 0; b < 0x7f; ++b) {
    const float sf = nvfp4::codec::e4m3_to_float(static_cast<std::uint8_t>(b));
    const int code = gemm::detail::encode_scale(static_cast<std::uint8_t>(b));
    if (sf == 0.0f) continue;
    const float decoded = std::ldexp(1.0f + (code & 7) / 8.0f, (code >> 3) - 9);
    EXPECT_EQ(decoded, sf) << "byte " << b;
    // The device turns the byte into bf16 bits 0x7000 | (code << 4) = sf * 2^106.
    const std::uint32_t bits = (0x7000u | (static_cast<std::uint32_t>(code) << 4)) << 16;
    float bf;
    std::memcpy(&bf, &bits, 4);
    EXPECT_EQ(bf, std::ldexp(sf, 106)) << "byte " << b;
  }
}

TEST(SmallMLayout, CodeSlotsTileTheWord) {
  std::uint32_t seen = 0;
  for (int slot = 0; slot < 8; ++slot) {
    const std::uint32_t bits = gemm::detail::place_code(0xf, slot);
    EXPECT_EQ(__builtin_popcount(bits), 4) << slot;
    EXPECT_EQ(seen & bits, 0u) << slot;
    seen |= bits;
  }
  EXPECT_EQ(seen, 0xffffffffu);
}

}  // namespace
}  // namespace fastinfer
