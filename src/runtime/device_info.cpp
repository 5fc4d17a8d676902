#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "fastinfer/device.h"
#include "runtime/check.h"
#include "runtime/cuda_check.h"

namespace fastinfer {

namespace {

constexpr int kMaxDevices = 64;

// One slot per ordinal: the pointer is published once (release) and read lock-free (acquire).
struct DeviceInfoTable {
  std::array<std::atomic<const DeviceInfo*>, kMaxDevices> slots{};
  std::array<std::once_flag, kMaxDevices> once;
  std::array<std::unique_ptr<DeviceInfo>, kMaxDevices> owned;
};

DeviceInfoTable& table() {
  static DeviceInfoTable t;
  return t;
}

DeviceInfo query(int device) {
  cudaDeviceProp prop{};
  FASTINFER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.l2_cache_bytes = prop.l2CacheSize;
  info.smem_per_block_optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.total_memory_bytes = prop.totalGlobalMem;
  return info;
}

}  // namespace

int cuda_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no driver" error
      return 0;
    }
    return n;
  }();
  return count;
}

const DeviceInfo& device_info(int device) {
  DeviceInfoTable& t = table();
  if (device >= 0 && device < kMaxDevices) {
    if (const DeviceInfo* hit = t.slots[device].load(std::memory_order_acquire)) return *hit;
  }
  const int count = cuda_device_count();
  if (device < 0 || device >= count || device >= kMaxDevices) {
    check::fail("device_info", "device", "be a CUDA ordinal in [0, " + std::to_string(count) + ")",
                std::to_string(device));
  }
  std::call_once(t.once[device], [&] {
    t.owned[device] = std::make_unique<DeviceInfo>(query(device));
    t.slots[device].store(t.owned[device].get(), std::memory_order_release);
  });
  return *t.slots[device].load(std::memory_order_acquire);
}

}  // namespace fastinfer
