// `fastinfer demo`: GDN prefill, GDN decode and the bf16 x NVFP4 GEMM on realistic shapes, on the
// GPU when one is present, else on the CPU reference backend (with a notice).
#include <cstdio>

#include "commands.h"
#include "fastinfer/device.h"

namespace fastinfer::cli {

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Run GDN prefill, GDN decode and mm_bf16_fp4 on realistic shapes");
  cmd->callback([] {
    if (cuda_device_count() == 0) {
      std::printf("notice: no CUDA device found; running on the CPU reference backend (slow, exact)\n");
    }
    std::printf("demo: no ops are implemented yet\n");
  });
}

}  // namespace fastinfer::cli
