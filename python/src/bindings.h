#pragma once
// Each op's binding file defines one register_* function; register_op_bindings calls them all.
#include <nanobind/nanobind.h>

namespace fastinfer::python {

void register_op_bindings(nanobind::module_& m);

}  // namespace fastinfer::python
