// `fastinfer check` cases for the NVFP4 quantizer and mm_bf16_fp4 (see self_check.h).
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "device_copy.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
#include "ref/gemm_ref.h"
#include "ref/nvfp4_ref.h"
#include "self_check.h"

namespace fastinfer::cli {
namespace {

using nvfp4::ScaleLayout;
using ref::HostTensor;

// A weight with the quantizer's corner cases: an all-zero block, a block mixing huge and tiny
// values, and exact ties between two e2m1 codes.
HostTensor corner_case_weight(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  HostTensor w(DType::kFloat32, {n, k});
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (std::int64_t i = 0; i < w.numel(); ++i) w.set(i, normal(rng));
  for (std::int64_t j = 0; j < 16; ++j) w.set(j, 0.0);                               // row 0, block 0
  for (std::int64_t j = 0; j < 16; ++j) w.set(k + j, j == 0 ? 3e4 : 1e-6 * (j + 1));  // row 1, block 0
  for (std::int64_t j = 0; j < 16; ++j) w.set(2 * k + j, j == 0 ? 6.0 : 0.25 * j);   // row 2: block max 6, ties
  return w;
}

struct Quantized {
  HostTensor packed, scales;
  Quantized(std::int64_t n, std::int64_t k, ScaleLayout layout)
      : packed(DType::kUInt8, {n, k / 2}), scales(DType::kUInt8, {nvfp4::scale_bytes(n, k, layout)}) {}
};

// GPU: quantizer bytes == CPU reference bytes, in both scale layouts.
CheckOutcome check_quantize_gpu() {
  const std::int64_t n = 96, k = 256;
  const HostTensor w = corner_case_weight(n, k, 3);
  const float g = nvfp4::global_scale_for(3e4f);
  int mismatches = 0;
  for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kSwizzled128x4}) {
    Quantized cpu(n, k, layout), gpu(n, k, layout);
    ref::nvfp4_quantize(w, g, cpu.packed, cpu.scales, layout);
    DeviceCopy dw(w), dp(gpu.packed), ds(gpu.scales);
    nvfp4::quantize(dw, g, dp, ds, layout);
    dp.download(gpu.packed);
    ds.download(gpu.scales);
    mismatches += std::memcmp(cpu.packed.data(), gpu.packed.data(), cpu.packed.nbytes()) != 0;
    mismatches += std::memcmp(cpu.scales.data(), gpu.scales.data(), cpu.scales.nbytes()) != 0;
  }
  return {mismatches == 0, mismatches == 0 ? "GPU bytes == CPU bytes (values and scales, linear and 128x4 swizzled)"
                                           : std::to_string(mismatches) + " of 4 byte buffers differ from the CPU reference"};
}

// CPU: both scale layouts dequantize to the same values, close to the original weight.
CheckOutcome check_quantize_cpu() {
  const std::int64_t n = 96, k = 256;
  HostTensor w = corner_case_weight(n, k, 3);
  w.set(k, 3.0);  // keep the huge value out so the relative error is meaningful
  const float g = nvfp4::global_scale_for(6.0f);
  HostTensor deq[2] = {HostTensor(DType::kFloat32, {n, k}), HostTensor(DType::kFloat32, {n, k})};
  int i = 0;
  for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kSwizzled128x4}) {
    Quantized q(n, k, layout);
    nvfp4::quantize(w, g, q.packed, q.scales, layout);
    nvfp4::dequantize(q.packed, q.scales, layout, g, deq[i++]);
  }
  const bool same = std::memcmp(deq[0].data(), deq[1].data(), deq[0].nbytes()) == 0;
  const Closeness c = compare(deq[0], w, INFINITY, 0);
  return {same && c.rel_l2 < 0.15, std::string(same ? "layouts agree" : "LAYOUTS DIFFER") + ", round trip rel l2 " +
                                       std::to_string(c.rel_l2).substr(0, 6) + " (4-bit values, bound 0.15)"};
}

// mm_bf16_fp4 on an [m, 1024] x [512, 1024]^T problem against an independent fp64 product:
// GPU: the kernel vs ref::mm_bf16_fp4. CPU: the public CPU path vs dequantize + fp64 matmul.
CheckOutcome check_gemm(std::int64_t m, bool on_gpu) {
  const std::int64_t n = 512, k = 1024;
  HostTensor w(DType::kFloat32, {n, k}), a(DType::kBFloat16, {m, k});
  std::mt19937_64 rng(m);
  w.fill_uniform(rng, -1, 1);
  a.fill_uniform(rng, -1, 1);
  const float g = nvfp4::global_scale_for(1.0f), alpha = 1.0f / g;
  Quantized lin(n, k, ScaleLayout::kLinear), swz(n, k, ScaleLayout::kSwizzled128x4);
  nvfp4::quantize(w, g, lin.packed, lin.scales, ScaleLayout::kLinear);
  nvfp4::quantize(w, g, swz.packed, swz.scales, ScaleLayout::kSwizzled128x4);
  HostTensor got(DType::kBFloat16, {m, n}), want(DType::kFloat32, {m, n});
  if (on_gpu) {
    DeviceCopy dp(swz.packed), ds(swz.scales), da(a), dout(got);
    auto weights = gemm::prepare_bf16_fp4_weights(dp, ds, ScaleLayout::kSwizzled128x4, alpha);
    gemm::mm_bf16_fp4(da, *weights, dout);
    dout.download(got);
    ref::mm_bf16_fp4(a, lin.packed, lin.scales, alpha, want);
  } else {
    auto weights = gemm::prepare_bf16_fp4_weights(swz.packed, swz.scales, ScaleLayout::kSwizzled128x4, alpha);
    gemm::mm_bf16_fp4(a, *weights, got);
    HostTensor deq(DType::kFloat32, {n, k});
    nvfp4::dequantize(lin.packed, lin.scales, ScaleLayout::kLinear, g, deq);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t e = 0; e < k; ++e) s += a.get(i * k + e) * deq.get(j * k + e);
        want.set(i * n + j, s);
      }
  }
  const Closeness c = compare(got, want, INFINITY, 0);
  return {c.rel_l2 < 1e-2, describe("output", c) + " (bound: rel l2 1e-2)"};
}

}  // namespace

std::vector<SelfCheck> gemm_self_checks(bool on_gpu) {
  std::vector<SelfCheck> checks;
  if (on_gpu) {
    checks.push_back({"nvfp4_quantize 96x256 with zero, huge/tiny and tie blocks", check_quantize_gpu});
  } else {
    checks.push_back({"nvfp4_quantize 96x256: linear and swizzled scales round trip", check_quantize_cpu});
  }
  for (std::int64_t m : on_gpu ? std::vector<std::int64_t>{1, 16, 200, 1000} : std::vector<std::int64_t>{1, 16}) {
    checks.push_back({"mm_bf16_fp4 M=" + std::to_string(m) + " N=512 K=1024, swizzled scales",
                      [=] { return check_gemm(m, on_gpu); }});
  }
  return checks;
}

}  // namespace fastinfer::cli
