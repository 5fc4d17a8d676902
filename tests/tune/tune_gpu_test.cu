// The CUDA profiler on a real GPU: tactics that spin for known times, a failing tactic, CUDA-graph
// timing, cold-L2 rotation, the capture guard, and a second process reusing the saved file.
#include <cuda_runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "fastinfer/error.h"
#include "fastinfer/tune.h"
#include "runtime/cuda_check.h"
#include "support/gpu_test.h"

extern char** environ;

namespace fastinfer::tune {
namespace {

__global__ void spin_kernel(unsigned long long ns, int* sink) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  if (sink) *sink = static_cast<int>(now - start);
}

// Tactic t spins kSpinUs[t] microseconds; the default (-1) spins 50 us; tactic 4 cannot launch.
constexpr int kSpinUs[] = {40, 10, 25, 60};
constexpr int kFastest = 1;
constexpr int kBroken = 4;

class SpinRunner : public TunableRunner {
 public:
  explicit SpinRunner(int input_sets = 1) : key_("spin", "spin/v1", {}, current_mapper()), sets_(input_sets) {}
  const RunnerKey& key() const override { return key_; }
  std::vector<int> tactics(const Problem&) const override { return {0, 1, 2, 3, kBroken}; }
  int input_sets() const override { return sets_; }
  void run(const Problem& p, int tactic, Stream stream) const override {
    sets_seen.insert(p.input_set);
    if (tactic == kBroken) {
      spin_kernel<<<1, 4096, 0, stream>>>(1000, nullptr);  // 4096 threads per block: invalid configuration
      return;  // the error is left for the profiler to find (and clear)
    }
    const int us = tactic < 0 ? 50 : kSpinUs[tactic];
    spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(us) * 1000, nullptr);
  }
  mutable std::set<int> sets_seen;

 private:
  RunnerKey key_;
  int sets_;
};

std::unique_ptr<Tuner> cuda_tuner() {
  return std::make_unique<Tuner>(make_cuda_profiler(), [] { return Metadata::of_device(0); });
}

class TuneGpu : public testing::GpuTest {};

TEST_F(TuneGpu, PicksTheMeasuredFastestAndClearsTheFailure) {
  auto tuner = cuda_tuner();
  SpinRunner runner;
  const auto results = tuner->tune(runner, 4, nullptr);
  ASSERT_EQ(results.size(), 3u);  // buckets 1, 2, 4
  for (const TunedBucket& r : results) {
    EXPECT_EQ(r.tactic, kFastest) << "bucket " << r.bucket;
    for (auto [tactic, ms] : r.timings) {
      if (tactic == kBroken) {
        EXPECT_TRUE(std::isinf(ms));
      } else {
        const double expected = (tactic < 0 ? 50 : kSpinUs[tactic]) * 1e-3;
        EXPECT_GT(ms, expected * 0.95) << "tactic " << tactic;
        EXPECT_LT(ms, expected * 1.5 + 0.01) << "tactic " << tactic;
      }
    }
    std::printf("bucket %lld:", static_cast<long long>(r.bucket));
    for (auto [tactic, ms] : r.timings) std::printf(" %d=%.4fms", tactic, ms);
    std::printf(" -> %d\n", r.tactic);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the broken tactic's error was cleared
  EXPECT_EQ(tuner->choose(runner.key(), 3), (Choice{kFastest, Source::kMemory}));
}

TEST_F(TuneGpu, GraphTimingAndColdL2RotationAlsoPickTheFastest) {
  auto tuner = cuda_tuner();
  SpinRunner runner(/*input_sets=*/3);
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreate(&stream));
  const ProfileOptions graph{.warmup = 3, .repeat = 10, .cold_l2 = true, .cuda_graph = true};
  EXPECT_EQ(tuner->tune_one(runner, 8, stream, graph).tactic, kFastest);
  EXPECT_EQ(runner.sets_seen, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST_F(TuneGpu, ProfilingDuringCaptureIsAnError) {
  auto tuner = cuda_tuner();
  SpinRunner runner;
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreate(&stream));
  FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    tuner->tune_one(runner, 8, stream);
    ADD_FAILURE() << "no error during capture";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("captured"), std::string::npos) << e.what();
  }
  cudaGraph_t graph = nullptr;
  FASTINFER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  if (graph) cudaGraphDestroy(graph);
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  EXPECT_EQ(tuner->profile_count(), 0u);
}

// Run by ReusesTheFileInAnotherProcess in a child process; skipped when run on its own.
TEST_F(TuneGpu, ChildLoadsTheFileWithoutProfiling) {
  const char* path = std::getenv("FASTINFER_TUNE_CHILD_FILE");
  if (path == nullptr) GTEST_SKIP() << "helper of ReusesTheFileInAnotherProcess";
  auto tuner = cuda_tuner();
  const LoadResult r = tuner->load(path);
  ASSERT_TRUE(r.loaded) << r.reason;
  SpinRunner runner;
  for (std::int64_t m : {1, 2, 3, 4}) {
    Choice c = tuner->choose(runner.key(), m);
    if (c.source == Source::kDefault) c = tuner->tune_one(runner, m, nullptr);  // what an op in tune mode does
    EXPECT_EQ(c, (Choice{kFastest, Source::kFile})) << "M = " << m;
  }
  EXPECT_EQ(tuner->profile_count(), 0u);
}

TEST_F(TuneGpu, ReusesTheFileInAnotherProcess) {
  const std::string path = ::testing::TempDir() + "/tune_gpu_cache_" + std::to_string(::getpid()) + ".json";
  std::filesystem::remove(path);
  {
    auto tuner = cuda_tuner();
    SpinRunner runner;
    tuner->tune(runner, 4, nullptr);
    tuner->save(path);
  }
  {  // a second tuner of this process
    auto tuner = cuda_tuner();
    ASSERT_TRUE(tuner->load(path).loaded);
    EXPECT_EQ(tuner->choose(SpinRunner().key(), 4), (Choice{kFastest, Source::kFile}));
    EXPECT_EQ(tuner->profile_count(), 0u);
  }
  // And a second process.
  const std::string env = "FASTINFER_TUNE_CHILD_FILE=" + path;
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  envp.push_back(const_cast<char*>(env.c_str()));
  envp.push_back(nullptr);
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=TuneGpu.ChildLoadsTheFileWithoutProfiling";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child process failed (status " << status << ")";
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");
}

}  // namespace
}  // namespace fastinfer::tune
