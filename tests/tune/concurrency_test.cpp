// Thread safety under 8 threads, the cost of a cache hit (no allocation, < 100 ns) and the
// scope's cache-file hooks on the process-wide tuner.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <thread>

#include "fakes.h"
#include "fastinfer/build_info.h"
#include "fastinfer/version.h"

// Counts allocations of the calling thread (the whole test binary uses this operator new).
namespace {
thread_local std::size_t tl_allocations = 0;
}
void* operator new(std::size_t bytes) {
  ++tl_allocations;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace fastinfer::tune {
namespace {

using testing::fake_key;
using testing::FakeRunner;
using testing::make_tuner;

TEST(Concurrency, EightThreadsLookUpTuneAndInsertConsistently) {
  auto tuner = make_tuner(nullptr, /*best=*/1);
  constexpr int kThreads = 8;
  std::atomic<int> wrong{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go) {}
      const RunnerKey mine = fake_key("op" + std::to_string(t % 4));
      FakeRunner runner(mine, {0, 1, 2});
      for (int i = 0; i < 300; ++i) {
        const std::int64_t m = 1 + (i * 37 + t) % 5000;
        if (t % 2 == 0) {
          // Readers of another op's key: a hit must be a value some writer stored.
          const Choice c = tuner->choose(fake_key("op" + std::to_string((t + 1) % 4)), m);
          if (c.source == Source::kMemory && c.tactic != 1 && c.tactic != 100 + (t + 1) % 4) ++wrong;
          if (c.source == Source::kFile) ++wrong;
        } else if (i % 3 == 0) {
          if (tuner->tune_one(runner, m, nullptr).tactic != 1) ++wrong;
        } else {
          tuner->insert(mine, BucketMapper().bucket(m) * 1000003, 100 + t % 4);  // buckets nobody tunes
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  // Every tuned bucket is there, profiled exactly once despite the races.
  std::size_t tuned = 0;
  for (int t = 1; t < kThreads; t += 2)
    for (std::int64_t b : BucketMapper().keys_up_to(5000))
      tuned += tuner->lookup(fake_key("op" + std::to_string(t % 4)), b) == Choice{1, Source::kMemory};
  EXPECT_GT(tuned, 0u);
  EXPECT_EQ(tuner->profile_count(), 4 * (tuned / 2));  // (default + 3 tactics) per bucket, op1 and op3 share nothing
}

TEST(HotPath, CacheHitAllocatesNothingAndTakesUnder100ns) {
  auto tuner = make_tuner();
  const RunnerKey key = fake_key();
  for (std::int64_t b : BucketMapper().buckets()) tuner->insert(key, b, static_cast<int>(b % 5));
  for (int op = 0; op < 64; ++op) tuner->insert(fake_key("other" + std::to_string(op)), 16, 1);  // a fuller table

  const std::size_t before = tl_allocations;
  int sink = 0;
  for (std::int64_t m = 1; m < 10000; ++m) sink += tuner->choose(key, m).tactic;
  EXPECT_EQ(tl_allocations, before) << "a cache hit allocated";
  EXPECT_EQ(tuner->choose(key, 3).source, Source::kMemory);

  double best_ns = 1e9;
  constexpr int kCalls = 200000;
  for (int batch = 0; batch < 15; ++batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) sink += tuner->choose(key, 1 + (i & 4095)).tactic;
    const auto t1 = std::chrono::steady_clock::now();
    best_ns = std::min(best_ns, std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls);
  }
  std::printf("choose() cache hit: %.1f ns (best of 15 batches of %d)\n", best_ns, kCalls);
  EXPECT_LT(best_ns, 100.0);
  EXPECT_NE(sink, 0);
}

TEST(ScopeCacheFile, LoadsOnOpenAndSavesOnCloseInTuneMode) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "tune_scope_cache";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string in_path = (dir / "in.json").string(), out_path = (dir / "out.json").string();
  // A file this process accepts with or without a GPU (GPU fields unknown).
  const RunnerKey key = RunnerKey("scope_test_op", "v1", {7}, BucketMapper());
  {
    auto writer = make_tuner(nullptr, 2, [] { return Metadata{"", "", build::kCudaVersion, version()}; });
    writer->insert(key, 64, 3);
    writer->save(in_path);
  }
  {
    Scope s({.cache_file = in_path});
    EXPECT_EQ(current_cache_file(), in_path);
    EXPECT_EQ(Tuner::global().choose(key, 50), (Choice{3, Source::kFile}));
  }
  EXPECT_FALSE(fs::exists(out_path));
  const RunnerKey key2 = RunnerKey("scope_test_op", "v1", {8}, BucketMapper());
  {
    Scope s({.tune_mode = true, .cache_file = out_path});
    Tuner::global().insert(key2, 16, 2);
  }
  auto reader = make_tuner(nullptr, 2, [] { return Metadata{"", "", build::kCudaVersion, version()}; });
  ASSERT_TRUE(reader->load(out_path).loaded);
  EXPECT_EQ(reader->lookup(key2, 16), (Choice{2, Source::kFile}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fastinfer::tune
