// `fastinfer info`: library version, build flags and the CUDA devices this process sees.
#include <cstdio>

#include "commands.h"
#include "fastinfer/build_info.h"
#include "fastinfer/device.h"
#include "fastinfer/version.h"

namespace fastinfer::cli {

namespace {
int run_info(bool quiet_gpu_probe) {
  const int count = cuda_device_count();
  if (quiet_gpu_probe) return count > 0 ? 0 : 1;  // used by scripts: exit 0 iff a GPU is present
  std::printf("fastinfer %s (%s build, CUDA %s, kernels for %s, %s)\n", version(), build::kBuildType,
              build::kCudaVersion, build::kCudaArch, build::kCxxCompiler);
  if (count == 0) {
    std::printf("no CUDA device: ops run on the CPU reference backend\n");
    return 0;
  }
  for (int d = 0; d < count; ++d) {
    const DeviceInfo& info = device_info(d);
    std::printf("cuda:%d  %s  sm_%d%d  %d SMs  L2 %.1f MiB  smem/block %d KiB  memory %.1f GiB%s\n", d,
                info.name.c_str(), info.cc_major, info.cc_minor, info.sm_count, info.l2_cache_bytes / 1048576.0,
                info.smem_per_block_optin / 1024, info.total_memory_bytes / 1073741824.0,
                info.is_hopper() ? "" : "  (not Hopper: fastinfer kernels need sm_90a)");
  }
  return 0;
}
}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the library build and the CUDA devices");
  static bool has_gpu = false;
  cmd->add_flag("--has-gpu", has_gpu, "Print nothing; exit 0 when a CUDA device is present, 1 otherwise");
  cmd->callback([] {
    const int rc = run_info(has_gpu);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace fastinfer::cli
