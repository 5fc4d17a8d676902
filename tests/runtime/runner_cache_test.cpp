#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "runtime/runner_cache.h"

namespace fastinfer {
namespace {

struct FakeRunner {
  int config;
};

TEST(RunnerCache, SameKeySameRunnerDifferentKeyDifferentRunner) {
  RunnerCache<std::string, FakeRunner> cache;
  int builds = 0;
  auto make = [&](int c) {
    return [&builds, c] {
      ++builds;
      return std::make_shared<const FakeRunner>(FakeRunner{c});
    };
  };
  auto a = cache.get_or_create("bf16/tile128", make(1));
  auto b = cache.get_or_create("bf16/tile128", make(2));
  auto c = cache.get_or_create("bf16/tile64", make(3));
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->config, 1);
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(RunnerCache, EightThreadsAgreeOnOneRunnerPerKey) {
  RunnerCache<int, FakeRunner> cache;
  constexpr int kThreads = 8, kKeys = 16, kIters = 2000;
  std::vector<std::vector<const FakeRunner*>> seen(kThreads, std::vector<const FakeRunner*>(kKeys, nullptr));
  std::atomic<bool> consistent{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        const int key = (i * 7 + t) % kKeys;
        auto r = cache.get_or_create(key, [key] { return std::make_shared<const FakeRunner>(FakeRunner{key}); });
        if (r->config != key) consistent = false;
        if (seen[t][key] == nullptr) seen[t][key] = r.get();
        if (seen[t][key] != r.get()) consistent = false;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(consistent);
  EXPECT_EQ(cache.size(), static_cast<std::size_t>(kKeys));
  for (int key = 0; key < kKeys; ++key)
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][key], seen[0][key]) << "key " << key;
}

}  // namespace
}  // namespace fastinfer
