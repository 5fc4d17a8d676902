#include "gdn/kernels/prefill_fast_launch.cuh"

namespace fastinfer::gdn {

template void prepare_prefill_fast<InputType::kFloat16>();
template void launch_prefill_fast<InputType::kFloat16>(const PrefillParams&, int, Stream, unsigned long long*);

}  // namespace fastinfer::gdn
