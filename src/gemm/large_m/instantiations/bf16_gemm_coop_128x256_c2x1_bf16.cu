// One GEMM instantiation per file (compile time): tile kCoop128x256x64Cluster2x1, bf16 output.
#include "gemm/large_m/bf16_gemm_sm90.cuh"

namespace fastinfer::gemm::detail {
template const Bf16GemmKernel& bf16_gemm_sm90<Bf16GemmTile::kCoop128x256x64Cluster2x1, false>();
}  // namespace fastinfer::gemm::detail
