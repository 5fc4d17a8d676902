// Binding of gdn::prefill: arrays in, no allocation (the Python layer allocates outputs that are
// not given); the stream is resolved here (None: the current stream of q's framework).
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
      [](nb::handle q, nb::handle k, nb::handle v, nb::handle cu_seqlens, nb::handle output, nb::handle alpha,
         nb::handle beta, float scale, bool use_qk_l2norm, nb::handle initial_state, nb::handle output_state,
         nb::handle state_indices, int checkpoint_every_n_tokens, nb::handle state_checkpoints,
         nb::handle checkpoint_cu_starts, nb::handle stream, std::optional<bool> use_cp, std::int64_t max_seqlen) {
        ArrayArgs arrays;  // before the GIL release: destroyed with the GIL held
        gdn::PrefillArgs args = make_prefill_args(arrays, q, k, v, cu_seqlens, output, alpha, beta, scale,
                                                  use_qk_l2norm, initial_state, output_state, state_indices);
        args.checkpoint_every_n_tokens = checkpoint_every_n_tokens;
        args.state_checkpoints = arrays.optional_view(state_checkpoints, "state_checkpoints");
        args.checkpoint_cu_starts = arrays.optional_view(checkpoint_cu_starts, "checkpoint_cu_starts");
        // use_cp: None = Auto, True = On, False = Off; max_seqlen: host-side hint, 0 = unknown.
        args.use_cp = !use_cp ? gdn::UseCp::kAuto : *use_cp ? gdn::UseCp::kOn : gdn::UseCp::kOff;
        args.max_seqlen = max_seqlen;
        const Stream s = resolve_stream(stream, q, args.q);
        nb::gil_scoped_release release;
        gdn::prefill(args, s);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("cu_seqlens"), nb::arg("output"), nb::arg("alpha").none(),
      nb::arg("beta").none(), nb::arg("scale"), nb::arg("use_qk_l2norm"), nb::arg("initial_state").none(),
      nb::arg("output_state").none(), nb::arg("state_indices").none(), nb::arg("checkpoint_every_n_tokens"),
      nb::arg("state_checkpoints").none(), nb::arg("checkpoint_cu_starts").none(), nb::arg("stream").none(),
      nb::arg("use_cp").none() = nb::none(), nb::arg("max_seqlen") = 0);
}

}  // namespace fastinfer::python
