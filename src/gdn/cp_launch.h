#pragma once
// Launchers of the three CP stage kernels (definitions in instantiations/cp_*.cu). Each launches
// one grid on `stream` and checks the launch.
#include <cuda_runtime.h>

#include "gdn/cp_params.h"

namespace fastinfer::gdn::detail {

// Stage 1: block inverses. Grid (blocks_per_seq, Hsab, N).
template <CpInputType kInput>
void launch_cp_block_inverse(const CpStageParams& params, cudaStream_t stream);
// Stage 2: chunk maps (M, B). Grid (chunks_per_seq, Hsab, N).
template <CpInputType kInput>
void launch_cp_chunk_maps(const CpStageParams& params, cudaStream_t stream);
// Stage 2 with fp16 operands (CpStageParams::fp16_operands; instantiations/cp_maps_fp16_operands.cu).
template <CpInputType kInput>
void launch_cp_chunk_maps_fp16_operands(const CpStageParams& params, cudaStream_t stream);
// Stage 2 with fp16 operands on wgmma (CpStageParams::wgmma_maps; instantiations/cp_maps_wgmma.cu).
template <CpInputType kInput>
void launch_cp_chunk_maps_wgmma(const CpStageParams& params, cudaStream_t stream);
// Stage 3: fix-up scan (input-type independent). Grid (16 row groups, Hsab, N).
void launch_cp_fixup(const CpStageParams& params, cudaStream_t stream);

extern template void launch_cp_block_inverse<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
extern template void launch_cp_block_inverse<CpInputType::kFloat16>(const CpStageParams&, cudaStream_t);
extern template void launch_cp_chunk_maps<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
extern template void launch_cp_chunk_maps<CpInputType::kFloat16>(const CpStageParams&, cudaStream_t);
extern template void launch_cp_chunk_maps_fp16_operands<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
extern template void launch_cp_chunk_maps_fp16_operands<CpInputType::kFloat16>(const CpStageParams&, cudaStream_t);
extern template void launch_cp_chunk_maps_wgmma<CpInputType::kBFloat16>(const CpStageParams&, cudaStream_t);
extern template void launch_cp_chunk_maps_wgmma<CpInputType::kFloat16>(const CpStageParams&, cudaStream_t);

}  // namespace fastinfer::gdn::detail
