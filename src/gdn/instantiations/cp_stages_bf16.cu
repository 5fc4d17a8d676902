// CP stages 1-2 for bfloat16 inputs.
#include "gdn/kernels/cp_block_inverse_sm90.cuh"
#include "gdn/kernels/cp_chunk_maps_sm90.cuh"

namespace fastinfer::gdn::detail {
template void launch_cp_block_inverse<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
template void launch_cp_chunk_maps<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
}  // namespace fastinfer::gdn::detail
