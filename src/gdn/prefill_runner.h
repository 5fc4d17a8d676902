#pragma once
// The GDN prefill runner: an immutable object per (device, input dtype) that launches the
// warp-specialised kernel (docs/GDN_PREFILL_FAST.md). Built once (it opts the kernel into its
// shared memory on the device) and cached by gdn::prefill; run() only launches.
#include <cstddef>
#include <memory>

#include "fastinfer/context.h"
#include "gdn/prefill_params.h"

namespace fastinfer::gdn {

struct PrefillRunnerKey {
  int device = 0;
  InputType input = InputType::kBFloat16;
  bool operator==(const PrefillRunnerKey&) const = default;
};

struct PrefillRunnerKeyHash {
  std::size_t operator()(const PrefillRunnerKey& k) const noexcept {
    return static_cast<std::size_t>(k.device) * 31u + static_cast<std::size_t>(k.input);
  }
};

// Where the kernel gets each chunk's T = (I + A0)^-1 on calls without a chunk_inverse of their
// own (non-CP calls): solved by the kernel's producer, or precomputed for all chunks in parallel by
// CP stage 1 first (prefill_inverse.h), either as the gate-free Tinv (the consumers build T_g from
// it, as CP stage 4 does) or as T_g itself.
// kAuto: T_g precomputed, except for tiny calls (tiny_prefill_call), where the kernel alone (one
// launch instead of three) solves T.
enum class InverseSource : std::uint8_t { kSolveInKernel, kPrecompute, kPrecomputeGated, kAuto };
// gdn::prefill's choice (docs/GDN_PREFILL_FAST.md, "Measured").
inline constexpr InverseSource kDefaultInverseSource = InverseSource::kAuto;

// At most this many chunks per persistent CTA (bounded from the host-known sizes: T / 64 + N chunks
// per head) make a call tiny: the kernel solves T itself instead of waiting for the chunk table
// and stage 1 (H200, session 4 batch 1: see docs/GDN_PREFILL_FAST.md).
inline constexpr std::int64_t kTinyCallChunksPerCta = 2;
bool tiny_prefill_call(const PrefillParams& params, int sm_count);

// Launch choices that tests and benchmarks vary; gdn::prefill uses the defaults.
struct PrefillRunOptions {
  InverseSource inverse = kDefaultInverseSource;
  int ctas = 0;                           // persistent CTAs; 0 = the SM count
  unsigned long long* profile = nullptr;  // a zeroed device FastProfile (prefill_fast_launch.h)
  bool precompute_only = false;           // benchmarks: launch the chunk table and stage 1, not the kernel
  std::size_t precompute_max_bytes = 0;   // workspace cap of one head group's precomputed T; 0 = kMaxPrecomputedInverseBytes
};

class PrefillRunner {
 public:
  explicit PrefillRunner(const PrefillRunnerKey& key);

  // Whether the kernel supports these params: segment hooks complete or absent.
  static bool can_implement(const PrefillParams& params);
  void run(const PrefillParams& params, Stream stream, const PrefillRunOptions& options = {}) const;

 private:
  using Launch = void (*)(const PrefillParams&, int, Stream, unsigned long long*);
  PrefillRunnerKey key_;
  Launch launch_;
  int sm_count_;
};

// The cached runner of `key` (built on first use).
std::shared_ptr<const PrefillRunner> prefill_runner(const PrefillRunnerKey& key);

// The kernel params of validated arguments (defined in prefill.cpp; the CP pipeline adds its
// segment hooks to them).
struct PrefillShape;
struct PrefillArgs;
PrefillParams make_prefill_params(const PrefillArgs& args, const PrefillShape& shape);

// For tests and benchmarks: gdn::prefill's non-CP path (validate, resolve the context, the cached
// runner) with explicit launch options. CUDA tensors only.
void prefill_with_options(const PrefillArgs& args, Stream stream, const PrefillRunOptions& options);

}  // namespace fastinfer::gdn
