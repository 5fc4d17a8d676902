// Tensor-core (chunked) decode kernels for bf16 activations with a bf16 state pool.
#include "gdn/decode_chunked_launch.h"
#include "gdn/kernels/decode_chunked_sm90.cuh"

namespace fastinfer::gdn {

template void launch_decode_chunked_sm90<DType::kBFloat16, 8, 1>(const DecodeParams&, Stream);
template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 2>(const DecodeParams&, Stream);
template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3>(const DecodeParams&, Stream);
template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kStateMajor>(const DecodeParams&, Stream);
template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kTileMajorDynamic>(const DecodeParams&, Stream);
template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kStateMajorTail>(const DecodeParams&, Stream);

}  // namespace fastinfer::gdn
