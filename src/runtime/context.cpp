#include "fastinfer/context.h"

#include "runtime/check.h"

namespace fastinfer {

ExecContext resolve_context(const char* op, std::initializer_list<NamedTensor> tensors, Stream stream) {
  const NamedTensor* first = nullptr;
  for (const NamedTensor& t : tensors) {
    if (t.tensor == nullptr) continue;  // absent optional argument
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
