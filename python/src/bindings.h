#pragma once
// Each op's binding file defines one register_* function; register_op_bindings calls them all.
#include <nanobind/nanobind.h>

namespace fastinfer::python {

void register_op_bindings(nanobind::module_& m);
void register_tune_bindings(nanobind::module_& m);
void register_prefill_bindings(nanobind::module_& m);
void register_gemm_bindings(nanobind::module_& m);
void register_decode_bindings(nanobind::module_& m);
void register_dist_bindings(nanobind::module_& m);

}  // namespace fastinfer::python
