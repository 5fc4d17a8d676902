#pragma once
// Host-side declarations of the prefill kernel launches (defined, one input dtype per file, in
// src/gdn/instantiations/prefill_chunked_*.cu). No CUDA headers: the dispatch is plain C++.
#include <cstddef>

#include "fastinfer/context.h"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn {

// Bytes of dynamic shared memory one CTA of the chunked kernel uses.
std::size_t prefill_chunked_smem_bytes();

// Opts the kernel into its shared-memory size on the current device (once per runner).
template <InputType kType>
void prepare_prefill_chunked();

// Grid (N, Hsab), one CTA per (sequence, state head), or (S, Hsab) with the segment hooks;
// asynchronous on `stream`.
template <InputType kType>
void launch_prefill_chunked(const PrefillParams& params, Stream stream);

extern template void prepare_prefill_chunked<InputType::kBFloat16>();
extern template void prepare_prefill_chunked<InputType::kFloat16>();
extern template void launch_prefill_chunked<InputType::kBFloat16>(const PrefillParams&, Stream);
extern template void launch_prefill_chunked<InputType::kFloat16>(const PrefillParams&, Stream);

}  // namespace fastinfer::gdn
