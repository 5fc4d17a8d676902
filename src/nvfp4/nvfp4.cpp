// Public entry of fastinfer::nvfp4: validate -> resolve the context -> CPU reference or kernel.
#include "fastinfer/nvfp4.h"

#include <cmath>
#include <string>

#include "nvfp4/nvfp4_launch.h"
#include "ref/nvfp4_ref.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"

namespace fastinfer::nvfp4 {

std::int64_t scale_bytes(std::int64_t n, std::int64_t k, ScaleLayout layout) {
  const std::int64_t blocks = k / 16;
  if (layout == ScaleLayout::kLinear) return n * blocks;
  return (n + 127) / 128 * 128 * ((blocks + 3) / 4 * 4);
}

float global_scale_for(float amax) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
  return 448.0f * 6.0f / amax;
}

namespace {

void check_scales(const char* op, const TensorView& scales, std::int64_t n, std::int64_t k, ScaleLayout layout) {
  check::dtype(op, "scales", scales, {DType::kUInt8, DType::kFloat8E4M3});
  check::contiguous(op, "scales", scales);
  const std::int64_t need = scale_bytes(n, k, layout);
  check::require(scales.numel() >= need, op, "scales",
                 "hold at least " + std::to_string(need) + " bytes for N=" + std::to_string(n) + ", K=" +
                     std::to_string(k) + (layout == ScaleLayout::kLinear ? " (linear layout)" : " (128x4 swizzled layout)"),
                 std::to_string(scales.numel()) + " (shape " + scales.shape_string() + ")");
  check::not_null(op, "scales", scales);
}

void check_packed(const char* op, const TensorView& packed, std::int64_t n, std::int64_t k) {
  check::dtype(op, "packed", packed, {DType::kUInt8});
  check::ndim(op, "packed", packed, 2);
  check::dim(op, "packed", packed, 0, n, "N");
  check::dim(op, "packed", packed, 1, k / 2, "K/2");
  check::contiguous(op, "packed", packed);
  check::not_null(op, "packed", packed);
}

// The unquantized [N, K] side of both directions: float32/16 or bfloat16, K % 16 == 0.
void check_float_matrix(const char* op, const char* arg, const TensorView& t) {
  check::dtype(op, arg, t, {DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  check::ndim(op, arg, t, 2);
  check::dim_multiple_of(op, arg, t, 1, 16, "K");
  check::last_dim_contiguous(op, arg, t);
  check::not_null(op, arg, t);
}

void check_global_scale(const char* op, float g) {
  check::require(std::isfinite(g) && g > 0.0f, op, "global_scale", "be finite and > 0", std::to_string(g));
}

}  // namespace

void quantize(const TensorView& w, float global_scale, const TensorView& packed, const TensorView& scales,
              ScaleLayout layout, Stream stream) {
  constexpr const char* op = "nvfp4::quantize";
  check_float_matrix(op, "w", w);
  const std::int64_t n = w.size(0), k = w.size(1);
  check_packed(op, packed, n, k);
  check_scales(op, scales, n, k, layout);
  check_global_scale(op, global_scale);
  const ExecContext ctx = resolve_context(op, {{"w", &w}, {"packed", &packed}, {"scales", &scales}}, stream);
  if (ctx.device.is_cpu()) {
    ref::nvfp4_quantize(w, global_scale, packed, scales, layout);
    return;
  }
  check::aligned(op, "packed", packed, 8);
  detail::QuantizeParams p;
  p.w = w.data;
  p.w_dtype = w.dtype;
  p.ldw = w.stride(0);
  p.packed = static_cast<std::uint8_t*>(packed.data);
  p.scales = static_cast<std::uint8_t*>(scales.data);
  p.layout = layout;
  p.n = n;
  p.k = k;
  p.global_scale = global_scale;
  DeviceGuard guard(ctx.device.index);
  detail::launch_quantize(p, ctx.stream);
}

void dequantize(const TensorView& packed, const TensorView& scales, ScaleLayout layout, float global_scale,
                const TensorView& out, Stream stream) {
  constexpr const char* op = "nvfp4::dequantize";
  check_float_matrix(op, "out", out);
  const std::int64_t n = out.size(0), k = out.size(1);
  check_packed(op, packed, n, k);
  check_scales(op, scales, n, k, layout);
  check_global_scale(op, global_scale);
  const ExecContext ctx = resolve_context(op, {{"packed", &packed}, {"scales", &scales}, {"out", &out}}, stream);
  if (ctx.device.is_cpu()) {
    ref::nvfp4_dequantize(packed, scales, layout, global_scale, out);
    return;
  }
  check::aligned(op, "packed", packed, 8);
  detail::DequantizeParams p;
  p.packed = static_cast<const std::uint8_t*>(packed.data);
  p.scales = static_cast<const std::uint8_t*>(scales.data);
  p.layout = layout;
  p.out = out.data;
  p.out_dtype = out.dtype;
  p.ldo = out.stride(0);
  p.n = n;
  p.k = k;
  p.global_scale = global_scale;
  DeviceGuard guard(ctx.device.index);
  detail::launch_dequantize(p, ctx.stream);
}

}  // namespace fastinfer::nvfp4
