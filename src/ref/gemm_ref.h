#pragma once
// CPU reference of mm_bf16_fp4: dequantize the weight to fp32 (e2m1 * e4m3 scale, exact) and
// accumulate in fp64.
#include "fastinfer/tensor.h"

namespace fastinfer::ref {

// out[m, n] = alpha * sum_k a[m, k] * e2m1(q[n, k]) * sf[n, k/16]; packed [N, K/2] uint8
// contiguous, scales_linear [N, K/16] bytes contiguous; a and out any float dtype (strided rows).
void mm_bf16_fp4(const TensorView& a, const TensorView& packed, const TensorView& scales_linear, float alpha,
                 const TensorView& out);

}  // namespace fastinfer::ref
