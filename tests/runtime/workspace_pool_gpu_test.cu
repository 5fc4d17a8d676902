// The CUDA-backed workspace pool on a real device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "fastinfer/error.h"
#include "fastinfer/workspace.h"
#include "runtime/workspace_pool.h"
#include "support/gpu_test.h"

namespace fastinfer {
namespace {

using WorkspacePoolGpu = testing::GpuTest;

__global__ void fill_kernel(int* p, int n, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}

TEST_F(WorkspacePoolGpu, TwoStreamsGetDistinctUsableBlocks) {
  WorkspacePool pool(make_cuda_workspace_allocator());
  cudaStream_t s1, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  constexpr int n = 1 << 20;
  auto* a = static_cast<int*>(pool.get(0, s1, "scratch", n * sizeof(int)));
  auto* b = static_cast<int*>(pool.get(0, s2, "scratch", n * sizeof(int)));
  ASSERT_NE(a, b);
  const auto lo = reinterpret_cast<std::uintptr_t>(a), hi = reinterpret_cast<std::uintptr_t>(b);
  EXPECT_TRUE(lo + n * sizeof(int) <= hi || hi + n * sizeof(int) <= lo) << "blocks overlap";
  fill_kernel<<<n / 256, 256, 0, s1>>>(a, n, 1);
  fill_kernel<<<n / 256, 256, 0, s2>>>(b, n, 2);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> ha(n), hb(n);
  ASSERT_EQ(cudaMemcpyAsync(ha.data(), a, n * sizeof(int), cudaMemcpyDeviceToHost, s1), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(hb.data(), b, n * sizeof(int), cudaMemcpyDeviceToHost, s2), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(std::count(ha.begin(), ha.end(), 1), n);
  EXPECT_EQ(std::count(hb.begin(), hb.end(), 2), n);
  pool.release_all();
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST_F(WorkspacePoolGpu, GrowthDuringCaptureFailsAndReserveThenCaptureReplays) {
  WorkspacePool pool(make_cuda_workspace_allocator());
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  constexpr int n = 4096;
  pool.reserve(0, s, "graph", n * sizeof(int));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);

  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  bool threw = false;
  try {
    pool.get(0, s, "graph", std::size_t{64} << 20);  // needs growth: refused
  } catch (const Error& e) {
    threw = std::string(e.what()).find("capturing a CUDA graph") != std::string::npos;
  }
  auto* p = static_cast<int*>(pool.get(0, s, "graph", n * sizeof(int)));  // reserved: a hit
  fill_kernel<<<n / 256, 256, 0, s>>>(p, n, 42);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  EXPECT_TRUE(threw);

  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(p, 0, n * sizeof(int), s), cudaSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  std::vector<int> h(n);
  ASSERT_EQ(cudaMemcpyAsync(h.data(), p, n * sizeof(int), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(std::count(h.begin(), h.end(), 42), n);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  pool.release_all();
  cudaStreamDestroy(s);
}

TEST_F(WorkspacePoolGpu, GlobalPoolAndPublicReserve) {
  reserve_workspace(0, nullptr, "public-reserve", 1000);
  EXPECT_GE(WorkspacePool::global().capacity(0, nullptr, "public-reserve"), 1000u);
  EXPECT_THROW(reserve_workspace(0, nullptr, "too-big", std::size_t{1} << 50), Error);
}

}  // namespace
}  // namespace fastinfer
