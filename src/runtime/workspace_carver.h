#pragma once
// WorkspaceCarver: one function lays out an op's workspace in counting mode (base == nullptr:
// only the total is computed) and in carving mode (real base: named slices are handed out).
// Using the same function for both means the size and the slices can never disagree.
#include <cstddef>
#include <cstdint>

namespace fastinfer {

class WorkspaceCarver {
 public:
  static constexpr std::size_t kAlignment = 256;

  explicit WorkspaceCarver(void* base = nullptr) : base_(static_cast<char*>(base)) {}

  template <class T>
  T* take(std::size_t count) {
    offset_ = (offset_ + kAlignment - 1) / kAlignment * kAlignment;
    T* slice = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += count * sizeof(T);
    return slice;
  }

  std::size_t bytes() const { return offset_; }

 private:
  char* base_;
  std::size_t offset_ = 0;
};

}  // namespace fastinfer
