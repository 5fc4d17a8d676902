#pragma once
// The PrefillArgs fields shared by the prefill bindings (chunk_gated_delta_rule,
// gdn_prefill_distributed), converted once here from the arrays Python passes. In two steps:
// chunk_gated_delta_rule allocates the outputs it is not given between them, from the shapes
// of the first step's inputs.
#include <nanobind/nanobind.h>

#include "fastinfer/gdn_prefill.h"
#include "tensor_conversion.h"

namespace fastinfer::python {

// The inputs that size the outputs: q, v, cu_seqlens and the state pool.
inline void view_prefill_inputs(ArrayArgs& arrays, gdn::PrefillArgs& args, nanobind::handle q, nanobind::handle v,
                                nanobind::handle cu_seqlens, nanobind::handle state_indices,
                                nanobind::handle initial_state) {
  args.q = arrays.view(q, "q");
  args.v = arrays.view(v, "v");
  args.cu_seqlens = arrays.view(cu_seqlens, "cu_seqlens");
  args.state_indices = arrays.optional_view(state_indices, "state_indices");
  args.initial_state = arrays.optional_view(initial_state, "initial_state");
}

// The rest of the shared fields, outputs included.
inline void view_prefill_operands(ArrayArgs& arrays, gdn::PrefillArgs& args, nanobind::handle k,
                                  nanobind::handle output, nanobind::handle alpha, nanobind::handle beta, float scale,
                                  bool use_qk_l2norm, nanobind::handle output_state) {
  args.k = arrays.view(k, "k");
  args.output = arrays.view(output, "output");
  args.alpha = arrays.optional_view(alpha, "g");
  args.beta = arrays.optional_view(beta, "beta");
  args.scale = scale;
  args.use_qk_l2norm = use_qk_l2norm;
  args.output_state = arrays.optional_view(output_state, "output_state");
}

inline gdn::PrefillArgs make_prefill_args(ArrayArgs& arrays, nanobind::handle q, nanobind::handle k,
                                          nanobind::handle v, nanobind::handle cu_seqlens, nanobind::handle output,
                                          nanobind::handle alpha, nanobind::handle beta, float scale,
                                          bool use_qk_l2norm, nanobind::handle initial_state,
                                          nanobind::handle output_state, nanobind::handle state_indices) {
  gdn::PrefillArgs args;
  view_prefill_inputs(arrays, args, q, v, cu_seqlens, state_indices, initial_state);
  view_prefill_operands(arrays, args, k, output, alpha, beta, scale, use_qk_l2norm, output_state);
  return args;
}

}  // namespace fastinfer::python
