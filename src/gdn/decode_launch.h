#pragma once
// The decode kernel launchers, one per (activation dtype, state dtype, lanes per row, rows per
// thread); defined in kernels/decode_sm90.cuh and instantiated in
// instantiations/decode_<act>_<state>state.cu (one file per dtype pair keeps each nvcc run short).
// The shapes listed here are the tactics the runner may pick (decode_runner.h): the heuristic's
// three (register 16 x 4 with 2 and 4 warps, pipelined 8 x 4 x 8 warps) and their neighbours in
// the H200 sweeps (16 lanes x 8 rows, never faster than 8 x 4 by more than 1% and spilling, was
// dropped in session 1; pipelined 8 x 1 x 8 warps x 2 CTAs, 13-120% slower, in session 2).
// No CUDA headers here.
#include "fastinfer/context.h"
#include "fastinfer/dtype.h"
#include "gdn/decode_params.h"

namespace fastinfer::gdn {

// Launches one CTA of `warps` warps per (sequence, state head, block of V rows) on `stream`.
// Requires warps * (32 / kLanesPerRow) * kRowsPerThread to divide 128 (the rows of one state).
template <DType kAct, DType kState, int kLanesPerRow, int kRowsPerThread>
void launch_decode_sm90(const DecodeParams& params, int warps, Stream stream);

using DecodeLauncher = void (*)(const DecodeParams&, int warps, Stream);

// The small-batch variant of the register kernel (kernels/decode_small_sm90.cuh): same work split
// and tactic shapes, every slot-independent load issued before the slot is read and no CTA barrier
// (each warp normalises the tokens itself). Up to kDecodeSmallMaxTokens tokens; longer windows run
// on launch_decode_sm90 of the same shape. Instantiated next to the register kernel.
inline constexpr int kDecodeSmallMaxTokens = 4;
template <DType kAct, DType kState, int kLanesPerRow, int kRowsPerThread>
void launch_decode_small_sm90(const DecodeParams& params, int warps, Stream stream);

// The pipelined kernel (kernels/decode_pipelined_sm90.cuh): persistent CTAs of kConsumerWarps
// consumer warps + one producer warp, kCtasPerSm of them per SM, streaming tiles of
// kConsumerWarps * (32 / kLanesPerRow) * kRowsPerThread rows through shared memory. More than 8
// tokens run on the register kernel 8 x 4 (4 warps). Instantiated in
// instantiations/decode_<act>_<state>state_pipelined.cu. kDynamic: items after each CTA's first
// two are claimed from a per-stream counter (decode_work_counter) instead of a fixed stride;
// kStaticPercent > 0 (session 8, the claimed-tail tactics): a CTA takes that share of its even
// part of the items in the static order first and claims only the rest (DecodeParams::static_steps).
template <DType kAct, DType kState, int kLanesPerRow, int kRowsPerThread, int kConsumerWarps, int kCtasPerSm,
          bool kDynamic = false, int kStaticPercent = 0>
void launch_decode_pipelined_sm90(const DecodeParams& params, Stream stream);

// The claimed-tail tactics' static share (kStaticPercent) for the pipelined kernels: 90%, from H200
// session 8 batch 2 (bf16 pool, T = 1, L8R4W8P1, 50/75/90/100%: B = 256 0.1521/0.1486/0.1475/0.1531
// ms, B = 512 0.2937/0.2889/0.2861/0.2974, B = 64 0.0458/0.0450/0.0445/0.0443 and 0.0465/0.0447/
// 0.0441/0.0443 in two rounds).
inline constexpr int kDecodeClaimedTailStaticPercent = 90;
// The tensor-core kernel's (state-major, whole states claimed): 75%, from the same batch (bf16, T = 4,
// 50/75/90/100%: B = 64 0.0481/0.0473/0.0478/0.0483 ms, B = 256 0.1576/0.1582/0.1582/0.1645, B = 512
// 0.3054/0.3066/0.3070/0.3241).
inline constexpr int kDecodeChunkedTailStaticPercent = 75;

// The dynamic pipelined kernels' counters on (device, stream): two ints from the workspace pool,
// zeroed in stream order when the block is created; each launch leaves them zero (decode_runner.cpp).
int* decode_work_counter(int device, Stream stream);

// The most tokens one stage of the pipelined kernel holds (q, k and v of each).
inline constexpr int kDecodePipelinedMaxTokens = 8;

using PipelinedDecodeLauncher = void (*)(const DecodeParams&, Stream);

extern template void launch_decode_sm90<DType::kBFloat16, DType::kFloat32, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kBFloat16, DType::kFloat32, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kBFloat16, DType::kFloat32, 8, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kBFloat16, DType::kFloat32, 16, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kBFloat16, DType::kBFloat16, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kBFloat16, DType::kBFloat16, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kBFloat16, DType::kBFloat16, 8, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kBFloat16, DType::kBFloat16, 16, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 8, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kFloat32, 16, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kBFloat16, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kBFloat16, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kBFloat16, 8, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_sm90<DType::kFloat16, DType::kBFloat16, 16, 4>(const DecodeParams&, int, Stream);

extern template void launch_decode_small_sm90<DType::kBFloat16, DType::kFloat32, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kBFloat16, DType::kFloat32, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kBFloat16, DType::kFloat32, 16, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kBFloat16, DType::kBFloat16, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kBFloat16, DType::kBFloat16, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kBFloat16, DType::kBFloat16, 16, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kFloat16, DType::kFloat32, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kFloat16, DType::kFloat32, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kFloat16, DType::kFloat32, 16, 4>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kFloat16, DType::kBFloat16, 8, 1>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kFloat16, DType::kBFloat16, 8, 2>(const DecodeParams&, int, Stream);
extern template void launch_decode_small_sm90<DType::kFloat16, DType::kBFloat16, 16, 4>(const DecodeParams&, int, Stream);

extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 8, 4, 8, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 8, 2, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 16, 4, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 8, 2, 4, 2>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 8, 4, 8, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 8, 2, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 16, 4, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 8, 2, 4, 2>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 4, 8, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 2, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 16, 4, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 2, 4, 2>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 8, 4, 8, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 8, 2, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 16, 4, 16, 1>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 8, 2, 4, 2>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 8, 4, 8, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 16, 4, 16, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 8, 4, 8, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 16, 4, 16, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 4, 8, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 16, 4, 16, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 8, 4, 8, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 16, 4, 16, 1, true>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 8, 4, 8, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kFloat32, 16, 4, 16, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 8, 4, 8, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kBFloat16, DType::kBFloat16, 16, 4, 16, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 8, 4, 8, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kFloat32, 16, 4, 16, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 8, 4, 8, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);
extern template void launch_decode_pipelined_sm90<DType::kFloat16, DType::kBFloat16, 16, 4, 16, 1, true, kDecodeClaimedTailStaticPercent>(const DecodeParams&, Stream);

}  // namespace fastinfer::gdn
