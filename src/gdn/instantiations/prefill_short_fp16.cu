#include "gdn/kernels/prefill_short_launch.cuh"

namespace fastinfer::gdn {

template ShortOccupancy prepare_prefill_short<InputType::kFloat16>();
template void launch_prefill_short<InputType::kFloat16>(const PrefillParams&, int, std::int64_t, Stream);

}  // namespace fastinfer::gdn
