#include "runtime/check.h"

#include <cstdio>

namespace fastinfer::check {

void fail(const char* op, const char* arg, const std::string& expected, const std::string& given,
          Error::Kind kind) {
  throw Error(kind, std::string(op) + ": " + arg + " must " + expected + ", got " + given);
}

void dtype(const char* op, const char* arg, const TensorView& t, std::initializer_list<DType> allowed) {
  for (DType d : allowed)
    if (t.dtype == d) return;
  std::string expected = "be ";
  std::size_t i = 0;
  for (DType d : allowed) {
    if (i > 0) expected += (i + 1 == allowed.size()) ? " or " : ", ";
    expected += dtype_name(d);
    ++i;
  }
  fail(op, arg, expected, std::string(dtype_name(t.dtype)), Error::Kind::kType);
}

void same_dtype(const char* op, const char* arg, const TensorView& t, const char* other_arg, const TensorView& other) {
  if (t.dtype == other.dtype) return;
  fail(op, arg, std::string("have the same dtype as ") + other_arg + " (" + std::string(dtype_name(other.dtype)) + ")",
       std::string(dtype_name(t.dtype)), Error::Kind::kType);
}

void ndim(const char* op, const char* arg, const TensorView& t, int expected) {
  if (t.ndim == expected) return;
  fail(op, arg, "have " + std::to_string(expected) + " dimensions",
       std::to_string(t.ndim) + " (shape " + t.shape_string() + ")");
}

void dim(const char* op, const char* arg, const TensorView& t, int d, std::int64_t expected, const char* meaning) {
  if (t.size(d) == expected) return;
  std::string name = std::string(arg) + ".shape[" + std::to_string(d < 0 ? d + t.ndim : d) + "] (" + meaning + ")";
  fail(op, name.c_str(), "be " + std::to_string(expected),
       std::to_string(t.size(d)) + " (shape " + t.shape_string() + ")");
}

void dim_multiple_of(const char* op, const char* arg, const TensorView& t, int d, std::int64_t multiple,
                     const char* meaning) {
  if (multiple > 0 && t.size(d) % multiple == 0) return;
  std::string name = std::string(arg) + ".shape[" + std::to_string(d < 0 ? d + t.ndim : d) + "] (" + meaning + ")";
  fail(op, name.c_str(), "be a multiple of " + std::to_string(multiple),
       std::to_string(t.size(d)) + " (shape " + t.shape_string() + ")");
}

namespace {
std::string strides_string(const TensorView& t) {
  std::string s = "[";
  for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.strides[d]);
  return s + "]";
}
}  // namespace

void contiguous(const char* op, const char* arg, const TensorView& t) {
  if (t.is_contiguous()) return;
  fail(op, arg, "be contiguous", "strides " + strides_string(t) + " for shape " + t.shape_string());
}

void last_dim_contiguous(const char* op, const char* arg, const TensorView& t) {
  if (t.is_last_dim_contiguous()) return;
  fail(op, arg, "have a contiguous last dimension (stride 1)", "stride " + std::to_string(t.stride(-1)));
}

void device(const char* op, const char* arg, const TensorView& t, Device expected) {
  if (t.device == expected) return;
  fail(op, arg, "be on " + to_string(expected), to_string(t.device));
}

void aligned(const char* op, const char* arg, const TensorView& t, std::size_t bytes) {
  auto address = reinterpret_cast<std::uintptr_t>(t.data);
  if (address % bytes == 0) return;
  char given[64];
  std::snprintf(given, sizeof given, "address %#llx", static_cast<unsigned long long>(address));
  fail(op, arg, "be " + std::to_string(bytes) + "-byte aligned", given);
}

void not_null(const char* op, const char* arg, const TensorView& t) {
  if (t.data != nullptr || t.numel() == 0) return;
  fail(op, arg, "point to memory", "a null data pointer for shape " + t.shape_string());
}

}  // namespace fastinfer::check
