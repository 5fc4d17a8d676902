// Binding of gdn::decode: arrays in, no allocation (the Python layer allocates
// outputs that are not given), the stream as an integer handle.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>

#include "bindings.h"
#include "fastinfer/gdn.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {

void register_decode_bindings(nb::module_& m) {
  m.def(
      "gdn_decode",
      [](const Array& q, const Array& k, const Array& v, const Array& A_log, const Array& a, const Array& dt_bias,
         const Array& b, const Array& state, const Array& initial_state_indices,
         const std::optional<Array>& output_state_indices, const Array& output,
         const std::optional<Array>& intermediate_states, float scale, bool use_qk_l2norm, bool disable_state_update,
         std::uintptr_t stream) {
        gdn::DecodeArgs args;
        args.q = to_view(q);
        args.k = to_view(k);
        args.v = to_view(v);
        args.A_log = to_view(A_log);
        args.a = to_view(a);
        args.dt_bias = to_view(dt_bias);
        args.b = to_view(b);
        args.state = to_view(state);
        args.initial_state_indices = to_view(initial_state_indices);
        args.output_state_indices = to_optional_view(output_state_indices);
        args.output = to_view(output);
        args.intermediate_states = to_optional_view(intermediate_states);
        args.scale = scale;
        args.use_qk_l2norm = use_qk_l2norm;
        args.disable_state_update = disable_state_update;
        nb::gil_scoped_release release;
        gdn::decode(args, to_stream(stream));
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("A_log"), nb::arg("a"), nb::arg("dt_bias"), nb::arg("b"),
      nb::arg("state"), nb::arg("initial_state_indices"), nb::arg("output_state_indices").none(), nb::arg("output"),
      nb::arg("intermediate_states").none(), nb::arg("scale"), nb::arg("use_qk_l2norm"),
      nb::arg("disable_state_update"), nb::arg("stream"));
}

}  // namespace fastinfer::python
