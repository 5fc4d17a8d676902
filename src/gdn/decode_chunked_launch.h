#pragma once
// The tensor-core (chunked) decode kernel for bf16 pools (kernels/decode_chunked_sm90.cuh):
// kWarps = 8 consumer warps on whole states, one CTA per SM, or 4 on half states, two or three
// CTAs per SM (+ a producer warp each; three only up to 4 tokens, 5..8 tokens run on two); more
// than 8 tokens run on the register kernel 8 x 4 (4 warps).
// Instantiated in instantiations/decode_<act>_bf16state_chunked.cu.
// No CUDA headers here.
#include "fastinfer/context.h"
#include "fastinfer/dtype.h"
#include "gdn/decode_params.h"

namespace fastinfer::gdn {

// How a CTA orders its work items and who prepares the tokens (decode_chunked_sm90.cuh):
// kTileMajor: tile blockIdx.x + i gridDim.x, the consumers prepare them per item; kStateMajor: both
// half-state tiles of a state back to back, prepared once per state; kTileMajorDynamic: tile-major
// with the tiles after each CTA's first claimed from a per-stream counter (decode_work_counter);
// kStateMajorTail (session 8): state-major with a claimed tail (kDecodeChunkedTailStaticPercent of
// a CTA's share of states in the static order, the rest claimed a state at a time).
enum class ChunkedVariant : int { kTileMajor, kStateMajor, kTileMajorDynamic, kStateMajorTail };
template <DType kAct, int kWarps, int kCtasPerSm, ChunkedVariant kVariant = ChunkedVariant::kTileMajor>
void launch_decode_chunked_sm90(const DecodeParams& params, Stream stream);

extern template void launch_decode_chunked_sm90<DType::kBFloat16, 8, 1, ChunkedVariant::kTileMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 2, ChunkedVariant::kTileMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kTileMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kFloat16, 8, 1, ChunkedVariant::kTileMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kFloat16, 4, 2, ChunkedVariant::kTileMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kFloat16, 4, 3, ChunkedVariant::kTileMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kStateMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kFloat16, 4, 3, ChunkedVariant::kStateMajor>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kTileMajorDynamic>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kFloat16, 4, 3, ChunkedVariant::kTileMajorDynamic>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kStateMajorTail>(const DecodeParams&, Stream);
extern template void launch_decode_chunked_sm90<DType::kFloat16, 4, 3, ChunkedVariant::kStateMajorTail>(const DecodeParams&, Stream);

}  // namespace fastinfer::gdn
