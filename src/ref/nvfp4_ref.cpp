#include "ref/nvfp4_ref.h"

#include <cmath>
#include <cstring>

#include "nvfp4/nvfp4_codec.h"
#include "ref/numeric.h"

namespace fastinfer::ref {

namespace codec = nvfp4::codec;

std::int64_t nvfp4_scale_index(std::int64_t n, std::int64_t kb, std::int64_t k, nvfp4::ScaleLayout layout) {
  const std::int64_t blocks = k / codec::kBlock;
  if (layout == nvfp4::ScaleLayout::kLinear) return n * blocks + kb;
  return codec::swizzled_offset(n, kb, (blocks + 3) / 4);
}

void nvfp4_quantize(const TensorView& w, float global_scale, const TensorView& packed, const TensorView& scales,
                    nvfp4::ScaleLayout layout) {
  const std::int64_t n_rows = w.size(0), k = w.size(1), blocks = k / codec::kBlock;
  auto* out = static_cast<std::uint8_t*>(packed.data);
  auto* sf_out = static_cast<std::uint8_t*>(scales.data);
  // Swizzled padding (and any slack) must read as zero scales. (An empty weight may come with a
  // null, empty scale buffer: memset on null is undefined even for zero bytes.)
  if (const auto bytes = static_cast<std::size_t>(nvfp4::scale_bytes(n_rows, k, layout)); bytes > 0)
    std::memset(sf_out, 0, bytes);
  for (std::int64_t n = 0; n < n_rows; ++n) {
    for (std::int64_t kb = 0; kb < blocks; ++kb) {
      float x[codec::kBlock];
      float amax = 0.0f;
      for (int i = 0; i < codec::kBlock; ++i) {
        x[i] = static_cast<float>(load(w, offset_of(w, n, kb * codec::kBlock + i)));
        amax = std::fmax(amax, std::fabs(x[i]));
      }
      const std::uint8_t sf = codec::e4m3_from_float_satfinite(codec::block_scale_float(global_scale, amax));
      const float factor = codec::element_factor(codec::e4m3_to_float(sf), global_scale);
      sf_out[nvfp4_scale_index(n, kb, k, layout)] = sf;
      for (int i = 0; i < codec::kBlock; i += 2) {
        const std::uint8_t lo = codec::e2m1_from_float(x[i] * factor);
        const std::uint8_t hi = codec::e2m1_from_float(x[i + 1] * factor);
        out[n * (k / 2) + (kb * codec::kBlock + i) / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
    }
  }
}

void nvfp4_dequantize(const TensorView& packed, const TensorView& scales, nvfp4::ScaleLayout layout,
                      float global_scale, const TensorView& out) {
  const std::int64_t n_rows = out.size(0), k = out.size(1);
  const auto* q = static_cast<const std::uint8_t*>(packed.data);
  const auto* sf = static_cast<const std::uint8_t*>(scales.data);
  for (std::int64_t n = 0; n < n_rows; ++n) {
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const std::uint8_t byte = q[n * (k / 2) + kk / 2];
      const std::uint8_t code = (kk % 2 == 0) ? (byte & 0xf) : (byte >> 4);
      const float s = codec::e4m3_to_float(sf[nvfp4_scale_index(n, kk / codec::kBlock, k, layout)]);
      store(out, offset_of(out, n, kk), codec::e2m1_to_float(code) * s / global_scale);
    }
  }
}

}  // namespace fastinfer::ref
