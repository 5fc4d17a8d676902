#include "gdn/kernels/prefill_chunked_launch.cuh"

namespace fastinfer::gdn {

std::size_t prefill_chunked_smem_bytes() { return kernels::ChunkedSmem::kBytes; }

template void prepare_prefill_chunked<InputType::kBFloat16>();
template void launch_prefill_chunked<InputType::kBFloat16>(const PrefillParams&, Stream);

}  // namespace fastinfer::gdn
