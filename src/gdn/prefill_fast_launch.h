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

// Cycle counts of CTA 0 (clock64 sums over its chunks) when a profile buffer is passed:
// producer prepare (wait loads, gates, L2 norm, A0, P), wait for a free stage, issue next loads,
// finish (inverse, T_g), other; its chunk count; consumer wait for a full stage, compute, other
// (state loads/stores, checkpoints), its chunk count.
// prepare = prepare_load_wait + prepare_gates_norm + prepare_products and finish =
// finish_inverse + finish_t_gated are left zero by the kernel (the host adds them up).
struct FastProfile {
  unsigned long long producer_prepare, producer_wait, producer_issue, producer_finish, producer_other, producer_chunks;
  unsigned long long consumer_wait, consumer_compute, consumer_other, consumer_chunks;
  unsigned long long prepare_load_wait, prepare_gates_norm, prepare_products, finish_inverse, finish_t_gated;
};

// A persistent grid of min(N * Hsab, ctas) CTAs (ctas: the SM count; one CTA per SM fits);
// asynchronous on `stream`. The segment hooks of PrefillParams are honoured (one work item per
// (segment, head)); chunk_inverse must be unset (T is always computed) and programmatic_launch is
// ignored (an ordinary launch; the kernel's griddepcontrol.wait is then a no-op).
// `profile`: nullptr, or a zeroed device FastProfile (as unsigned long long[15]) to add to.
template <InputType kType>
void launch_prefill_fast(const PrefillParams& params, int ctas, Stream stream, unsigned long long* profile = nullptr);

extern template void prepare_prefill_fast<InputType::kBFloat16>();
extern template void prepare_prefill_fast<InputType::kFloat16>();
extern template void launch_prefill_fast<InputType::kBFloat16>(const PrefillParams&, int, Stream, unsigned long long*);
extern template void launch_prefill_fast<InputType::kFloat16>(const PrefillParams&, int, Stream, unsigned long long*);

// PrefillParams of validated arguments (what gdn::prefill hands its runner).
PrefillParams prefill_fast_params(const PrefillArgs& args);

// For tests and benchmarks until the switch: validate, build the params, launch on the device
// of the tensors with `ctas` CTAs (0: the SM count). CUDA tensors only.
void run_prefill_fast(const PrefillArgs& args, Stream stream = nullptr, int ctas = 0,
                      unsigned long long* profile = nullptr);

}  // namespace fastinfer::gdn
