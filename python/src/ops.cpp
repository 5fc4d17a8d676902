#include "bindings.h"

namespace fastinfer::python {

void register_op_bindings(nanobind::module_& m) {
  register_tune_bindings(m);
  register_prefill_bindings(m);
  register_gemm_bindings(m);
  register_decode_bindings(m);
  register_dist_bindings(m);
}

}  // namespace fastinfer::python
