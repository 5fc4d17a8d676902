// Pipelined decode kernels for fp16 activations with an fp32 state pool.
#include "gdn/decode_launch.h"
#include "gdn/kernels/decode_pipelined_sm90.cuh"

namespace fastinfer::gdn {

template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 4, 8, 1>(const DecodeParams&, Stream);
template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 2, 16, 1>(const DecodeParams&, Stream);
template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 16, 4, 16, 1>(const DecodeParams&, Stream);
template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 2, 4, 2>(const DecodeParams&, Stream);
// Dynamic work order (session 7).
template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 4, 8, 1, true>(const DecodeParams&, Stream);
template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 16, 4, 16, 1, true>(const DecodeParams&, Stream);
// Claimed tail (session 8): the dynamic kernels with most items in the static order first.
template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 4, 8, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 16, 4, 16, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);

}  // namespace fastinfer::gdn
