#include "gdn/kernels/prefill_short_launch.cuh"

namespace fastinfer::gdn {

std::size_t prefill_short_smem_bytes(int max_tokens) {
  using kernels::short_seq::ShortConfig;
  return max_tokens <= 32 ? ShortConfig<32>::smem_bytes(ShortConfig<32>::kMaxHeads)
                          : ShortConfig<64>::smem_bytes(ShortConfig<64>::kMaxHeads);
}

int prefill_short_heads_at_once(int max_tokens, int heads_per_k_head) {
  using kernels::short_seq::ShortConfig;
  return std::min(heads_per_k_head, max_tokens <= 32 ? ShortConfig<32>::kMaxHeads : ShortConfig<64>::kMaxHeads);
}

template ShortOccupancy prepare_prefill_short<InputType::kBFloat16>();
template void launch_prefill_short<InputType::kBFloat16>(const PrefillParams&, int, std::int64_t, Stream);

}  // namespace fastinfer::gdn
