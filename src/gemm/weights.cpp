// prepare_bf16_fp4_weights: validate, copy the packed weight and linear scales, build the small-M
// tiles. One-time work: allocates and synchronizes the stream.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

#include "fastinfer/gemm.h"
#include "gemm/small_m_params.h"
#include "gemm/small_m_repack.h"
#include "gemm/weights_impl.h"
#include "nvfp4/nvfp4_codec.h"
#include "ref/nvfp4_ref.h"
#include "runtime/check.h"
#include "runtime/device_guard.h"

namespace fastinfer::gemm {

DeviceBytes::DeviceBytes(int device, std::size_t bytes) : device_(device), bytes_(bytes) {
  DeviceGuard guard(device);
  FASTINFER_CUDA_CHECK(cudaMalloc(&ptr_, bytes > 0 ? bytes : 1));
}

DeviceBytes::~DeviceBytes() {
  if (ptr_ == nullptr) return;
  int previous = 0;
  if (cudaGetDevice(&previous) == cudaSuccess && previous != device_) cudaSetDevice(device_);
  cudaFree(ptr_);
  if (previous != device_) cudaSetDevice(previous);
}

Bf16Fp4Weights::Bf16Fp4Weights(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bf16Fp4Weights::~Bf16Fp4Weights() = default;
std::int64_t Bf16Fp4Weights::n() const { return impl_->n; }
std::int64_t Bf16Fp4Weights::k() const { return impl_->k; }
float Bf16Fp4Weights::alpha() const { return impl_->alpha; }
Device Bf16Fp4Weights::device() const { return impl_->device; }

std::shared_ptr<const Bf16Fp4Weights> prepare_bf16_fp4_weights(const TensorView& b, const TensorView& b_descale,
                                                               nvfp4::ScaleLayout layout, float alpha, Stream stream) {
  constexpr const char* op = "gemm::prepare_bf16_fp4_weights";
  check::dtype(op, "b", b, {DType::kUInt8});
  check::ndim(op, "b", b, 2);
  check::contiguous(op, "b", b);
  check::not_null(op, "b", b);
  const std::int64_t n = b.size(0), k = b.size(1) * 2;
  check::require(n >= 1, op, "b.shape[0] (N)", "be >= 1", std::to_string(n));
  check::require(k >= 16 && k % 16 == 0, op, "b.shape[1] (K/2)", "be a multiple of 8 and >= 8 (K % 16 == 0)",
                 std::to_string(b.size(1)) + " (shape " + b.shape_string() + ")");
  check::require(n <= (1 << 30) && k <= (1 << 30), op, "b", "have N and K below 2^30", b.shape_string());
  check::dtype(op, "b_descale", b_descale, {DType::kUInt8, DType::kFloat8E4M3});
  check::contiguous(op, "b_descale", b_descale);
  const std::int64_t need = nvfp4::scale_bytes(n, k, layout);
  check::require(b_descale.numel() >= need, op, "b_descale",
                 "hold at least " + std::to_string(need) + " bytes for N=" + std::to_string(n) + ", K=" +
                     std::to_string(k) + (layout == nvfp4::ScaleLayout::kLinear ? " (linear)" : " (128x4 swizzled)"),
                 std::to_string(b_descale.numel()) + " (shape " + b_descale.shape_string() + ")");
  check::not_null(op, "b_descale", b_descale);
  check::require(std::isfinite(alpha), op, "alpha", "be finite", std::to_string(alpha));
  const ExecContext ctx = resolve_context(op, {{"b", &b}, {"b_descale", &b_descale}}, stream);

  auto impl = std::make_unique<Bf16Fp4Weights::Impl>();
  impl->device = ctx.device;
  impl->n = n;
  impl->k = k;
  impl->alpha = alpha;
  const std::int64_t blocks = k / nvfp4::codec::kBlock;
  if (ctx.device.is_cpu()) {
    impl->host_packed.assign(static_cast<const std::uint8_t*>(b.data), static_cast<const std::uint8_t*>(b.data) + n * k / 2);
    impl->host_scales.resize(static_cast<std::size_t>(n * blocks));
    const auto* src = static_cast<const std::uint8_t*>(b_descale.data);
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t kb = 0; kb < blocks; ++kb)
        impl->host_scales[r * blocks + kb] = src[ref::nvfp4_scale_index(r, kb, k, layout)];
    return std::make_shared<Bf16Fp4Weights>(std::move(impl));
  }

  check::aligned(op, "b", b, 16);
  const int dev = ctx.device.index;
  DeviceGuard guard(dev);
  auto s = static_cast<cudaStream_t>(ctx.stream);
  impl->kc_count = static_cast<int>((k + detail::kChunkK - 1) / detail::kChunkK);
  const std::int64_t tile_count = detail::small_m_row_tiles(n) * impl->kc_count;
  impl->packed = DeviceBytes(dev, static_cast<std::size_t>(n * k / 2));
  impl->scales_linear = DeviceBytes(dev, static_cast<std::size_t>(n * blocks));
  impl->tiles = DeviceBytes(dev, static_cast<std::size_t>(tile_count * 512));
  impl->tile_scales = DeviceBytes(dev, static_cast<std::size_t>(tile_count * 64));
  FASTINFER_CUDA_CHECK(cudaMemcpyAsync(impl->packed.get(), b.data, impl->packed.bytes(), cudaMemcpyDeviceToDevice, s));
  detail::launch_scales_to_linear(static_cast<const std::uint8_t*>(b_descale.data), layout,
                                  static_cast<std::uint8_t*>(impl->scales_linear.get()), n, k, s);
  detail::launch_repack_small_m(static_cast<const std::uint8_t*>(impl->packed.get()),
                                static_cast<const std::uint8_t*>(impl->scales_linear.get()), n, k, impl->tiles.get(),
                                impl->tile_scales.get(), s);
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));
  return std::make_shared<Bf16Fp4Weights>(std::move(impl));
}

}  // namespace fastinfer::gemm
