#pragma once
// One-time repack of a packed NVFP4 weight into the small-M tile layout (small_m_params.h), and
// the swizzled -> linear scale conversion. Stream-ordered; inputs must stay alive until done.
#include <cstdint>

#include "fastinfer/nvfp4.h"

namespace fastinfer::gemm::detail {

// scales_linear[n * K/16 + kb] = scales[index(n, kb, layout)].
void launch_scales_to_linear(const std::uint8_t* scales, nvfp4::ScaleLayout layout, std::uint8_t* scales_linear,
                             std::int64_t n, std::int64_t k, void* stream);

// Row tiles cover round_up(N, 64) rows (every compiled R divides 4) and kc_count = ceil(K / 64).
std::int64_t small_m_row_tiles(std::int64_t n);
void launch_repack_small_m(const std::uint8_t* packed, const std::uint8_t* scales_linear, std::int64_t n,
                           std::int64_t k, void* tiles, void* tile_scales, void* stream);

}  // namespace fastinfer::gemm::detail
