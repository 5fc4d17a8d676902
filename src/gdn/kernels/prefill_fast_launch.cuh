#pragma once
// Definitions behind gdn/prefill_fast_launch.h; included by the instantiation files only.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <string>

#include "gdn/kernels/prefill_fast_sm90.cuh"
#include "fastinfer/error.h"
#include "gdn/prefill_fast_launch.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gdn {

namespace prefill_fast_detail {
using kernels::fast::TSource;
template <InputType kType>
using Kernel = void (*)(const PrefillParams, unsigned long long*, const kernels::fast::FastTensorMaps);
template <InputType kType>
constexpr Kernel<kType> kKernels[4] = {kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kSolve>,
                                       kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kTGated>,
                                       kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kInverseOrSolve>,
                                       kernels::fast::gdn_prefill_fast_kernel<kType, TSource::kTGatedOrSolve>};
// The instantiation for the params' T source (the index into kKernels): T_g with the segment hooks
// (CP stage 4) may miss the rows of a segment past the plan, which solve, unless the caller
// promises none is missing (chunk_t_gated_covers_segments).
inline int kernel_index(const PrefillParams& p) {
  if (p.chunk_t_gated != nullptr) return p.segment_offsets != nullptr && !p.chunk_t_gated_covers_segments ? 3 : 1;
  return p.chunk_inverse != nullptr ? 2 : 0;
}

// cuTensorMapEncodeTiled from the driver (the runtime hands out its entry point; no libcuda link),
// looked up once.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    FASTINFER_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw Error(Error::Kind::kRuntime, "gdn::prefill: cuTensorMapEncodeTiled is not available");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// The map of a [T][H][128] input (strides in elements, multiples of 8 by validation): dims
// {128, H, T}, boxes {64, 1, 64} in the 128-byte swizzle, zeros past T (token coordinates are
// 32-bit: T < 2^31). A head stride of 0 (every head the same rows) maps one head (the kernel
// reads head 0 then); one token's stride is never used (validation allows any there). Built for
// every call (no allocation, no device query).
inline void encode_input_map(CUtensorMap& map, CUtensorMapDataType type, const void* base, int heads,
                             std::int64_t stride_token, std::int64_t stride_head, std::int64_t tokens) {
  if (stride_head == 0) heads = 1;
  const cuuint64_t dims[3] = {128, static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(tokens)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(heads > 1 ? stride_head * 2 : 256),
                                 static_cast<cuuint64_t>(tokens > 1 ? stride_token * 2 : 256)};
  const cuuint32_t box[3] = {64, 1, 64}, element_strides[3] = {1, 1, 1};
  const CUresult r = tensor_map_encoder()(&map, type, 3, const_cast<void*>(base), dims, strides, box, element_strides,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(Error::Kind::kRuntime,
                "gdn::prefill: cuTensorMapEncodeTiled failed (" + std::to_string(static_cast<int>(r)) + ")");
}
}  // namespace prefill_fast_detail

template <InputType kType>
void prepare_prefill_fast() {
  for (auto kernel : prefill_fast_detail::kKernels<kType>)
    FASTINFER_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kernels::fast::FastSmem::kBytes));
}

template <InputType kType>
void launch_prefill_fast(const PrefillParams& params, int ctas, Stream stream, unsigned long long* profile) {
  const std::int64_t rows = params.segment_offsets != nullptr ? params.num_segments : params.num_seqs;
  const std::int64_t items = rows * params.num_state_heads;
  if (items == 0 || params.total_tokens == 0) return;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(items < ctas ? items : ctas));
  config.blockDim = dim3(kernels::fast::FastConfig::kThreads);
  config.dynamicSmemBytes = kernels::fast::FastSmem::kBytes;
  config.stream = stream;
  cudaLaunchAttribute programmatic{};
  programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &programmatic;
  config.numAttrs = params.programmatic_launch ? 1 : 0;
  const auto kernel = prefill_fast_detail::kKernels<kType>[prefill_fast_detail::kernel_index(params)];
  const CUtensorMapDataType type =
      kType == InputType::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  kernels::fast::FastTensorMaps maps;
  prefill_fast_detail::encode_input_map(maps.q, type, params.q, params.num_q_heads, params.q_stride_token,
                                        params.q_stride_head, params.total_tokens);
  prefill_fast_detail::encode_input_map(maps.k, type, params.k, params.num_k_heads, params.k_stride_token,
                                        params.k_stride_head, params.total_tokens);
  prefill_fast_detail::encode_input_map(maps.v, type, params.v, params.num_v_heads, params.v_stride_token,
                                        params.v_stride_head, params.total_tokens);
  // The output by TMA (wgmma consumers, full chunks) where its strides are positive (validation
  // allows others; those chunks are stored by the threads).
  maps.output_by_tma = kernels::fast::FastConfig::kTmaOutput && (params.total_tokens == 1 || params.out_stride_token > 0) &&
                       (params.num_state_heads == 1 || params.out_stride_head > 0);
  if (maps.output_by_tma)
    prefill_fast_detail::encode_input_map(maps.o, type, params.output, params.num_state_heads, params.out_stride_token,
                                          params.out_stride_head, params.total_tokens);
  FASTINFER_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, params, profile, maps));
}

}  // namespace fastinfer::gdn
