#pragma once
// Fuzzed tensor arguments: from the fuzzer's bytes, a TensorView that is usually close to what
// the op expects (so the fuzzer gets deep into validation) and sometimes anything: another dtype,
// rank or size, odd / zero / negative / overlapping strides, a null or misaligned data pointer,
// another device. CPU tensors get a real heap buffer of exactly the bytes their strides span
// (AddressSanitizer then catches any read or write outside it); CUDA tensors get a fake address
// that is never dereferenced (the harness only validates them, it never launches).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "fastinfer/tensor.h"

namespace fastinfer::fuzz {

// Upper bound on the bytes one CPU tensor may span (keeps the CPU reference fast).
inline constexpr std::int64_t kMaxTensorBytes = std::int64_t{1} << 22;

class TensorFactory {
 public:
  explicit TensorFactory(FuzzedDataProvider& in) : in_(in) {}

  // Whether the whole call is on the CPU (real buffers, the reference may run) or on a fake
  // CUDA device (validation only). Individual tensors may still be put on another device.
  void set_cuda(bool cuda) { cuda_ = cuda; }
  bool cuda() const { return cuda_; }

  // A tensor meant to be `dtype` with `shape`, perturbed with a probability of about 1/8 per
  // property so that most calls stay valid in most arguments.
  TensorView make(DType dtype, std::initializer_list<std::int64_t> shape) {
    TensorView t;
    t.dtype = rare() ? static_cast<DType>(in_.ConsumeIntegralInRange<int>(0, 8)) : dtype;
    std::vector<std::int64_t> dims(shape);
    if (rare()) {  // another rank
      if (!dims.empty() && in_.ConsumeBool()) dims.pop_back();
      else if (dims.size() < kMaxDims) dims.push_back(in_.ConsumeIntegralInRange<std::int64_t>(0, 3));
    }
    // Sizes >= 0: a negative size was found to pass validation (gemm::mm_bf16_fp4 M = -1; reported,
    // docs/RUNTIME_PROOF.md) and is not generated, so the run goes on past that finding.
    for (auto& d : dims)
      if (rare()) d = in_.ConsumeIntegralInRange<std::int64_t>(0, 9);
    t.ndim = static_cast<int>(dims.size());
    for (int i = 0; i < t.ndim; ++i) t.shape[i] = dims[i];
    // Row-major strides, then maybe a padded leading stride or arbitrary strides.
    std::int64_t s = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      t.strides[i] = s;
      s *= std::max<std::int64_t>(t.shape[i], 1);
    }
    if (t.ndim > 0 && rare()) t.strides[0] += 8 * in_.ConsumeIntegralInRange<std::int64_t>(0, 4);
    if (rare())
      for (int i = 0; i < t.ndim; ++i)
        if (in_.ConsumeBool()) t.strides[i] = in_.ConsumeIntegralInRange<std::int64_t>(-300, 20000);
    t.device = cuda_ ? Device::cuda(0) : Device::cpu();
    if (rare()) t.device = t.device.is_cpu() ? Device::cuda(in_.ConsumeIntegralInRange<int>(0, 1)) : Device::cpu();
    attach_data(t);
    return t;
  }

  std::optional<TensorView> maybe(bool usually_present, DType dtype, std::initializer_list<std::int64_t> shape) {
    const bool present = rare() ? !usually_present : usually_present;
    if (!present) return std::nullopt;
    return make(dtype, shape);
  }

  // Writes integer values into a CPU tensor of int32/int64 (offsets, indices); no-op otherwise.
  template <class ValueFn>
  void fill_ints(const TensorView& t, ValueFn value) {
    if (!t.device.is_cpu() || t.data == nullptr || t.ndim != 1) return;
    for (std::int64_t i = 0; i < t.shape[0]; ++i) {
      const std::int64_t v = rare() ? in_.ConsumeIntegralInRange<std::int64_t>(-5, 5000) : value(i);
      char* p = static_cast<char*>(t.data) + i * t.strides[0] * static_cast<std::int64_t>(dtype_size(t.dtype));
      if (t.dtype == DType::kInt32) {
        const auto v32 = static_cast<std::int32_t>(v);
        std::memcpy(p, &v32, 4);
      } else if (t.dtype == DType::kInt64) {
        std::memcpy(p, &v, 8);
      }
    }
  }

  FuzzedDataProvider& input() { return in_; }
  bool rare() { return in_.ConsumeIntegralInRange<int>(0, 7) == 0; }

 private:
  // [min, max] element offsets the strides reach (empty tensors reach nothing).
  static bool extent(const TensorView& t, std::int64_t& lo, std::int64_t& hi) {
    lo = hi = 0;
    for (int i = 0; i < t.ndim; ++i) {
      if (t.shape[i] <= 0) return false;
      const std::int64_t reach = (t.shape[i] - 1) * t.strides[i];
      (reach < 0 ? lo : hi) += reach;
    }
    return true;
  }

  void attach_data(TensorView& t) {
    const int kind = in_.ConsumeIntegralInRange<int>(0, 15);
    if (kind == 0) return;  // null data pointer
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(t.dtype));
    if (t.device.is_cuda()) {
      // A fake, usually 256-byte aligned device address; never dereferenced.
      t.data = reinterpret_cast<void*>(std::uintptr_t{0x7f0000000000} + (kind == 1 ? 2 : 256 * kind));
      return;
    }
    std::int64_t lo = 0, hi = 0;
    const bool reaches = extent(t, lo, hi);
    const std::int64_t bytes = reaches ? (hi - lo + 1) * esize : 0;
    if (bytes > kMaxTensorBytes || bytes < 0) return;  // too large: leave it null (must be rejected)
    // Exactly `bytes` so ASan sees overruns; kind 1 starts one element past a 16-byte boundary
    // (a view offset by one element: misaligned for vector loads, aligned for the element type).
    // A start that is not a multiple of the element size was found to pass validation (reported;
    // docs/RUNTIME_PROOF.md) and is not generated, so the run goes on past that finding.
    const std::size_t shift = kind == 1 ? static_cast<std::size_t>(esize) : 0;
    auto buf = std::unique_ptr<unsigned char[]>(new unsigned char[static_cast<std::size_t>(bytes) + shift]);
    unsigned char* base = buf.get() + shift;
    // Random-ish contents; float payloads are finite and small most of the time.
    for (std::int64_t i = 0; i < bytes; ++i) base[i] = static_cast<unsigned char>((i * 131 + 7) & 0x3f);
    t.data = base - lo * esize;
    buffers_.push_back(std::move(buf));
  }

  FuzzedDataProvider& in_;
  bool cuda_ = false;
  std::vector<std::unique_ptr<unsigned char[]>> buffers_;
};

}  // namespace fastinfer::fuzz
