#pragma once
// CPU reference of the NVFP4 quantizer and dequantizer (the oracle of the GPU kernels and the CPU
// path of fastinfer::nvfp4). Element and scale codecs live in nvfp4/nvfp4_codec.h.
#include "fastinfer/nvfp4.h"
#include "fastinfer/tensor.h"

namespace fastinfer::ref {

// w [N, K] any float dtype (strided rows ok); packed [N, K/2] and scales contiguous bytes.
void nvfp4_quantize(const TensorView& w, float global_scale, const TensorView& packed, const TensorView& scales,
                    nvfp4::ScaleLayout layout);

// out [N, K] any float dtype = e2m1(q) * float(sf) / global_scale.
void nvfp4_dequantize(const TensorView& packed, const TensorView& scales, nvfp4::ScaleLayout layout,
                      float global_scale, const TensorView& out);

// Byte index of scale (n, kb) in a buffer of `layout` for an [N, K] weight.
std::int64_t nvfp4_scale_index(std::int64_t n, std::int64_t kb, std::int64_t k, nvfp4::ScaleLayout layout);

}  // namespace fastinfer::ref
