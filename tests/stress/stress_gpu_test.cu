// Concurrency stress (issue 9): 8 host threads, each with 4 streams of its own, issue 4000 calls
// per thread, 1000 per stream (FASTINFER_STRESS_CALLS overrides the per-thread count), that mix
// every op on different problems. Every call's
// results must be bit-identical to the same call run alone; no call may throw; after warm-up the
// device memory in use and the workspace pool must stay flat.
//
// Each (thread, stream) lane owns private outputs per problem (inputs are shared, read-only).
// After every call a compare kernel on the same stream counts the words that differ from the
// solo run's bytes (uploaded once), so the host never synchronises inside the loop.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "runtime/workspace_pool.h"
#include "stress/gpu_ops.h"
#include "support/gpu_test.h"

namespace fastinfer::testing {
namespace {

constexpr int kThreads = 8;
constexpr int kStreamsPerThread = 4;

__global__ void count_mismatches(const std::uint32_t* got, const std::uint32_t* want, std::size_t words,
                                 unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += got[i] != want[i];
  if (local) atomicAdd(mismatches, local);
}

void launch_compare(const DeviceBuffer& got, const DeviceBuffer& want, unsigned long long* counter, cudaStream_t s) {
  const std::size_t words = got.bytes() / 4;
  const int blocks = static_cast<int>(std::min<std::size_t>((words + 255) / 256, 64));
  count_mismatches<<<std::max(blocks, 1), 256, 0, s>>>(got.as<std::uint32_t>(), want.as<std::uint32_t>(), words, counter);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

int calls_per_thread() {
  const char* env = std::getenv("FASTINFER_STRESS_CALLS");
  return env ? std::max(1, std::atoi(env)) : 4000;  // 1000 per stream; about 1 s on the H200
}

struct MemorySnapshot {
  std::size_t free_bytes = 0;
  std::size_t pool_blocks = 0;
};
MemorySnapshot memory_now() {
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  MemorySnapshot m;
  std::size_t total = 0;
  FASTINFER_CUDA_CHECK(cudaMemGetInfo(&m.free_bytes, &total));
  m.pool_blocks = WorkspacePool::global().block_count();
  return m;
}

class StressGpu : public GpuTest {};

TEST_F(StressGpu, ThreadsStreamsMixedOpsBitIdenticalNoLeak) {
  const auto problems = make_all_problems(4242);
  const int num_problems = static_cast<int>(problems.size());
  const int lanes = kThreads * kStreamsPerThread;

  // 1. Each problem run alone on its own stream: the bytes every concurrent run must reproduce.
  std::vector<std::vector<DeviceBuffer>> golden(num_problems);
  {
    cudaStream_t solo;
    FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&solo, cudaStreamNonBlocking));
    for (int p = 0; p < num_problems; ++p) {
      auto inst = problems[p]->make_instance();
      inst->prepare(solo);
      inst->call(solo);
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(solo));
      for (const DeviceBuffer* r : inst->results()) {
        ASSERT_EQ(r->bytes() % 4, 0u) << problems[p]->name();
        std::vector<unsigned char> host(r->bytes());
        r->download(host.data());
        // The solo run must have written something (outputs start as 0xFF poison).
        std::size_t poison = 0;
        for (unsigned char b : host) poison += b == 0xFF;
        EXPECT_LT(poison, host.size()) << problems[p]->name() << ": a result is all poison";
        golden[p].emplace_back(r->bytes());
        golden[p].back().upload(host.data());
      }
    }
    FASTINFER_CUDA_CHECK(cudaStreamDestroy(solo));
  }

  // 2. Lanes: a stream and private instances of every problem; one mismatch counter per
  // (lane, problem).
  std::vector<cudaStream_t> streams(lanes);
  std::vector<std::vector<std::unique_ptr<OpInstance>>> instances(lanes);
  for (int l = 0; l < lanes; ++l) {
    FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[l], cudaStreamNonBlocking));
    for (const auto& p : problems) instances[l].push_back(p->make_instance());
  }
  DeviceBuffer counters(sizeof(unsigned long long) * lanes * num_problems);
  FASTINFER_CUDA_CHECK(cudaMemset(counters.get(), 0, counters.bytes()));
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());  // the lanes' non-blocking streams do not wait for the memset
  auto counter = [&](int lane, int p) { return counters.as<unsigned long long>() + lane * num_problems + p; };
  auto run_one = [&](int lane, int p) {
    OpInstance& inst = *instances[lane][p];
    inst.prepare(streams[lane]);
    inst.call(streams[lane]);
    const auto results = inst.results();
    for (std::size_t r = 0; r < results.size(); ++r)
      launch_compare(*results[r], golden[p][r], counter(lane, p), streams[lane]);
  };

  // 3. Warm-up: every lane runs every problem once (runners built, workspaces grown).
  for (int l = 0; l < lanes; ++l)
    for (int p = 0; p < num_problems; ++p) run_one(l, p);
  const MemorySnapshot before = memory_now();

  // 4. The stress: each thread drives its own 4 streams with a random mix of problems.
  const int calls = calls_per_thread();
  std::mutex errors_mutex;
  std::vector<std::string> errors;
  std::atomic<int> started{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      started.fetch_add(1);
      while (started.load() < kThreads) std::this_thread::yield();  // start together
      try {
        for (int c = 0; c < calls; ++c)
          run_one(t * kStreamsPerThread + c % kStreamsPerThread, static_cast<int>(rng() % num_problems));
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(errors_mutex);
        errors.push_back("thread " + std::to_string(t) + ": " + e.what());
      }
    });
  }
  for (auto& th : threads) th.join();
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const MemorySnapshot after = memory_now();

  for (const auto& e : errors) ADD_FAILURE() << e;
  std::vector<unsigned long long> mismatches(static_cast<std::size_t>(lanes) * num_problems);
  FASTINFER_CUDA_CHECK(cudaMemcpy(mismatches.data(), counters.get(), counters.bytes(), cudaMemcpyDeviceToHost));
  for (int l = 0; l < lanes; ++l)
    for (int p = 0; p < num_problems; ++p)
      EXPECT_EQ(mismatches[l * num_problems + p], 0u)
          << problems[p]->name() << " on lane " << l << ": words differing from the solo run";

  const long long leaked = static_cast<long long>(before.free_bytes) - static_cast<long long>(after.free_bytes);
  std::printf("stress: %d threads x %d streams, %d calls (%d per thread) over %d problems in %.2f s (%.1f us/call); "
              "device free memory change %lld bytes; workspace blocks %zu -> %zu\n",
              kThreads, kStreamsPerThread, kThreads * calls, calls, num_problems, seconds, seconds * 1e6 / (kThreads * calls),
              -leaked, before.pool_blocks, after.pool_blocks);
  EXPECT_EQ(after.pool_blocks, before.pool_blocks) << "the workspace pool grew after warm-up";
  // Flat: the driver may round its own bookkeeping; any per-call leak over 8000 calls is far larger.
  EXPECT_LE(leaked, 2ll << 20) << "device memory in use grew by " << leaked << " bytes after warm-up";

  for (cudaStream_t s : streams) FASTINFER_CUDA_CHECK(cudaStreamDestroy(s));
}

}  // namespace
}  // namespace fastinfer::testing
