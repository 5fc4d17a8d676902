// One instantiation per file (compile time): the persistent stream-K fused kernel, 256 tokens per
// tile, decode of the next stage interleaved with the k16 wgmmas; bf16 and fp16 output (a runtime flag).
#include "gemm/large_m/fused_persistent_sm90.cuh"

namespace fastinfer::gemm::detail {
template void run_fused_persistent_sm90<256, FusedIssue::kInterleaved>(const LargeMParams& p, void* workspace, int ctas,
                                                                Stream stream);
}  // namespace fastinfer::gemm::detail
