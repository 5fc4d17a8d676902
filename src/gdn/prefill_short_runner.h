#pragma once
// gdn::prefill's path for many short sequences (docs/GDN_PREFILL_SHORT.md): when the caller's
// max_seqlen hint is in (0, kShortPrefillMaxTokens] and the call has no state I/O (no initial or
// output state, no checkpoints), one CTA per (sequence, k head) computes each sequence in one step
// from a zero state; sequences longer than the hint says still come out exact (a serial kernel
// runs them after). Everything else runs on the main kernel.
#include <cstdint>
#include <memory>

#include "fastinfer/context.h"
#include "fastinfer/gdn_prefill.h"
#include "gdn/prefill_params.h"
#include "gdn/prefill_runner.h"
#include "gdn/prefill_short_launch.h"

namespace fastinfer::gdn {

// Immutable per (device, input dtype): built once (shared-memory opt-in), run() only launches.
class ShortPrefillRunner {
 public:
  explicit ShortPrefillRunner(const PrefillRunnerKey& key);
  // The params the short kernel computes: no states, checkpoints, segments or precomputed inverses.
  static bool can_implement(const PrefillParams& params);
  // max_tokens: the longest sequence expected (the hint); it picks the 32- or 64-token kernel.
  // ctas: 0 = one CTA per item (the default: H200 pshort batch 2, faster than persistent CTAs on every
  // bench row, e.g. 8192x32 16/64 3.50 vs 5.36 ms); > 0: that many persistent CTAs, each prefetching
  // its next item into the L2; < 0: as many persistent CTAs as are resident on the device.
  void run(const PrefillParams& params, std::int64_t max_tokens, Stream stream, std::int64_t ctas = 0) const;

 private:
  using Launch = void (*)(const PrefillParams&, int, std::int64_t, Stream);
  PrefillRunnerKey key_;
  Launch launch_;
  ShortOccupancy occupancy_;
  int sm_count_;
};

std::shared_ptr<const ShortPrefillRunner> short_prefill_runner(const PrefillRunnerKey& key);

// gdn::prefill's short path for validated arguments on a CUDA device: runs it and returns true when
// the hint is in (0, kShortPrefillMaxTokens] and the call has no state I/O; else returns false.
struct PrefillShape;
bool run_prefill_short_if_taken(const PrefillArgs& args, const PrefillShape& shape, const ExecContext& ctx);

// For tests and benchmarks: the short path whatever the hint (validate, resolve the context, the
// cached runner; the 32-token kernel for a hint in (0, 32], else the 64-token one); CUDA tensors
// only, an error for arguments it does not support. ctas as ShortPrefillRunner::run.
void prefill_short(const PrefillArgs& args, Stream stream = nullptr, std::int64_t ctas = 0);

}  // namespace fastinfer::gdn
