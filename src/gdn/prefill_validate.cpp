#include "gdn/prefill_validate.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gdn/cp_plan.h"
#include "ref/gdn_ref.h"
#include "runtime/check.h"

namespace fastinfer::gdn {
namespace {

constexpr const char* op = kPrefillOp;

void check_tokens(const char* name, const TensorView& t) {
  check::ndim(op, name, t, 3);
  check::dtype(op, name, t, {DType::kBFloat16, DType::kFloat16});
  check::dim(op, name, t, 2, kHeadDim, "head dim");
  check::last_dim_contiguous(op, name, t);
  check::not_null(op, name, t);
  check::aligned(op, name, t, 16);
  if (!(t.stride(0) % 8 == 0 && t.stride(1) % 8 == 0)) check::fail(op, name, "have token and head strides that are multiples of 8 elements",
                 "strides [" + std::to_string(t.stride(0)) + ", " + std::to_string(t.stride(1)) + "]");
  // The kernel reads q, k, v through TMA maps, which take positive strides only (a head stride
  // of 0, every head the same rows, maps one head).
  if ((t.size(0) > 1 && t.stride(0) <= 0) || t.stride(1) < 0)
    check::fail(op, name, "have a positive token stride and a non-negative head stride",
                "strides [" + std::to_string(t.stride(0)) + ", " + std::to_string(t.stride(1)) + "]");
}

void check_gate(const char* name, const TensorView& t, const PrefillShape& s) {
  check::ndim(op, name, t, 2);
  check::dtype(op, name, t, {DType::kFloat32});
  check::dim(op, name, t, 0, s.total_tokens, "tokens");
  check::dim(op, name, t, 1, s.hsab, "state heads");
  check::last_dim_contiguous(op, name, t);
  check::not_null(op, name, t);
}

void check_offsets(const char* name, const TensorView& t, std::int64_t size) {
  check::ndim(op, name, t, 1);
  check::dtype(op, name, t, {DType::kInt32, DType::kInt64});
  check::dim(op, name, t, 0, size, "sequences + 1");
  check::contiguous(op, name, t);
  check::not_null(op, name, t);
}

// [rows, Hsab, 128, 128] with contiguous inner dimensions; rows == expected_rows unless < 0.
void check_state(const char* name, const TensorView& t, const PrefillShape& s, std::int64_t expected_rows) {
  check::ndim(op, name, t, 4);
  check::dtype(op, name, t, {DType::kFloat32, DType::kBFloat16, DType::kFloat16});
  if (expected_rows >= 0) check::dim(op, name, t, 0, expected_rows, "sequences");
  check::dim(op, name, t, 1, s.hsab, "state heads");
  check::dim(op, name, t, 2, kHeadDim, "V");
  check::dim(op, name, t, 3, kHeadDim, "K");
  const std::int64_t head_elems = std::int64_t{kHeadDim} * kHeadDim;
  const bool inner = t.stride(3) == 1 && t.stride(2) == kHeadDim && t.stride(1) == head_elems;
  const bool rows = t.size(0) <= 1 || t.stride(0) >= s.hsab * head_elems;
  if (!(inner && rows)) check::fail(op, name,
                 "have contiguous [Hsab, 128, 128] rows (strides [>= " + std::to_string(s.hsab * head_elems) + ", " +
                     std::to_string(head_elems) + ", 128, 1])",
                 "strides [" + std::to_string(t.stride(0)) + ", " + std::to_string(t.stride(1)) + ", " +
                     std::to_string(t.stride(2)) + ", " + std::to_string(t.stride(3)) + "]");
  if (!((t.stride(0) * static_cast<std::int64_t>(t.element_size())) % 16 == 0)) check::fail(op, name,
                 "have a first-dimension stride of a multiple of 16 bytes", std::to_string(t.stride(0)) + " elements");
  check::not_null(op, name, t);
  check::aligned(op, name, t, 16);
}

// Byte ranges [data, data + span) overlap.
bool overlaps(const TensorView& a, const TensorView& b) {
  const auto* pa = static_cast<const char*>(a.data);
  const auto* pb = static_cast<const char*>(b.data);
  return pa < pb + b.span_bytes() && pb < pa + a.span_bytes();
}

bool same_view(const TensorView& a, const TensorView& b) {
  return a.data == b.data && a.dtype == b.dtype && a.ndim == b.ndim && a.shape == b.shape && a.strides == b.strides;
}

}  // namespace

PrefillShape validate_prefill(const PrefillArgs& a) {
  PrefillShape s;
  check_tokens("q", a.q);
  check_tokens("k", a.k);
  check_tokens("v", a.v);
  check::same_dtype(op, "k", a.k, "q", a.q);
  check::same_dtype(op, "v", a.v, "q", a.q);
  s.total_tokens = a.q.size(0);
  // The kernel's TMA coordinates (and its token indices) are 32-bit.
  if (!(s.total_tokens <= 0x7fffffff)) check::fail(op, "q", "have at most 2^31-1 tokens", std::to_string(s.total_tokens));
  check::dim(op, "k", a.k, 0, s.total_tokens, "tokens");
  check::dim(op, "v", a.v, 0, s.total_tokens, "tokens");
  s.hq = a.q.size(1);
  s.hk = a.k.size(1);
  s.hv = a.v.size(1);
  const bool positive = s.hq > 0 && s.hk > 0 && s.hv > 0;
  const bool gqa = positive && s.hk == s.hv && s.hq % s.hk == 0;
  const bool gva = positive && s.hq == s.hk && s.hv % s.hq == 0;
  if (!(gqa || gva)) check::fail(op, "q, k, v heads",
                 "be GQA (Hk == Hv, Hq a multiple of Hk) or GVA (Hq == Hk, Hv a multiple of Hq)",
                 "Hq=" + std::to_string(s.hq) + ", Hk=" + std::to_string(s.hk) + ", Hv=" + std::to_string(s.hv));
  s.hsab = s.hq > s.hv ? s.hq : s.hv;
  if (!(s.hsab <= 65535)) check::fail(op, "heads", "be at most 65535", std::to_string(s.hsab));

  check::ndim(op, "cu_seqlens", a.cu_seqlens, 1);
  if (!(a.cu_seqlens.size(0) >= 1)) check::fail(op, "cu_seqlens", "have at least one element", "an empty tensor");
  check_offsets("cu_seqlens", a.cu_seqlens, a.cu_seqlens.size(0));
  s.num_seqs = a.cu_seqlens.size(0) - 1;
  if (!(s.num_seqs <= 0x7fffffff)) check::fail(op, "cu_seqlens", "describe at most 2^31-1 sequences", std::to_string(s.num_seqs));

  if (a.alpha) check_gate("alpha", *a.alpha, s);
  if (a.beta) check_gate("beta", *a.beta, s);
  if (!(std::isfinite(a.scale))) check::fail(op, "scale", "be finite (0 selects 1/sqrt(128))", std::to_string(a.scale));

  check::ndim(op, "output", a.output, 3);
  check::same_dtype(op, "output", a.output, "q", a.q);
  check::dim(op, "output", a.output, 0, s.total_tokens, "tokens");
  check::dim(op, "output", a.output, 1, s.hsab, "state heads");
  check::dim(op, "output", a.output, 2, kHeadDim, "head dim");
  check::last_dim_contiguous(op, "output", a.output);
  check::not_null(op, "output", a.output);
  check::aligned(op, "output", a.output, 16);
  if (!(a.output.stride(0) % 8 == 0 && a.output.stride(1) % 8 == 0)) check::fail(op, "output",
                 "have token and head strides that are multiples of 8 elements",
                 "strides [" + std::to_string(a.output.stride(0)) + ", " + std::to_string(a.output.stride(1)) + "]");
  for (const auto& [name, input] : {std::pair{"q", &a.q}, {"k", &a.k}, {"v", &a.v}})
    if (overlaps(a.output, *input)) check::fail(op, "output", std::string("not overlap ") + name, "overlapping memory");

  const std::int64_t state_rows = a.state_indices ? -1 : s.num_seqs;
  if (a.state_indices) {
    check::ndim(op, "state_indices", *a.state_indices, 1);
    check::dtype(op, "state_indices", *a.state_indices, {DType::kInt32});
    check::dim(op, "state_indices", *a.state_indices, 0, s.num_seqs, "sequences");
    check::contiguous(op, "state_indices", *a.state_indices);
    check::not_null(op, "state_indices", *a.state_indices);
    if (!(a.initial_state || a.output_state)) check::fail(op, "state_indices", "come with initial_state or output_state",
                   "neither");
  }
  if (a.initial_state) check_state("initial_state", *a.initial_state, s, state_rows);
  if (a.output_state) check_state("output_state", *a.output_state, s, state_rows);
  if (a.initial_state && a.output_state && overlaps(*a.initial_state, *a.output_state))
    if (!(same_view(*a.initial_state, *a.output_state))) check::fail(op, "output_state",
                   "be exactly initial_state (in-place) or not overlap it", "a partial overlap");

  const int every = a.checkpoint_every_n_tokens;
  if (!(every >= 0 && every % 64 == 0)) check::fail(op, "checkpoint_every_n_tokens", "be 0 or a positive multiple of 64",
                 std::to_string(every));
  if (every > 0) {
    if (!(a.state_checkpoints.has_value())) check::fail(op, "state_checkpoints", "be given when checkpoint_every_n_tokens > 0", "none");
    if (!(a.checkpoint_cu_starts.has_value())) check::fail(op, "checkpoint_cu_starts",
                   "be given when checkpoint_every_n_tokens > 0", "none");
    check_state("state_checkpoints", *a.state_checkpoints, s, -1);
    check_offsets("checkpoint_cu_starts", *a.checkpoint_cu_starts, s.num_seqs + 1);
    check::same_dtype(op, "checkpoint_cu_starts", *a.checkpoint_cu_starts, "cu_seqlens", a.cu_seqlens);
    for (const auto* other : {&a.initial_state, &a.output_state})
      if (*other && overlaps(*a.state_checkpoints, **other)) check::fail(op, "state_checkpoints", "not overlap the states", "overlapping memory");
  } else {
    if (a.state_checkpoints || a.checkpoint_cu_starts) check::fail(op, "state_checkpoints",
                   "be absent when checkpoint_every_n_tokens is 0", "a tensor");
  }
  if (!(a.use_cp == UseCp::kAuto || a.use_cp == UseCp::kOn || a.use_cp == UseCp::kOff))
    check::fail(op, "use_cp", "be Auto, On or Off", std::to_string(static_cast<int>(a.use_cp)));
  if (!(a.max_seqlen >= 0)) check::fail(op, "max_seqlen", "be 0 (unknown) or the longest sequence length",
                 std::to_string(a.max_seqlen));
  return s;
}

void validate_prefill_cp(const PrefillArgs&, const PrefillShape& s, const Device& device) {
  if (!(s.num_seqs <= detail::kCpMaxSequences)) check::fail(op, "use_cp",
                 "be Auto or Off for more than " + std::to_string(detail::kCpMaxSequences) +
                     " sequences (the context-parallel grids hold one sequence per z index)",
                 "On with " + std::to_string(s.num_seqs) + " sequences");
  if (!(device.is_cuda())) check::fail(op, "use_cp",
                 "be Auto or Off for CPU tensors (the context-parallel pipeline runs on CUDA devices)",
                 "On with tensors on " + to_string(device));
}

void validate_prefill_host_values(const PrefillArgs& a, const PrefillShape& s) {
  const std::vector<std::int64_t> cu = ref::read_offsets(a.cu_seqlens);
  if (!(cu[0] >= 0)) check::fail(op, "cu_seqlens", "start at 0 or later", std::to_string(cu[0]));
  for (std::int64_t n = 0; n < s.num_seqs; ++n)
    if (!(cu[n + 1] >= cu[n])) check::fail(op, "cu_seqlens", "be non-decreasing",
                   std::to_string(cu[n + 1]) + " after " + std::to_string(cu[n]) + " at index " + std::to_string(n + 1));
  if (!(cu[s.num_seqs] <= s.total_tokens)) check::fail(op, "cu_seqlens", "end at most at T = " + std::to_string(s.total_tokens),
                 std::to_string(cu[s.num_seqs]));
  if (a.state_indices) {
    const auto* idx = a.state_indices->data_as<const std::int32_t>();
    for (const auto* st : {&a.initial_state, &a.output_state}) {
      if (!*st) continue;
      for (std::int64_t n = 0; n < s.num_seqs; ++n)
        if (!(idx[n] < (*st)->size(0))) check::fail(op, "state_indices",
                       "be below the pool size " + std::to_string((*st)->size(0)) + " (negative: no slot)",
                       std::to_string(idx[n]) + " at index " + std::to_string(n));
    }
  }
  if (a.checkpoint_every_n_tokens > 0) {
    const std::vector<std::int64_t> starts = ref::read_offsets(*a.checkpoint_cu_starts);
    for (std::int64_t n = 0; n < s.num_seqs; ++n)
      if (!(starts[n] >= 0 && starts[n + 1] >= starts[n])) check::fail(op, "checkpoint_cu_starts", "be non-negative and non-decreasing",
                     std::to_string(starts[n + 1]) + " after " + std::to_string(starts[n]) + " at index " + std::to_string(n + 1));
    if (!(starts[s.num_seqs] <= a.state_checkpoints->size(0))) check::fail(op, "checkpoint_cu_starts",
                   "end at most at state_checkpoints.shape[0] = " + std::to_string(a.state_checkpoints->size(0)),
                   std::to_string(starts[s.num_seqs]));
  }
}

}  // namespace fastinfer::gdn
