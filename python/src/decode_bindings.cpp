// Binding of gdn::decode: arrays in, no allocation (the Python layer allocates outputs that are
// not given); the stream is resolved here (None: the current stream of q's framework).
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "fastinfer/gdn.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {

void register_decode_bindings(nb::module_& m) {
  m.def(
      "gdn_decode",
      [](nb::handle q, nb::handle k, nb::handle v, nb::handle A_log, nb::handle a, nb::handle dt_bias, nb::handle b,
         nb::handle state, nb::handle initial_state_indices, nb::handle output_state_indices, nb::handle output,
         nb::handle intermediate_states, float scale, bool use_qk_l2norm, bool disable_state_update,
         nb::handle stream) {
        ArrayArgs arrays;  // before the GIL release: destroyed with the GIL held
        gdn::DecodeArgs args;
        args.q = arrays.view(q, "q");
        args.k = arrays.view(k, "k");
        args.v = arrays.view(v, "v");
        args.A_log = arrays.view(A_log, "A_log");
        args.a = arrays.view(a, "a");
        args.dt_bias = arrays.view(dt_bias, "dt_bias");
        args.b = arrays.view(b, "b");
        args.state = arrays.view(state, "state");
        args.initial_state_indices = arrays.view(initial_state_indices, "initial_state_indices");
        args.output_state_indices = arrays.optional_view(output_state_indices, "output_state_indices");
        args.output = arrays.view(output, "output");
        args.intermediate_states = arrays.optional_view(intermediate_states, "intermediate_states");
        args.scale = scale;
        args.use_qk_l2norm = use_qk_l2norm;
        args.disable_state_update = disable_state_update;
        const Stream s = resolve_stream(stream, q, args.q);
        nb::gil_scoped_release release;
        gdn::decode(args, s);
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("A_log"), nb::arg("a"), nb::arg("dt_bias"), nb::arg("b"),
      nb::arg("state"), nb::arg("initial_state_indices"), nb::arg("output_state_indices").none(), nb::arg("output"),
      nb::arg("intermediate_states").none(), nb::arg("scale"), nb::arg("use_qk_l2norm"),
      nb::arg("disable_state_update"), nb::arg("stream").none());
}

}  // namespace fastinfer::python
