#pragma once
// Fake runners and a fake profiler: the whole tuner runs on the CPU with chosen "timings".
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <mutex>

#include "fastinfer/error.h"
#include "fastinfer/tune.h"

namespace fastinfer::tune::testing {

inline RunnerKey fake_key(const std::string& op = "fake_gemm", std::vector<std::int64_t> extras = {1, 4096, 4096},
                          const BucketMapper& mapper = current_mapper()) {
  return RunnerKey(op, "fake/v1/tile128", std::move(extras), mapper);
}

class FakeRunner : public TunableRunner {
 public:
  FakeRunner(RunnerKey key, std::vector<int> tactics) : key_(std::move(key)), tactics_(std::move(tactics)) {}
  const RunnerKey& key() const override { return key_; }
  std::vector<int> tactics(const Problem&) const override { return tactics_; }
  void run(const Problem&, int, Stream) const override { ++runs; }
  std::string tactic_name(int t) const override { return t < 0 ? "default" : "tile" + std::to_string(t); }
  mutable std::atomic<int> runs{0};

 private:
  RunnerKey key_;
  std::vector<int> tactics_;
};

// Times come from `time(tactic, m)`; +inf or a throw models a failing tactic.
class FakeProfiler : public Profiler {
 public:
  using TimeFn = std::function<double(int tactic, std::int64_t m)>;
  explicit FakeProfiler(TimeFn time) : time_(std::move(time)) {}
  double measure(const TunableRunner&, const Problem& p, int tactic, Stream, const ProfileOptions&) override {
    std::lock_guard lock(mutex_);
    measured.emplace_back(tactic, p.m);
    return time_(tactic, p.m);
  }
  void check_not_capturing(Stream) override {
    if (capturing) throw Error(Error::Kind::kRuntime, "tune: cannot profile while a CUDA graph is being captured");
  }
  bool capturing = false;
  std::vector<std::pair<int, std::int64_t>> measured;

 private:
  std::mutex mutex_;
  TimeFn time_;
};

inline Metadata h200_metadata() { return {"NVIDIA H200", "9.0", "13.0", "0.1.0"}; }

// A tuner whose profiler says tactic `best` is fastest at every M (others 2 ms, default 3 ms).
inline std::unique_ptr<Tuner> make_tuner(FakeProfiler** out = nullptr, int best = 2,
                                         std::function<Metadata()> meta = h200_metadata) {
  auto profiler = std::make_unique<FakeProfiler>([best](int t, std::int64_t) {
    return t == best ? 1.0 : (t < 0 ? 3.0 : 2.0);
  });
  if (out) *out = profiler.get();
  return std::make_unique<Tuner>(std::move(profiler), std::move(meta));
}

}  // namespace fastinfer::tune::testing
