#include "gdn/kernels/prefill_fast_launch.cuh"

namespace fastinfer::gdn {

std::size_t prefill_fast_smem_bytes() { return kernels::fast::FastSmem::kBytes; }

template void prepare_prefill_fast<InputType::kBFloat16>();
template void launch_prefill_fast<InputType::kBFloat16>(const PrefillParams&, int, Stream, unsigned long long*);

}  // namespace fastinfer::gdn
