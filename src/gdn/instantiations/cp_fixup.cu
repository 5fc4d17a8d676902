// CP stage 3 (independent of the input dtype).
#include "gdn/kernels/cp_fixup_sm90.cuh"

namespace fastinfer::gdn::detail {
void launch_cp_fixup(const CpStageParams& params, cudaStream_t stream) { launch_cp_fixup_impl(params, stream); }
}  // namespace fastinfer::gdn::detail
