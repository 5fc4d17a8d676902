// chunk_gated_delta_rule (FlashInfer's name and argument order) over gdn::prefill. The public
// function is this one, with no Python wrapper in front (host cost).
#include <nanobind/nanobind.h>

#include <algorithm>

#include "bindings.h"
#include "fastinfer/error.h"
#include "fastinfer/gdn.h"
#include "prefill_args.h"
#include "python_args.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {

namespace {

constexpr std::int64_t kHeadDim = 128;

constexpr const char* kPrefillDoc =
    "GDN prefill over packed sequences (FlashInfer's chunk_gated_delta_rule).\n\n"
    "q [T, Hq, 128], k [T, Hk, 128], v [T, Hv, 128]; g (the linear forget gate alpha) and beta\n"
    "[T, Hsab] float32; cu_seqlens [N + 1] int32/int64. Returns output [T, Hsab, 128], and with\n"
    "output_final_state=True also the final state [N, Hsab, 128, 128] float32 (or `output_state`);\n"
    "outputs not given are allocated. Unlike FlashInfer, use_qk_l2norm_in_kernel really normalises\n"
    "q and k. use_cp picks the context-parallel pipeline: None = automatic, True = always, False =\n"
    "never; max_seqlen (the longest sequence, known on the host) sizes its chunks (0 = unknown: the\n"
    "total token count). stream: None = the current stream of q's framework.";

nb::object prefill(nb::handle q, nb::handle k, nb::handle v, nb::handle g, nb::handle beta, nb::handle scale,
                   nb::handle initial_state, nb::handle output_final_state, nb::handle cu_seqlens,
                   nb::handle use_qk_l2norm_in_kernel, nb::handle output, nb::handle output_state,
                   nb::handle state_indices, nb::handle checkpoint_every_n_tokens, nb::handle state_checkpoints,
                   nb::handle checkpoint_cu_starts, nb::handle use_cp, nb::handle max_seqlen, nb::handle stream) {
  if (cu_seqlens.is_none())
    throw Error(Error::Kind::kValue, "chunk_gated_delta_rule: cu_seqlens must be given (packed varlen input)");
  ArrayArgs arrays;  // before the GIL release: destroyed with the GIL held
  gdn::PrefillArgs args;
  view_prefill_inputs(arrays, args, q, v, cu_seqlens, state_indices, initial_state);
  // Shapes of outputs to allocate; gdn::prefill names any bad input shape afterwards.
  const std::int64_t hsab = std::max(args.q.ndim > 1 ? args.q.shape[1] : 0, args.v.ndim > 1 ? args.v.shape[1] : 0);
  nb::object out = nb::borrow(output), out_state = nb::borrow(output_state);
  if (out.is_none()) out = empty_like(q, {args.q.ndim > 0 ? args.q.shape[0] : 0, hsab, kHeadDim});
  const bool final_state = truthy(output_final_state);
  if (final_state && out_state.is_none()) {
    const std::int64_t n = args.state_indices && args.initial_state && args.initial_state->ndim > 0
                               ? args.initial_state->shape[0]
                               : (args.cu_seqlens.ndim > 0 ? args.cu_seqlens.shape[0] - 1 : 0);
    out_state = empty_like(q, {n, hsab, kHeadDim, kHeadDim}, dtype_named(q, "float32"));
  }
  view_prefill_operands(arrays, args, k, out, g, beta, to_float(scale, 0.0f), truthy(use_qk_l2norm_in_kernel),
                        out_state);
  args.checkpoint_every_n_tokens = static_cast<int>(to_int(checkpoint_every_n_tokens));
  args.state_checkpoints = arrays.optional_view(state_checkpoints, "state_checkpoints");
  args.checkpoint_cu_starts = arrays.optional_view(checkpoint_cu_starts, "checkpoint_cu_starts");
  // use_cp: None = Auto, True = On, False = Off; max_seqlen: host-side hint, 0 = unknown.
  args.use_cp = use_cp.is_none() ? gdn::UseCp::kAuto : truthy(use_cp) ? gdn::UseCp::kOn : gdn::UseCp::kOff;
  args.max_seqlen = to_int(max_seqlen);
  const Stream s = resolve_stream(stream, q, args.q);
  launch([&] { gdn::prefill(args, s); });
  if (final_state) return nb::make_tuple(out, out_state);
  return out;
}

}  // namespace

void register_prefill_bindings(nb::module_& m) {
  m.def("chunk_gated_delta_rule", &prefill, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("g").none() = nb::none(),
        nb::arg("beta").none() = nb::none(), nb::arg("scale").none() = nb::none(),
        nb::arg("initial_state").none() = nb::none(), nb::arg("output_final_state").none() = false,
        nb::arg("cu_seqlens").none() = nb::none(), nb::arg("use_qk_l2norm_in_kernel").none() = false,
        nb::arg("output").none() = nb::none(), nb::arg("output_state").none() = nb::none(),
        nb::arg("state_indices").none() = nb::none(), nb::arg("checkpoint_every_n_tokens") = 0,
        nb::arg("state_checkpoints").none() = nb::none(), nb::arg("checkpoint_cu_starts").none() = nb::none(),
        nb::arg("use_cp").none() = nb::none(), nb::arg("max_seqlen") = 0, nb::arg("stream").none() = nb::none(),
        kPrefillDoc);
}

}  // namespace fastinfer::python
