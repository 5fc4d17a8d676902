#pragma once
// Host side of the warp-specialised GDN prefill kernel (src/gdn/kernels/prefill_fast_sm90.cuh),
// kept apart from gdn::prefill until it replaces the chunked kernel behind PrefillRunner. No
// CUDA headers: plain C++.
#include <cstddef>

#include "fastinfer/context.h"
#include "fastinfer/gdn_prefill.h"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn {

// Bytes of dynamic shared memory one CTA uses.
std::size_t prefill_fast_smem_bytes();

// Opts the kernel into its shared-memory size on the current device.
template <InputType kType>
void prepare_prefill_fast();

// A persistent grid of min(N * Hsab, ctas) CTAs (ctas: the SM count; one CTA per SM fits);
// asynchronous on `stream`. The context-parallel hooks of PrefillParams must be unset.
template <InputType kType>
void launch_prefill_fast(const PrefillParams& params, int ctas, Stream stream);

extern template void prepare_prefill_fast<InputType::kBFloat16>();
extern template void prepare_prefill_fast<InputType::kFloat16>();
extern template void launch_prefill_fast<InputType::kBFloat16>(const PrefillParams&, int, Stream);
extern template void launch_prefill_fast<InputType::kFloat16>(const PrefillParams&, int, Stream);

// PrefillParams of validated arguments (what gdn::prefill hands its runner).
PrefillParams prefill_fast_params(const PrefillArgs& args);

// For tests and benchmarks until the switch: validate, build the params, launch on the device
// of the tensors with `ctas` CTAs (0: the SM count). CUDA tensors only.
void run_prefill_fast(const PrefillArgs& args, Stream stream = nullptr, int ctas = 0);

}  // namespace fastinfer::gdn
