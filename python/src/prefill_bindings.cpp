// Binding of gdn::prefill: arrays in, no allocation (the Python layer allocates
// outputs that are not given), the stream as an integer handle.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>

#include "bindings.h"
#include "fastinfer/gdn.h"
#include "prefill_args.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {

void register_prefill_bindings(nb::module_& m) {
  m.def(
      "gdn_prefill",
      [](const Array& q, const Array& k, const Array& v, const Array& cu_seqlens, const Array& output,
         const std::optional<Array>& alpha, const std::optional<Array>& beta, float scale, bool use_qk_l2norm,
         const std::optional<Array>& initial_state, const std::optional<Array>& output_state,
         const std::optional<Array>& state_indices, int checkpoint_every_n_tokens,
         const std::optional<Array>& state_checkpoints, const std::optional<Array>& checkpoint_cu_starts,
         std::uintptr_t stream, std::optional<bool> use_cp, std::int64_t max_seqlen) {
        gdn::PrefillArgs args = make_prefill_args(q, k, v, cu_seqlens, output, alpha, beta, scale, use_qk_l2norm,
                                                  initial_state, output_state, state_indices);
        args.checkpoint_every_n_tokens = checkpoint_every_n_tokens;
        args.state_checkpoints = to_optional_view(state_checkpoints);
        args.checkpoint_cu_starts = to_optional_view(checkpoint_cu_starts);
        // use_cp: None = Auto, True = On, False = Off; max_seqlen: host-side hint, 0 = unknown.
        args.use_cp = !use_cp ? gdn::UseCp::kAuto : *use_cp ? gdn::UseCp::kOn : gdn::UseCp::kOff;
        args.max_seqlen = max_seqlen;
        nb::gil_scoped_release release;
        gdn::prefill(args, to_stream(stream));
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("cu_seqlens"), nb::arg("output"), nb::arg("alpha").none(),
      nb::arg("beta").none(), nb::arg("scale"), nb::arg("use_qk_l2norm"), nb::arg("initial_state").none(),
      nb::arg("output_state").none(), nb::arg("state_indices").none(), nb::arg("checkpoint_every_n_tokens"),
      nb::arg("state_checkpoints").none(), nb::arg("checkpoint_cu_starts").none(), nb::arg("stream"),
      nb::arg("use_cp").none() = nb::none(), nb::arg("max_seqlen") = 0);
}

}  // namespace fastinfer::python
