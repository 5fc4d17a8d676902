#pragma once
// DecodeRunner: an immutable launcher for one decode configuration (activation dtype, state dtype,
// tactic), cached per configuration; and the heuristic that picks the tactic for a call.
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "fastinfer/context.h"
#include "fastinfer/dtype.h"
#include "gdn/decode_launch.h"
#include "gdn/decode_params.h"

namespace fastinfer {
struct DeviceInfo;
}

namespace fastinfer::gdn {

// How the state rows are spread over a CTA: lanes_per_row lanes share a row, each thread keeps
// rows_per_thread rows in registers, a CTA has `warps` (consumer) warps and works on blocks of
// warps * (32 / lanes_per_row) * rows_per_thread of the 128 rows of one (sequence, head) state.
// ctas_per_sm == 0: the register kernel, one CTA per block, loads straight into registers.
// ctas_per_sm > 0: the pipelined kernel, that many persistent CTAs per SM (each with one more,
// producer, warp) streaming blocks through a ring of shared-memory stages with bulk copies.
// chunked: the tensor-core kernel (bf16 pools; decode_chunked_sm90.cuh), pipelined like the
// above with whole-state tiles, lanes_per_row = 4 (an mma quad) and 2 rows per thread.
// small_batch: the register kernel's latency variant for a few states per SM
// (decode_small_sm90.cuh; ctas_per_sm == 0): slot-independent loads first, no CTA barrier.
// state_major (tensor-core kernel, half states): a CTA takes both tiles of a state back to back
// and prepares the tokens once per state.
// dynamic_items (pipelined kernel): after each CTA's first two tiles, tiles are claimed from a
// per-stream counter, so that SMs that stream faster take more of them.
// claimed_tail (with dynamic_items, session 8): most of a CTA's tiles in the static order first
// (kDecodeClaimedTailStaticPercent of its even share), only the rest claimed; the tensor-core
// kernel's (state-major, kDecodeChunkedTailStaticPercent) claims whole states.
struct DecodeTactic {
  int lanes_per_row = 8;
  int rows_per_thread = 2;
  int warps = 4;
  int ctas_per_sm = 0;
  bool chunked = false;
  bool small_batch = false;
  bool state_major = false;
  bool dynamic_items = false;
  bool claimed_tail = false;
  friend bool operator==(const DecodeTactic&, const DecodeTactic&) = default;

  int rows_per_cta() const { return warps * (32 / lanes_per_row) * rows_per_thread; }
  bool pipelined() const { return ctas_per_sm > 0; }
};

struct DecodeConfig {
  DType act = DType::kBFloat16;
  DType state = DType::kFloat32;
  DecodeTactic tactic{};
  friend bool operator==(const DecodeConfig&, const DecodeConfig&) = default;
};

struct DecodeConfigHash {
  std::size_t operator()(const DecodeConfig& c) const noexcept {
    std::size_t h = static_cast<std::size_t>(c.act) * 31 + static_cast<std::size_t>(c.state);
    h = h * 31 + static_cast<std::size_t>(c.tactic.lanes_per_row);
    h = h * 31 + static_cast<std::size_t>(c.tactic.rows_per_thread);
    h = h * 31 + static_cast<std::size_t>(c.tactic.warps);
    h = h * 31 + static_cast<std::size_t>(c.tactic.ctas_per_sm);
    h = h * 2 + static_cast<std::size_t>(c.tactic.chunked);
    h = h * 2 + static_cast<std::size_t>(c.tactic.small_batch);
    h = h * 2 + static_cast<std::size_t>(c.tactic.state_major);
    h = h * 2 + static_cast<std::size_t>(c.tactic.dynamic_items);
    return h * 2 + static_cast<std::size_t>(c.tactic.claimed_tail);
  }
};

class DecodeRunner {
 public:
  // Whether a kernel is instantiated for `config` (dtypes and tactic shape).
  static bool can_implement(const DecodeConfig& config);
  // Throws fastinfer::Error when !can_implement(config).
  explicit DecodeRunner(const DecodeConfig& config);

  const DecodeConfig& config() const { return config_; }
  // Launches on `stream` (the device must be current). No allocation, no synchronisation.
  void run(const DecodeParams& params, Stream stream) const {
    if (pipelined_launch_) pipelined_launch_(params, stream);
    else launch_(params, config_.tactic.warps, stream);
  }

 private:
  DecodeConfig config_;
  DecodeLauncher launch_ = nullptr;
  PipelinedDecodeLauncher pipelined_launch_ = nullptr;
};

// Every tactic instantiated for activations `act` and pool `state` (tests, benchmark sweeps).
std::vector<DecodeTactic> decode_tactics(DType act, DType state);

// The cached runner of `config` (built on first use).
std::shared_ptr<const DecodeRunner> decode_runner(const DecodeConfig& config);

// The tactic the dispatch uses for `batch` sequences of `heads_v` state heads on `device`.
DecodeTactic choose_decode_tactic(DType state, long long batch, int heads_v, int tokens, const DeviceInfo& device);

}  // namespace fastinfer::gdn
