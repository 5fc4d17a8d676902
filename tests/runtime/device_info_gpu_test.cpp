#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "support/gpu_test.h"

namespace fastinfer {
namespace {

using DeviceInfoGpu = testing::GpuTest;

TEST_F(DeviceInfoGpu, MatchesCudaGetDeviceProperties) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(cuda_device_count(), n);
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, d), cudaSuccess);
    const DeviceInfo& info = device_info(d);
    EXPECT_EQ(info.index, d);
    EXPECT_EQ(info.name, prop.name);
    EXPECT_EQ(info.sm_count, prop.multiProcessorCount);
    EXPECT_EQ(info.l2_cache_bytes, prop.l2CacheSize);
    EXPECT_EQ(info.smem_per_block_optin, static_cast<int>(prop.sharedMemPerBlockOptin));
    EXPECT_EQ(info.cc_major, prop.major);
    EXPECT_EQ(info.cc_minor, prop.minor);
    EXPECT_EQ(info.total_memory_bytes, prop.totalGlobalMem);
    EXPECT_EQ(&device_info(d), &info) << "read once: the same object every time";
  }
}

TEST_F(DeviceInfoGpu, ConcurrentFirstReadsAgree) {
  std::vector<const DeviceInfo*> seen(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back([&, t] { seen[t] = &device_info(0); });
  for (auto& th : threads) th.join();
  for (auto* p : seen) EXPECT_EQ(p, seen[0]);
}

TEST_F(DeviceInfoGpu, InvalidOrdinalIsAnError) {
  EXPECT_THROW(device_info(cuda_device_count()), Error);
  EXPECT_THROW(device_info(-1), Error);
}

}  // namespace
}  // namespace fastinfer
