// WorkspacePool key semantics with a fake allocator (no GPU needed).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "fastinfer/error.h"
#include "runtime/workspace_pool.h"

namespace fastinfer {
namespace {

class FakeAllocator final : public WorkspaceAllocator {
 public:
  struct State {
    std::mutex mutex;
    std::set<void*> live;
    int allocations = 0;
    int releases = 0;
    std::atomic<bool> capturing{false};
  };
  explicit FakeAllocator(State* s) : s_(s) {}
  void* allocate(int, Stream, std::size_t bytes) override {
    std::lock_guard lock(s_->mutex);
    void* p = ::operator new(bytes);
    s_->live.insert(p);
    ++s_->allocations;
    return p;
  }
  void release(int device, Stream, void* ptr) override { release_now(device, ptr); }
  void release_now(int, void* ptr) override {
    std::lock_guard lock(s_->mutex);
    EXPECT_EQ(s_->live.erase(ptr), 1u) << "double or foreign release";
    ::operator delete(ptr);
    ++s_->releases;
  }
  bool is_capturing(int, Stream) override { return s_->capturing; }

 private:
  State* s_;
};

Stream stream(std::uintptr_t id) { return reinterpret_cast<Stream>(id); }

TEST(WorkspacePool, SameKeySameBlockAndNoAllocationOnHit) {
  FakeAllocator::State s;
  WorkspacePool pool(std::make_unique<FakeAllocator>(&s));
  void* a = pool.get(0, stream(1), "gdn.cp", 1000);
  void* b = pool.get(0, stream(1), "gdn.cp", 1000);
  void* c = pool.get(0, stream(1), "gdn.cp", 10);  // smaller request: still a hit
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(s.allocations, 1);
  EXPECT_GE(pool.capacity(0, stream(1), "gdn.cp"), 1000u);
}

TEST(WorkspacePool, DifferentStreamDeviceOrNameGetDistinctBlocks) {
  FakeAllocator::State s;
  WorkspacePool pool(std::make_unique<FakeAllocator>(&s));
  std::set<void*> blocks = {pool.get(0, stream(1), "a", 64), pool.get(0, stream(2), "a", 64),
                            pool.get(1, stream(1), "a", 64), pool.get(0, stream(1), "b", 64)};
  EXPECT_EQ(blocks.size(), 4u);
  EXPECT_EQ(pool.block_count(), 4u);
}

TEST(WorkspacePool, GrowthReplacesTheBlockAndReleasesTheOldOne) {
  FakeAllocator::State s;
  WorkspacePool pool(std::make_unique<FakeAllocator>(&s));
  pool.get(0, stream(1), "a", 1 << 20);
  const std::size_t cap = pool.capacity(0, stream(1), "a");
  pool.get(0, stream(1), "a", cap + 1);
  EXPECT_EQ(s.allocations, 2);
  EXPECT_EQ(s.releases, 1);
  EXPECT_GT(pool.capacity(0, stream(1), "a"), cap);
  EXPECT_EQ(s.live.size(), 1u);
}

TEST(WorkspacePool, GrowthDuringCaptureFailsWithAClearMessageAndKeepsTheBlock) {
  FakeAllocator::State s;
  WorkspacePool pool(std::make_unique<FakeAllocator>(&s));
  void* before = pool.get(0, stream(7), "gdn.cp", 100);
  const std::size_t cap = pool.capacity(0, stream(7), "gdn.cp");
  s.capturing = true;
  EXPECT_EQ(pool.get(0, stream(7), "gdn.cp", cap), before);  // a hit is fine during capture
  try {
    pool.get(0, stream(7), "gdn.cp", cap + 1);
    FAIL() << "growth during capture succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("workspace 'gdn.cp' on cuda:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("capturing a CUDA graph"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reserve_workspace"), std::string::npos) << msg;
  }
  EXPECT_THROW(pool.reserve(0, stream(7), "new", 1), Error);
  EXPECT_EQ(pool.capacity(0, stream(7), "gdn.cp"), cap);
  s.capturing = false;
  pool.reserve(0, stream(7), "gdn.cp", cap * 4);  // reserve before capture ...
  s.capturing = true;
  EXPECT_NE(pool.get(0, stream(7), "gdn.cp", cap * 4), nullptr);  // ... makes the capture-time get a hit
}

TEST(WorkspacePool, ReleaseAllFreesEverything) {
  FakeAllocator::State s;
  {
    WorkspacePool pool(std::make_unique<FakeAllocator>(&s));
    pool.get(0, stream(1), "a", 10);
    pool.get(0, stream(2), "a", 10);
    pool.release_all();
    EXPECT_EQ(pool.block_count(), 0u);
    EXPECT_TRUE(s.live.empty());
    pool.get(0, stream(3), "a", 10);
  }  // the destructor frees the rest
  EXPECT_TRUE(s.live.empty());
  EXPECT_EQ(s.allocations, s.releases);
}

TEST(WorkspacePool, EightThreadsOnOwnStreamsNeverShareAndAgreeWithinAStream) {
  FakeAllocator::State s;
  WorkspacePool pool(std::make_unique<FakeAllocator>(&s));
  constexpr int kThreads = 8;
  std::vector<std::set<void*>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        // Same size every time after the first: exactly one block per thread's stream.
        per_thread[t].insert(pool.get(0, stream(100 + t), "shared-name", 4096));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<void*> all;
  for (auto& ps : per_thread) {
    EXPECT_EQ(ps.size(), 1u);
    all.insert(ps.begin(), ps.end());
  }
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads));
  EXPECT_EQ(s.allocations, kThreads);
}

TEST(WorkspacePool, ConcurrentGrowthOnOneKeyEndsWithOneLiveBlock) {
  FakeAllocator::State s;
  WorkspacePool pool(std::make_unique<FakeAllocator>(&s));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) pool.get(0, stream(1), "grow", (std::size_t(i % 50) + t) << 20);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(s.live.size(), 1u);
  EXPECT_GE(pool.capacity(0, stream(1), "grow"), std::size_t{56} << 20);
}

}  // namespace
}  // namespace fastinfer
