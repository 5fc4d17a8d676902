#pragma once
// Host-side declarations of the warp-specialised GDN prefill kernel (src/gdn/kernels/
// prefill_fast_sm90.cuh, docs/GDN_PREFILL_FAST.md), the kernel behind PrefillRunner. No CUDA
// headers: plain C++.
#include <cstddef>
#include <cstdint>

#include "fastinfer/context.h"
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
// In a profile build (FASTINFER_PREFILL_PART_PROFILE) the wgmma consumers also split compute into
// prep (T_g / P and their barrier), x (S K^T and X), o (U, S Q^T and U P^T; a clock read between U
// and S Q^T made ptxas serialise the wgmmas), store (the output rows) and state (the update); u
// stays zero; their compute field holds the rest (the host adds the parts). prepare_gates (warp 0's gates) is the
// part of the producer's gates and L2 norm before the norm (prepare_gates_norm: the norm).
struct FastProfile {
  unsigned long long producer_prepare, producer_wait, producer_issue, producer_finish, producer_other, producer_chunks;
  unsigned long long consumer_wait, consumer_compute, consumer_other, consumer_chunks;
  unsigned long long prepare_load_wait, prepare_gates_norm, prepare_products, finish_inverse, finish_t_gated;
  unsigned long long consumer_prep, consumer_x, consumer_u, consumer_o, consumer_store, consumer_state, prepare_gates;
};

// A persistent grid of min(rows * Hsab, ctas) CTAs (rows: sequences, or segments with the
// segment hooks; ctas: the SM count, one CTA per SM fits); asynchronous on `stream`, a
// programmatic dependent launch when params.programmatic_launch.
// `profile`: nullptr, or a zeroed device FastProfile (as unsigned long long[22]) to add to.
template <InputType kType>
void launch_prefill_fast(const PrefillParams& params, int ctas, Stream stream, unsigned long long* profile = nullptr);

// offsets[0 .. rows] (device int64): the chunk table of prefill_fast_chunk_rows.cuh for
// rows = total_tokens / 64 + num_seqs (num_seqs > 0); asynchronous on `stream`.
void launch_prefill_chunk_rows(const PrefillParams& params, std::int64_t* offsets, std::int64_t rows, Stream stream);

extern template void prepare_prefill_fast<InputType::kBFloat16>();
extern template void prepare_prefill_fast<InputType::kFloat16>();
extern template void launch_prefill_fast<InputType::kBFloat16>(const PrefillParams&, int, Stream, unsigned long long*);
extern template void launch_prefill_fast<InputType::kFloat16>(const PrefillParams&, int, Stream, unsigned long long*);

}  // namespace fastinfer::gdn
