// CP stage 2 with fp16 operands (CpStageParams::fp16_operands), both input types.
#include "gdn/kernels/cp_chunk_maps_sm90.cuh"

namespace fastinfer::gdn::detail {
template void launch_cp_chunk_maps_fp16_operands<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
template void launch_cp_chunk_maps_fp16_operands<CpInputType::kFloat16>(const CpStageParams&, cudaStream_t);
}  // namespace fastinfer::gdn::detail
