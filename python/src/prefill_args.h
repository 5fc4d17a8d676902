#pragma once
// The PrefillArgs fields shared by the prefill bindings (gdn_prefill, gdn_prefill_distributed),
// converted once here from the arrays Python passes.
#include <nanobind/nanobind.h>

#include "fastinfer/gdn_prefill.h"
#include "tensor_conversion.h"

namespace fastinfer::python {

inline gdn::PrefillArgs make_prefill_args(ArrayArgs& arrays, nanobind::handle q, nanobind::handle k,
                                          nanobind::handle v, nanobind::handle cu_seqlens, nanobind::handle output,
                                          nanobind::handle alpha, nanobind::handle beta, float scale,
                                          bool use_qk_l2norm, nanobind::handle initial_state,
                                          nanobind::handle output_state, nanobind::handle state_indices) {
  gdn::PrefillArgs args;
  args.q = arrays.view(q, "q");
  args.k = arrays.view(k, "k");
  args.v = arrays.view(v, "v");
  args.cu_seqlens = arrays.view(cu_seqlens, "cu_seqlens");
  args.output = arrays.view(output, "output");
  args.alpha = arrays.optional_view(alpha, "g");
  args.beta = arrays.optional_view(beta, "beta");
  args.scale = scale;
  args.use_qk_l2norm = use_qk_l2norm;
  args.initial_state = arrays.optional_view(initial_state, "initial_state");
  args.output_state = arrays.optional_view(output_state, "output_state");
  args.state_indices = arrays.optional_view(state_indices, "state_indices");
  return args;
}

}  // namespace fastinfer::python
