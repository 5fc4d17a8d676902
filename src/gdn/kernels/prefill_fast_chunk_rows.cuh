#pragma once
// The chunk table that lets CP stage 1 (cp_block_inverse_sm90.cuh, one "sequence" per grid z
// index) compute the Tinv of every 64-token chunk of a packed non-CP call in the row layout the
// prefill kernel reads (PrefillParams::chunk_inverse): row x is chunk c of the sequence n with
// key(n) = cu_seqlens[n] / 64 + n <= x < key(n + 1), c = x - key(n), and covers tokens
// [min(bos + 64 c, eos), min(bos + 64 (c + 1), eos)). Writing those bounds as offsets[x] (int64,
// rows + 1 entries) makes a valid cu_seqlens of `rows` one-chunk sequences: rows between
// sequences are empty and stage 1 skips them. Offsets are clamped to [0, total_tokens], so
// invalid cu_seqlens can only produce empty or wrong rows, never reads outside the inputs.
#include <cuda_runtime.h>

#include <cstdint>

namespace fastinfer::gdn::kernels::fast {

// offsets[x] for one row x <= rows; offset(i) reads cu_seqlens[i] (i in [0, num_seqs]).
template <class Offset>
__host__ __device__ inline std::int64_t chunk_row_offset(Offset offset, int num_seqs, std::int64_t total_tokens,
                                                         std::int64_t x) {
  const auto clamped = [&](int i) {
    const std::int64_t o = offset(i);
    return o < 0 ? std::int64_t{0} : o > total_tokens ? total_tokens : o;
  };
  // The last n in [0, N) with key(n) <= x (n = 0 if none).
  int lo = 0, hi = num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (clamped(mid) / 64 + mid <= x) lo = mid;
    else hi = mid - 1;
  }
  const std::int64_t bos = clamped(lo), eos_raw = clamped(lo + 1);
  const std::int64_t eos = eos_raw < bos ? bos : eos_raw;
  const std::int64_t chunk = x - (bos / 64 + lo);
  const std::int64_t start = chunk < 0 ? bos : bos + 64 * chunk;
  return start < eos ? start : eos;
}

}  // namespace fastinfer::gdn::kernels::fast
