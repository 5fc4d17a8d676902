#include <gtest/gtest.h>

#include <cmath>

#include "fakes.h"
#include "fastinfer/error.h"

namespace fastinfer::tune {
namespace {

using testing::FakeProfiler;
using testing::FakeRunner;
using testing::fake_key;
using testing::make_tuner;

TEST(CacheKey, EveryComponentTakesPart) {
  auto tuner = make_tuner();
  const RunnerKey base = fake_key();
  tuner->insert(base, 16, 3);
  EXPECT_EQ(tuner->lookup(base, 16).tactic, 3);
  EXPECT_EQ(tuner->lookup(fake_key(), 16).tactic, 3);  // an equal key built separately
  EXPECT_EQ(tuner->lookup(base, 32).source, Source::kDefault);                                   // bucket
  EXPECT_EQ(tuner->lookup(fake_key("other_op"), 16).source, Source::kDefault);                   // op
  EXPECT_EQ(tuner->lookup(RunnerKey("fake_gemm", "fake/v2", {1, 4096, 4096}, BucketMapper()), 16).source,
            Source::kDefault);                                                                   // identity
  EXPECT_EQ(tuner->lookup(fake_key("fake_gemm", {1, 4096, 8192}), 16).source, Source::kDefault);  // extras
  EXPECT_EQ(tuner->lookup(fake_key("fake_gemm", {1, 4096}), 16).source, Source::kDefault);        // extras length
  const BucketMapper custom({16, 32}, Rounding::kUp);
  EXPECT_EQ(tuner->lookup(fake_key("fake_gemm", {1, 4096, 4096}, custom), 16).source, Source::kDefault);  // mapper
}

TEST(Tuner, TuneProfilesEveryReachableBucketAndStoresTheFastest) {
  FakeProfiler* profiler = nullptr;
  // Tactic 0 wins small M, tactic 1 wins M >= 64; the default is never best.
  auto tuner = std::make_unique<Tuner>(
      std::make_unique<FakeProfiler>([](int t, std::int64_t m) { return t < 0 ? 9.0 : (t == (m >= 64 ? 1 : 0) ? 1.0 : 2.0); }),
      testing::h200_metadata);
  Scope s({.buckets = std::vector<std::int64_t>{1, 16, 64, 256}, .rounding = Rounding::kUp});
  FakeRunner runner(fake_key(), {0, 1});
  std::vector<std::size_t> progress;
  const auto results = tuner->tune(runner, 100, nullptr, {}, [&](std::size_t done, std::size_t total, const TunedBucket&) {
    progress.push_back(done);
    EXPECT_EQ(total, 4u);
  });
  ASSERT_EQ(results.size(), 4u);  // 1, 16, 64 and bucket(100) = 256, profiled at M = 100
  EXPECT_EQ(results[3].bucket, 256);
  EXPECT_EQ(results[3].m, 100);
  EXPECT_EQ(progress, (std::vector<std::size_t>{1, 2, 3, 4}));
  EXPECT_EQ(tuner->profile_count(), 12u);  // 4 buckets x (default + 2 tactics)
  EXPECT_EQ(tuner->choose(runner.key(), 10), (Choice{0, Source::kMemory}));  // bucket 16
  EXPECT_EQ(tuner->choose(runner.key(), 64), (Choice{1, Source::kMemory}));
  EXPECT_EQ(tuner->choose(runner.key(), 200), (Choice{1, Source::kMemory}));
}

TEST(Tuner, StrictMinimumWinsAndTiesKeepTheEarlierCandidate) {
  auto tuner = std::make_unique<Tuner>(
      std::make_unique<FakeProfiler>([](int t, std::int64_t) { return t == 2 ? 1.0 : (t == 5 ? 1.0 : 1.5); }),
      testing::h200_metadata);
  FakeRunner runner(fake_key(), {2, 5, 7});
  EXPECT_EQ(tuner->tune_one(runner, 8, nullptr).tactic, 2);
  auto tie_with_default =
      std::make_unique<Tuner>(std::make_unique<FakeProfiler>([](int, std::int64_t) { return 1.0; }), testing::h200_metadata);
  EXPECT_EQ(tie_with_default->tune_one(runner, 8, nullptr).tactic, -1);  // nothing beats the default strictly
}

TEST(Tuner, FailingTacticsCountAsInfinite) {
  auto tuner = std::make_unique<Tuner>(std::make_unique<FakeProfiler>([](int t, std::int64_t) -> double {
                                         if (t == 0) throw Error(Error::Kind::kRuntime, "launch failed");
                                         if (t == 1) return std::numeric_limits<double>::infinity();
                                         if (t == 2) return std::nan("");
                                         return t < 0 ? 5.0 : 4.0;
                                       }),
                                       testing::h200_metadata);
  FakeRunner runner(fake_key(), {0, 1, 2, 3});
  auto results = tuner->tune(runner, 1, nullptr);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].tactic, 3);
  EXPECT_TRUE(std::isinf(results[0].timings[1].second));  // tactic 0 (after the default)
  EXPECT_TRUE(std::isinf(results[0].timings[3].second));  // NaN becomes +inf

  auto all_fail = std::make_unique<Tuner>(
      std::make_unique<FakeProfiler>([](int, std::int64_t) { return std::numeric_limits<double>::infinity(); }),
      testing::h200_metadata);
  EXPECT_EQ(all_fail->tune_one(runner, 1, nullptr), (Choice{-1, Source::kMemory}));  // remembered: no re-profiling
}

TEST(Tuner, ProfilingDuringCaptureIsAnError) {
  FakeProfiler* profiler = nullptr;
  auto tuner = make_tuner(&profiler);
  profiler->capturing = true;
  FakeRunner runner(fake_key(), {0});
  EXPECT_THROW(tuner->tune_one(runner, 4, nullptr), Error);
  EXPECT_THROW(tuner->tune(runner, 4, nullptr), Error);
  EXPECT_EQ(tuner->profile_count(), 0u);
  EXPECT_EQ(tuner->size(), 0u);
}

TEST(Tuner, BadArgumentsAreErrors) {
  auto tuner = make_tuner();
  FakeRunner runner(fake_key(), {0});
  EXPECT_THROW(tuner->tune(runner, 0, nullptr), Error);
  EXPECT_THROW(tuner->tune_one(runner, 4, nullptr, ProfileOptions{.warmup = 3, .repeat = 0}), Error);
}

TEST(Tuner, TuneOneDoesNotProfileABucketTwice) {
  auto tuner = make_tuner();
  FakeRunner runner(fake_key(), {0, 1, 2});
  EXPECT_EQ(tuner->tune_one(runner, 5, nullptr).tactic, 2);  // bucket 8
  const auto count = tuner->profile_count();
  EXPECT_EQ(tuner->tune_one(runner, 7, nullptr).tactic, 2);  // bucket 8 again
  EXPECT_EQ(tuner->profile_count(), count);
}

TEST(Tuner, LookupOrderIsMemoryThenFileThenDefault) {
  const std::string path = ::testing::TempDir() + "/tune_lookup_order.json";
  std::remove(path.c_str());
  const RunnerKey key = fake_key();
  {
    auto writer = make_tuner();
    writer->insert(key, 8, 4);
    writer->insert(key, 16, 5);
    writer->save(path);
  }
  auto tuner = make_tuner();
  EXPECT_EQ(tuner->lookup(key, 8), (Choice{-1, Source::kDefault}));
  tuner->insert(key, 8, 7);  // memory before the file is loaded ...
  const LoadResult r = tuner->load(path);
  ASSERT_TRUE(r.loaded) << r.reason;
  EXPECT_EQ(r.entries, 2u);
  EXPECT_EQ(tuner->lookup(key, 8), (Choice{7, Source::kMemory}));  // ... still wins
  EXPECT_EQ(tuner->lookup(key, 16), (Choice{5, Source::kFile}));
  tuner->insert(key, 16, 9);  // memory after the load replaces the file entry
  EXPECT_EQ(tuner->lookup(key, 16), (Choice{9, Source::kMemory}));
  EXPECT_EQ(tuner->lookup(key, 32), (Choice{-1, Source::kDefault}));
  EXPECT_EQ(tuner->size(), 2u);
  EXPECT_EQ(tuner->memory_size(), 2u);
}

}  // namespace
}  // namespace fastinfer::tune
