#include "fastinfer/context.h"

#include "runtime/check.h"

namespace fastinfer {

ExecContext resolve_context(const char* op, std::initializer_list<NamedTensor> tensors, Stream stream) {
  const NamedTensor* first = nullptr;
  for (const NamedTensor& t : tensors) {
    if (t.tensor == nullptr) continue;  // absent optional argument
    // Facts every op relies on, checked once here for all of them (found by fuzzing: a negative
    // size reached a launch, a misaligned int32 index array was read).
    for (int d = 0; d < t.tensor->ndim; ++d)
      if (t.tensor->size(d) < 0) check::fail(op, t.name, "have non-negative sizes", "shape " + t.tensor->shape_string());
    check::aligned(op, t.name, *t.tensor, dtype_size(t.tensor->dtype));
    if (first == nullptr) {
      first = &t;
      continue;
    }
    if (t.tensor->device != first->tensor->device) {
      check::fail(op, t.name, std::string("be on the same device as ") + first->name + " (" +
                                  to_string(first->tensor->device) + ")",
                  to_string(t.tensor->device));
    }
  }
  ExecContext ctx;
  if (first != nullptr) ctx.device = first->tensor->device;
  ctx.stream = ctx.device.is_cuda() ? stream : nullptr;
  return ctx;
}

}  // namespace fastinfer
