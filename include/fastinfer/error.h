#pragma once
// fastinfer::Error: every public function reports bad input and CUDA failures with it. The
// message names the op, the argument, what was expected and what was given, e.g.
//   gdn::prefill: q must be bfloat16 or float16, got float32
#include <stdexcept>
#include <string>

namespace fastinfer {

class Error : public std::runtime_error {
 public:
  // How bindings map it: kValue -> ValueError, kType -> TypeError, kRuntime -> RuntimeError.
  enum class Kind { kValue, kType, kRuntime };
  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace fastinfer
