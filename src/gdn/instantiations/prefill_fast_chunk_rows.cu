// The chunk table kernel of precomputed inverses (prefill_fast_chunk_rows.cuh) and its launch.
#include "gdn/kernels/prefill_fast_chunk_rows.cuh"
#include "gdn/prefill_fast_launch.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn {
namespace {

__global__ void chunk_rows_kernel(const PrefillParams p, std::int64_t* offsets, std::int64_t rows) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x > rows) return;
  const auto offset = [&](int i) -> std::int64_t {
    return p.offsets_are_int64 ? static_cast<const std::int64_t*>(p.cu_seqlens)[i]
                               : static_cast<const std::int32_t*>(p.cu_seqlens)[i];
  };
  offsets[x] = kernels::fast::chunk_row_offset(offset, p.num_seqs, p.total_tokens, x);
}

}  // namespace

void launch_prefill_chunk_rows(const PrefillParams& params, std::int64_t* offsets, std::int64_t rows, Stream stream) {
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>((rows + 1 + kThreads - 1) / kThreads);
  chunk_rows_kernel<<<blocks, kThreads, 0, stream>>>(params, offsets, rows);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fastinfer::gdn
