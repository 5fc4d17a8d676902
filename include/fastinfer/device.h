#pragma once
// Facts about a CUDA device, read once per device and cached for the life of the process.
#include <cstddef>
#include <string>

namespace fastinfer {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int l2_cache_bytes = 0;
  int smem_per_block_optin = 0;  // bytes a block may use after opting in
  int cc_major = 0;
  int cc_minor = 0;
  std::size_t total_memory_bytes = 0;

  bool is_hopper() const { return cc_major == 9; }
};

// Number of CUDA devices; 0 when there is no driver or no GPU (never throws).
int cuda_device_count();

// The cached facts of `device`. The first call per device queries the driver; later calls are a
// lock-free load. Throws fastinfer::Error for an invalid ordinal.
const DeviceInfo& device_info(int device);

}  // namespace fastinfer
