#pragma once
// Definitions behind gdn/prefill_short_launch.h; included by the instantiation files only.
#include <cuda_runtime.h>

#include <algorithm>

#include "gdn/kernels/prefill_short_serial_sm90.cuh"
#include "gdn/kernels/prefill_short_sm90.cuh"
#include "gdn/prefill_short_launch.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn {

namespace prefill_short_detail {
template <InputType kType, int kCap>
void prepare(ShortOccupancy& occupancy) {
  using Config = kernels::short_seq::ShortConfig<kCap>;
  const auto kernel = kernels::short_seq::gdn_prefill_short_kernel<kType, kCap>;
  FASTINFER_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Config::smem_bytes(Config::kMaxHeads)));
  for (int heads = 1; heads <= Config::kMaxHeads; ++heads)
    FASTINFER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &occupancy.ctas_per_sm[kCap / 64][heads], kernel, 32 * Config::kRowBlocks * heads, Config::smem_bytes(heads)));
}

template <InputType kType, int kCap>
void launch(const PrefillParams& p, std::int64_t ctas, Stream stream) {
  using Config = kernels::short_seq::ShortConfig<kCap>;
  const int heads = std::min(p.num_state_heads / p.num_k_heads, Config::kMaxHeads);
  const std::int64_t items = static_cast<std::int64_t>(p.num_seqs) * p.num_k_heads;
  const std::int64_t grid = ctas > 0 && ctas < items ? ctas : items;
  kernels::short_seq::gdn_prefill_short_kernel<kType, kCap>
      <<<static_cast<unsigned>(grid), 32 * Config::kRowBlocks * heads, Config::smem_bytes(heads), stream>>>(p);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
  constexpr int kThreads = kernels::short_seq::kSerialThreads;
  const unsigned seq_blocks = static_cast<unsigned>((p.num_seqs + kThreads - 1) / kThreads);
  kernels::short_seq::gdn_prefill_short_serial_kernel<kType, kCap>
      <<<dim3(seq_blocks, static_cast<unsigned>(p.num_state_heads)), kThreads, 0, stream>>>(p);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}
}  // namespace prefill_short_detail

template <InputType kType>
ShortOccupancy prepare_prefill_short() {
  ShortOccupancy occupancy;
  prefill_short_detail::prepare<kType, 32>(occupancy);
  prefill_short_detail::prepare<kType, 64>(occupancy);
  return occupancy;
}

template <InputType kType>
void launch_prefill_short(const PrefillParams& params, int max_tokens, std::int64_t ctas, Stream stream) {
  if (params.num_seqs == 0 || params.total_tokens == 0) return;
  if (max_tokens <= 32) prefill_short_detail::launch<kType, 32>(params, ctas, stream);
  else prefill_short_detail::launch<kType, 64>(params, ctas, stream);
}

}  // namespace fastinfer::gdn
