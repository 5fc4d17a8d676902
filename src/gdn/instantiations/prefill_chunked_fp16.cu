#include "gdn/kernels/prefill_chunked_launch.cuh"

namespace fastinfer::gdn {

template void prepare_prefill_chunked<InputType::kFloat16>();
template void launch_prefill_chunked<InputType::kFloat16>(const PrefillParams&, Stream);

}  // namespace fastinfer::gdn
