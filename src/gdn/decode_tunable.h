#pragma once
// gdn::decode and the autotuner (docs/TUNING.md): the op runner of one decode configuration, its
// tactics as tuner ids, and the runner bound to a call's live inputs for tune mode.
//
// Tuner key: op "gdn_decode", identity "gdn_decode/v6/act=<dtype>/state=<dtype>", extras
// {act dtype, state dtype, tokens, heads_qk, heads_v}, the calling thread's mapper; the bucketed
// dimension is the batch B. Tactic id i is decode_tactics(act, state)[i]; -1 is the heuristic
// choose_decode_tactic (the untuned default).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fastinfer/tune.h"
#include "gdn/decode_params.h"
#include "gdn/decode_runner.h"

namespace fastinfer::gdn::detail {

inline constexpr const char* kDecodeTuneOp = "gdn_decode";

// Immutable: the tactic runners of one (act, state, tokens, heads, SM count, mapper), built once.
class DecodeOpRunner {
 public:
  DecodeOpRunner(DType act, DType state, int tokens, int heads_qk, int heads_v, int sm_count,
                 const tune::BucketMapper& mapper);

  const tune::RunnerKey& tune_key() const { return key_; }
  DType state() const { return state_; }
  int tactic_count() const { return static_cast<int>(tactics_.size()); }
  const DecodeTactic& tactic(int id) const { return tactics_[static_cast<std::size_t>(id)]; }
  std::string tactic_name(int id) const;  // "default" for -1
  // The tactic id the heuristic picks for `batch` sequences (always listed).
  int default_tactic(std::int64_t batch) const;
  // Launches `tactic` (-1: the heuristic) on `stream` (the device must be current).
  void run(const DecodeParams& params, int tactic, Stream stream) const {
    const int id = tactic >= 0 && tactic < tactic_count() ? tactic : default_tactic(params.batch);
    runners_[static_cast<std::size_t>(id)]->run(params, stream);
  }

 private:
  DType act_, state_;
  int tokens_, heads_v_, sm_count_;
  std::vector<DecodeTactic> tactics_;
  std::vector<std::shared_ptr<const DecodeRunner>> runners_;
  tune::RunnerKey key_;
};

// The cached op runner for (device, act, state, tokens, heads) under the calling thread's mapper.
std::shared_ptr<const DecodeOpRunner> decode_op_runner(int device, DType act, DType state, int tokens, int heads_qk,
                                                       int heads_v);

// One call bound for profiling (tune mode). The live pool is never written: the call's states are
// copied into a scratch pool that the profiled launches update in place (the same traffic as the
// call). When that pool cannot be allocated, the launches run without the state update.
class BoundDecode : public tune::TunableRunner {
 public:
  BoundDecode(std::shared_ptr<const DecodeOpRunner> runner, const DecodeParams& params, int device, Stream stream);
  ~BoundDecode() override;
  const tune::RunnerKey& key() const override { return runner_->tune_key(); }
  std::vector<int> tactics(const tune::Problem& problem) const override;
  void run(const tune::Problem& problem, int tactic, Stream stream) const override;
  std::string tactic_name(int tactic) const override { return runner_->tactic_name(tactic); }

 private:
  std::shared_ptr<const DecodeOpRunner> runner_;
  DecodeParams params_;
  int device_;
  void* scratch_ = nullptr;  // [B, HV, 128, 128] pool + [2 B] int32 slots, or null
};

// Factory of `fastinfer tune --op gdn_decode[_bf16state]`: a random problem of max_m sequences,
// n state heads (q/k heads n / 2 when n is even: Qwen3-Next's GVA), k tokens (1 when 0).
std::unique_ptr<tune::TunableRunner> make_tunable_decode(const tune::TuneRequest& request, DType state);

}  // namespace fastinfer::gdn::detail
