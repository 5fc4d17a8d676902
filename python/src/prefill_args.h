#pragma once
// The PrefillArgs fields shared by the prefill bindings (gdn_prefill, gdn_prefill_distributed),
// converted once here from the arrays Python passes.
#include <optional>

#include "fastinfer/gdn_prefill.h"
#include "tensor_conversion.h"

namespace fastinfer::python {

inline gdn::PrefillArgs make_prefill_args(const Array& q, const Array& k, const Array& v, const Array& cu_seqlens,
                                          const Array& output, const std::optional<Array>& alpha,
                                          const std::optional<Array>& beta, float scale, bool use_qk_l2norm,
                                          const std::optional<Array>& initial_state,
                                          const std::optional<Array>& output_state,
                                          const std::optional<Array>& state_indices) {
  gdn::PrefillArgs args;
  args.q = to_view(q);
  args.k = to_view(k);
  args.v = to_view(v);
  args.cu_seqlens = to_view(cu_seqlens);
  args.output = to_view(output);
  args.alpha = to_optional_view(alpha);
  args.beta = to_optional_view(beta);
  args.scale = scale;
  args.use_qk_l2norm = use_qk_l2norm;
  args.initial_state = to_optional_view(initial_state);
  args.output_state = to_optional_view(output_state);
  args.state_indices = to_optional_view(state_indices);
  return args;
}

}  // namespace fastinfer::python
