// Repack kernels for the small-M layout: one thread per 32-bit word of the tiles and one per
// 8-byte tile-scale group. Reads the linear packed weight and linear scales.
#include <cuda_runtime.h>

#include "gemm/kernels/small_m_decode.cuh"
#include "gemm/small_m_params.h"
#include "gemm/small_m_repack.h"
#include "nvfp4/nvfp4_codec.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gemm::detail {
namespace {

// A block whose scale is zero contributes zero whatever its codes: the decode cannot express a zero
// scale, so its codes are zeroed here instead.
__device__ std::uint32_t code_at(const std::uint8_t* packed, const std::uint8_t* scales_linear, std::int64_t n,
                                 std::int64_t k, std::int64_t row, std::int64_t col) {
  if (row >= n || col >= k) return 0;
  if ((scales_linear[row * (k / nvfp4::codec::kBlock) + col / nvfp4::codec::kBlock] & 0x7f) == 0) return 0;
  const std::uint8_t byte = packed[row * (k / 2) + col / 2];
  return (col % 2 == 0) ? (byte & 0xf) : (byte >> 4);
}

// Word (tile, lane, j): rows g, g+8 of the tile, k = kc*64 + 16t + 4j .. +3 (lane quad t owns the
// tile's k16 block t, so one pair of scales serves all four of its words).
__global__ void repack_words(const std::uint8_t* packed, const std::uint8_t* scales_linear, std::int64_t n, std::int64_t k, std::int64_t words,
                             int kc_count, std::uint32_t* tiles) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= words) return;
  const int j = idx % 4, lane = (idx / 4) % 32;
  const std::int64_t tile = idx / 128;  // storage index (small_m_tile_index)
  const std::int64_t nt = tile / (kTileGroup * kc_count) * kTileGroup + tile % kTileGroup;
  const std::int64_t kc = tile / kTileGroup % kc_count;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t row = nt * kTileRows + g, col = kc * kChunkK + 16 * t + 4 * j;
  // Slots: (row g: k0, k0+1), (row g+8: k0, k0+1), (row g: k0+2, k0+3), (row g+8: k0+2, k0+3).
  const std::int64_t rows[8] = {row, row, row + 8, row + 8, row, row, row + 8, row + 8};
  const std::int64_t cols[8] = {col, col + 1, col, col + 1, col + 2, col + 3, col + 2, col + 3};
  std::uint32_t word = 0;
  for (int s = 0; s < 8; ++s) word |= place_code(code_at(packed, scales_linear, n, k, rows[s], cols[s]), s);
  tiles[idx] = word;
}

// Scales of (tile, lane): {s(g, kc*4 + t), s(g+8, kc*4 + t)}, re-encoded.
__global__ void repack_scales(const std::uint8_t* scales_linear, std::int64_t n, std::int64_t k, std::int64_t lanes,
                              int kc_count, std::uint8_t* tile_scales) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= lanes) return;
  const int lane = idx % 32, g = lane / 4, t = lane % 4;
  const std::int64_t tile = idx / 32;  // storage index (small_m_tile_index)
  const std::int64_t nt = tile / (kTileGroup * kc_count) * kTileGroup + tile % kTileGroup;
  const std::int64_t kc = tile / kTileGroup % kc_count;
  const std::int64_t blocks = k / nvfp4::codec::kBlock, kb = kc * 4 + t;
  for (int h = 0; h < 2; ++h) {
    const std::int64_t row = nt * kTileRows + g + 8 * h;
    const std::uint8_t sf = (row < n && kb < blocks) ? scales_linear[row * blocks + kb] : 0;
    tile_scales[idx * 2 + h] = encode_scale(sf);
  }
}

__global__ void scales_to_linear(const std::uint8_t* scales, nvfp4::ScaleLayout layout, std::uint8_t* out,
                                 std::int64_t n, std::int64_t blocks) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * blocks) return;
  const std::int64_t row = idx / blocks, kb = idx % blocks;
  out[idx] = layout == nvfp4::ScaleLayout::kLinear
                 ? scales[idx]
                 : scales[nvfp4::codec::swizzled_offset(row, kb, (blocks + 3) / 4)];
}

unsigned blocks_for(std::int64_t count) { return static_cast<unsigned>((count + 255) / 256); }

}  // namespace

std::int64_t small_m_row_tiles(std::int64_t n) { return (n + 63) / 64 * 4; }

void launch_scales_to_linear(const std::uint8_t* scales, nvfp4::ScaleLayout layout, std::uint8_t* scales_linear,
                             std::int64_t n, std::int64_t k, void* stream) {
  const std::int64_t blocks = k / nvfp4::codec::kBlock;
  if (n * blocks == 0) return;
  scales_to_linear<<<blocks_for(n * blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(scales, layout, scales_linear,
                                                                                          n, blocks);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

void launch_repack_small_m(const std::uint8_t* packed, const std::uint8_t* scales_linear, std::int64_t n,
                           std::int64_t k, void* tiles, void* tile_scales, void* stream) {
  const int kc_count = static_cast<int>((k + kChunkK - 1) / kChunkK);
  const std::int64_t tile_count = small_m_row_tiles(n) * kc_count;
  auto s = static_cast<cudaStream_t>(stream);
  repack_words<<<blocks_for(tile_count * 128), 256, 0, s>>>(packed, scales_linear, n, k, tile_count * 128, kc_count,
                                                           static_cast<std::uint32_t*>(tiles));
  FASTINFER_CUDA_CHECK(cudaGetLastError());
  repack_scales<<<blocks_for(tile_count * 32), 256, 0, s>>>(scales_linear, n, k, tile_count * 32, kc_count,
                                                          static_cast<std::uint8_t*>(tile_scales));
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gemm::detail
