// Decode kernels for fp16 activations with a f32 state pool.
#include "gdn/decode_launch.h"
#include "gdn/kernels/decode_sm90.cuh"
#include "gdn/kernels/decode_small_sm90.cuh"

namespace fastinfer::gdn {

template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 8, 1>(const DecodeParams&, int, Stream);
template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 8, 2>(const DecodeParams&, int, Stream);
template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 8, 4>(const DecodeParams&, int, Stream);
template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 16, 4>(const DecodeParams&, int, Stream);

template void launch_decode_small_sm90<DType::kFloat16, DType::kFloat32, 8, 1>(const DecodeParams&, int, Stream);
template void launch_decode_small_sm90<DType::kFloat16, DType::kFloat32, 8, 2>(const DecodeParams&, int, Stream);
template void launch_decode_small_sm90<DType::kFloat16, DType::kFloat32, 16, 4>(const DecodeParams&, int, Stream);

}  // namespace fastinfer::gdn
