#pragma once
// Argument validation for the public ops. Every failure throws fastinfer::Error with a message
// of the form "<op>: <argument> must <expectation>, got <what was given>". Validation runs before
// an op writes anything, so a rejected call leaves outputs and state untouched.
#include <cstdint>
#include <initializer_list>
#include <string>

#include "fastinfer/error.h"
#include "fastinfer/tensor.h"

namespace fastinfer::check {

// Formats and throws: "<op>: <arg> must <expected>, got <given>".
[[noreturn]] void fail(const char* op, const char* arg, const std::string& expected, const std::string& given,
                       Error::Kind kind = Error::Kind::kValue);

// Generic condition.
inline void require(bool ok, const char* op, const char* arg, const std::string& expected,
                    const std::string& given, Error::Kind kind = Error::Kind::kValue) {
  if (!ok) fail(op, arg, expected, given, kind);
}

// "<arg> must be bfloat16 or float16, got float32" (TypeError).
void dtype(const char* op, const char* arg, const TensorView& t, std::initializer_list<DType> allowed);
// "<arg> must have the same dtype as <other_arg> (bfloat16), got float16" (TypeError).
void same_dtype(const char* op, const char* arg, const TensorView& t, const char* other_arg, const TensorView& other);
// "<arg> must have 3 dimensions, got 2 ([4, 128])".
void ndim(const char* op, const char* arg, const TensorView& t, int expected);
// "<arg>.shape[2] (head dim) must be 128, got 64 (shape [T, H, 64])".
void dim(const char* op, const char* arg, const TensorView& t, int d, std::int64_t expected, const char* meaning);
// "<arg>.shape[1] (heads) must be a multiple of 16, got 20".
void dim_multiple_of(const char* op, const char* arg, const TensorView& t, int d, std::int64_t multiple,
                     const char* meaning);
// "<arg> must be contiguous, got strides [..] for shape [..]".
void contiguous(const char* op, const char* arg, const TensorView& t);
// "<arg> must have a contiguous last dimension, got stride 2".
void last_dim_contiguous(const char* op, const char* arg, const TensorView& t);
// "<arg> must be on cuda:0, got cpu".
void device(const char* op, const char* arg, const TensorView& t, Device expected);
// "<arg> must be 16-byte aligned, got address 0x...".
void aligned(const char* op, const char* arg, const TensorView& t, std::size_t bytes);
// "<arg> must not be null, got a null data pointer for shape [..]" (only when numel > 0).
void not_null(const char* op, const char* arg, const TensorView& t);

}  // namespace fastinfer::check
