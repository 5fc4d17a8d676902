// gated_delta_rule_decode / gated_delta_rule_mtp (FlashInfer's names and argument order) over
// gdn::decode. The public function is this one, with no Python wrapper in front (host cost).
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "fastinfer/gdn.h"
#include "python_args.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {

namespace {

constexpr std::int64_t kHeadDim = 128;

constexpr const char* kDecodeDoc =
    "GDN decode / MTP verify against a state pool (FlashInfer's gated_delta_rule_decode*).\n\n"
    "q, k [B, T, H, 128], v [B, T, HV, 128]; state pool [P, HV, 128, 128] float32 or bfloat16;\n"
    "initial_state_indices [B] int32 (default: arange(B)); -1 marks a padded slot. Returns output\n"
    "[B, T, HV, 128] (allocated when not given). stream: None = the current stream of q's framework.";

nb::object decode(nb::handle q, nb::handle k, nb::handle v, nb::handle state, nb::handle A_log, nb::handle a,
                  nb::handle dt_bias, nb::handle b, nb::handle scale, nb::handle output, nb::handle use_qk_l2norm,
                  nb::handle initial_state_indices, nb::handle output_state_indices, nb::handle intermediate_states,
                  nb::handle disable_state_update, nb::handle stream) {
  ArrayArgs arrays;  // before the GIL release: destroyed with the GIL held
  gdn::DecodeArgs args;
  args.q = arrays.view(q, "q");
  args.v = arrays.view(v, "v");
  nb::object out = nb::borrow(output), indices = nb::borrow(initial_state_indices);
  if (out.is_none()) {
    const bool shaped = args.q.ndim == 4 && args.v.ndim == 4;  // else gdn::decode names the bad shape
    out = empty_like(q, {args.q.shape[0], shaped ? args.q.shape[1] : 1, shaped ? args.v.shape[2] : 1, kHeadDim});
  }
  if (indices.is_none()) indices = arange_int32(q, args.q.ndim > 0 ? args.q.shape[0] : 0);
  args.k = arrays.view(k, "k");
  args.A_log = arrays.view(A_log, "A_log");
  args.a = arrays.view(a, "a");
  args.dt_bias = arrays.view(dt_bias, "dt_bias");
  args.b = arrays.view(b, "b");
  args.state = arrays.view(state, "state");
  args.initial_state_indices = arrays.view(indices, "initial_state_indices");
  args.output_state_indices = arrays.optional_view(output_state_indices, "output_state_indices");
  args.output = arrays.view(out, "output");
  args.intermediate_states = arrays.optional_view(intermediate_states, "intermediate_states");
  args.scale = to_float(scale, 0.0f);
  args.use_qk_l2norm = truthy(use_qk_l2norm);
  args.disable_state_update = truthy(disable_state_update);
  const Stream s = resolve_stream(stream, q, args.q);
  launch([&] { gdn::decode(args, s); });
  return out;
}

}  // namespace

void register_decode_bindings(nb::module_& m) {
  for (const char* name : {"gated_delta_rule_decode", "gated_delta_rule_mtp"}) {
    m.def(name, &decode, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("state"), nb::arg("A_log"), nb::arg("a"),
          nb::arg("dt_bias"), nb::arg("b"), nb::arg("scale").none() = nb::none(), nb::arg("output").none() = nb::none(),
          nb::arg("use_qk_l2norm").none() = true, nb::arg("initial_state_indices").none() = nb::none(),
          nb::arg("output_state_indices").none() = nb::none(), nb::arg("intermediate_states").none() = nb::none(),
          nb::arg("disable_state_update").none() = false, nb::arg("stream").none() = nb::none(), kDecodeDoc);
  }
}

}  // namespace fastinfer::python
