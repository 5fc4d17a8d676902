#pragma once
// The GDN prefill runner: an immutable object per (device, input dtype) that owns the kernel
// choice and launches it. Built once (it opts the kernel into its shared memory on the device)
// and cached by gdn::prefill; run() only launches.
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

class PrefillRunner {
 public:
  explicit PrefillRunner(const PrefillRunnerKey& key);

  // Whether the kernel supports these params: segment hooks complete or absent, no chunk_inverse.
  static bool can_implement(const PrefillParams& params);
  // No scratch: the chunked kernel keeps everything on chip.
  static constexpr std::size_t workspace_size(const PrefillParams&) { return 0; }
  void run(const PrefillParams& params, Stream stream) const;

 private:
  using Launch = void (*)(const PrefillParams&, Stream);
  PrefillRunnerKey key_;
  Launch launch_;
};

// The cached runner of `key` (built on first use).
std::shared_ptr<const PrefillRunner> prefill_runner(const PrefillRunnerKey& key);

// The kernel params of validated arguments (defined in prefill.cpp; the CP pipeline adds its
// segment hooks to them).
struct PrefillShape;
struct PrefillArgs;
PrefillParams make_prefill_params(const PrefillArgs& args, const PrefillShape& shape);

}  // namespace fastinfer::gdn
