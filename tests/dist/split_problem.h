#pragma once
// A global GDN problem (tests/gdn/cp_problem.h) cut into per-rank slices: rank r holds slice
// lengths[r][n] of sequence n, packed rank-locally, as gdn::prefill_distributed expects. Shared
// by the CPU and GPU tests of the distributed prefill.
#include <cstring>
#include <vector>

#include "gdn/cp_problem.h"

namespace fastinfer::dist_test {

using cp_test::D;
using cp_test::Problem;
using ref::HostTensor;

// One rank's packed tokens and arguments (views into its own host tensors).
struct RankSlice {
  std::vector<std::int64_t> lengths;            // [N]
  std::vector<std::int64_t> global_rows;        // [local T]: global token of each local row
  std::vector<std::int64_t> start_in_sequence;  // [N]: tokens of the sequence before this slice
  HostTensor q, k, v, alpha, beta, cu, out;
  gdn::PrefillArgs args;
};

inline HostTensor gather_rows(const HostTensor& src, const std::vector<std::int64_t>& rows) {
  const TensorView& s = src.view();
  const std::int64_t row_elems = s.numel() / std::max<std::int64_t>(s.size(0), 1);
  HostTensor dst = s.ndim == 3 ? HostTensor(s.dtype, {static_cast<std::int64_t>(rows.size()), s.size(1), s.size(2)})
                               : HostTensor(s.dtype, {static_cast<std::int64_t>(rows.size()), s.size(1)});
  const std::size_t row_bytes = static_cast<std::size_t>(row_elems) * s.element_size();
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::memcpy(static_cast<char*>(dst.data()) + i * row_bytes,
                static_cast<const char*>(src.data()) + static_cast<std::size_t>(rows[i]) * row_bytes, row_bytes);
  return dst;
}

// Cuts every sequence of `p` by `cuts[r][n]` = tokens of sequence n on ranks < r+1 (cumulative,
// non-decreasing, the last rank takes the rest).
inline std::vector<RankSlice> split(const Problem& p, const std::vector<std::vector<std::int64_t>>& cuts) {
  const int world = static_cast<int>(cuts.size()) + 1;
  const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size());
  std::vector<RankSlice> ranks(static_cast<std::size_t>(world));
  std::int64_t bos = 0;
  for (std::int64_t n = 0; n < n_seqs; ++n) {
    std::int64_t from = 0;
    for (int r = 0; r < world; ++r) {
      const std::int64_t to = r < world - 1 ? std::min(cuts[r][n], p.lengths[n]) : p.lengths[n];
      RankSlice& s = ranks[static_cast<std::size_t>(r)];
      s.lengths.push_back(std::max<std::int64_t>(to - from, 0));
      s.start_in_sequence.push_back(from);
      for (std::int64_t t = from; t < to; ++t) s.global_rows.push_back(bos + t);
      from = std::max(from, to);
    }
    bos += p.lengths[n];
  }
  for (RankSlice& s : ranks) {
    s.q = gather_rows(p.q, s.global_rows);
    s.k = gather_rows(p.k, s.global_rows);
    s.v = gather_rows(p.v, s.global_rows);
    s.alpha = gather_rows(p.alpha, s.global_rows);
    s.beta = gather_rows(p.beta, s.global_rows);
    s.out = HostTensor(p.q.view().dtype, {static_cast<std::int64_t>(s.global_rows.size()), p.hsab, D});
    s.cu = HostTensor(DType::kInt32, {n_seqs + 1});
    std::int64_t off = 0;
    for (std::int64_t i = 0; i <= n_seqs; ++i) {
      static_cast<std::int32_t*>(s.cu.data())[i] = static_cast<std::int32_t>(off);
      if (i < n_seqs) off += s.lengths[static_cast<std::size_t>(i)];
    }
    s.args = p.args;
    s.args.q = s.q;
    s.args.k = s.k;
    s.args.v = s.v;
    s.args.alpha = s.alpha.view();
    s.args.beta = s.beta.view();
    s.args.cu_seqlens = s.cu;
    s.args.output = s.out;
    s.args.initial_state.reset();
    s.args.state_indices.reset();
    s.args.output_state.reset();
  }
  return ranks;
}

// The state of sequence n, head h after its first `tokens` tokens (token-serial fp64 recurrence
// from the problem's initial state, packed or pool).
inline std::vector<double> serial_state_after(const Problem& p, std::int64_t n, std::int64_t h, std::int64_t tokens) {
  const auto& a = p.args;
  std::int64_t bos = 0;
  for (std::int64_t i = 0; i < n; ++i) bos += p.lengths[static_cast<std::size_t>(i)];
  std::int64_t slot = n;
  if (a.state_indices) slot = static_cast<std::int64_t>(ref::load(*a.state_indices, n));
  std::vector<double> H(D * D, 0.0);
  if (a.initial_state && slot >= 0)
    for (int i = 0; i < D * D; ++i) H[i] = ref::load(*a.initial_state, ref::offset_of(*a.initial_state, slot, h, i / D, i % D));
  for (std::int64_t t = 0; t < tokens; ++t) cp_test::serial_step(p, bos + t, h, H);
  return H;
}

// Gates very near 1 and short slices over 3 ranks, a bf16 pool on rank 0 (sequence 0 has slot
// -1, so its state starts at zero): the state entering each slice dominates the slice's outputs
// and its final state. Shared by the CPU test that shows how far a zero entering state moves them
// (the bug of commit d158c41) and the simulated-rank GPU test of the same problem.
inline Problem entering_state_dominates_problem() {
  Problem p({700, 200, 130}, 2, 2, 4, 0.9995, 1.0, 309);
  p.pool_initial_state(310);
  return p;
}
inline const std::vector<std::vector<std::int64_t>> kEnteringStateDominatesCuts = {{300, 64, 1}, {500, 199, 129}};

}  // namespace fastinfer::dist_test
