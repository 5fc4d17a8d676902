#include "bindings.h"

namespace fastinfer::python {

void register_op_bindings(nanobind::module_&) {}

}  // namespace fastinfer::python
