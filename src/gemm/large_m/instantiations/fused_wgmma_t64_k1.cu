// One fused_wgmma instantiation per file (compile time): 64 tokens per CTA, split-K 1;
// bf16 and fp16 output (a runtime flag of the epilogue).
#include "gemm/large_m/fused_wgmma_sm90.cuh"

namespace fastinfer::gemm::detail {
template void run_fused_wgmma_sm90<64, 1, FusedIssue::kTogether>(const LargeMParams& p, void* image, Stream stream);
}  // namespace fastinfer::gemm::detail
