// The autotuner's hot path: what an op pays per call to pick its tactic (bucket M with the
// effective mapper, then a cache hit). Host-only; no GPU needed.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "fastinfer/tune.h"
#include "routines.h"

namespace fastinfer::bench {
namespace {

// Best-of-batches mean time per call in ns: the floor the hot path costs when nothing interferes.
template <class Fn>
double best_ns_per_call(Fn&& fn, int calls, int batches) {
  double best = 1e300;
  for (int b = 0; b < batches; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn(i);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  }
  return best;
}

nlohmann::json run_tune_lookup(const BenchOptions& options) {
  tune::Tuner tuner(tune::make_cuda_profiler(), [] { return tune::Metadata{}; });
  const tune::RunnerKey key("mm_bf16_fp4", "bench/v1", {2, 28672, 4096}, tune::current_mapper());
  for (std::int64_t b : key.mapper().buckets()) tuner.insert(key, b, static_cast<int>(b % 7));
  for (int op = 0; op < 256; ++op)  // a realistic table: many ops and shapes
    tuner.insert(tune::RunnerKey("op" + std::to_string(op), "bench/v1", {op}, tune::current_mapper()), 16, 1);

  const int calls = options.quick ? 100000 : 1000000, batches = options.quick ? 5 : 15;
  volatile int sink = 0;
  const double bucket_ns = best_ns_per_call([&](int i) { sink = sink + static_cast<int>(tune::current_mapper().bucket(1 + (i & 8191))); }, calls, batches);
  const double lookup_ns = best_ns_per_call([&](int i) { sink = sink + tuner.lookup(key, 1 << (i & 7)).tactic; }, calls, batches);
  const double choose_ns = best_ns_per_call([&](int i) { sink = sink + tuner.choose(key, 1 + (i & 8191)).tactic; }, calls, batches);
  const double miss_ns = best_ns_per_call([&](int i) { sink = sink + tuner.lookup(key, 3 + 2 * (i & 7)).tactic; }, calls, batches);
  std::printf("tune hot path (host): bucket %.1f ns, lookup hit %.1f ns, choose (bucket + hit) %.1f ns, miss %.1f ns\n",
              bucket_ns, lookup_ns, choose_ns, miss_ns);
  return {{"bucket_ns", bucket_ns}, {"lookup_hit_ns", lookup_ns}, {"choose_hit_ns", choose_ns}, {"lookup_miss_ns", miss_ns},
          {"entries", tuner.size()}, {"budget_ns", 100}};
}

const RoutineRegistration registration{{"tune_lookup", "autotuner cache-hit cost per op call (host)", run_tune_lookup}};

}  // namespace
}  // namespace fastinfer::bench
