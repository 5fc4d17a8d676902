// CP stage 2 with fp16 operands on wgmma (CpStageParams::wgmma_maps), both input types.
#include "gdn/kernels/cp_chunk_maps_sm90.cuh"

namespace fastinfer::gdn::detail {
template void launch_cp_chunk_maps_wgmma<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
template void launch_cp_chunk_maps_wgmma<CpInputType::kFloat16>(const CpStageParams&, cudaStream_t);
}  // namespace fastinfer::gdn::detail
