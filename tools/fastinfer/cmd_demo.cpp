// `fastinfer demo`: GDN prefill, GDN decode and the bf16 x NVFP4 GEMM on realistic shapes, on the
// GPU when one is present, else on the CPU reference backend (with a notice).
#include <cstdio>

#include "commands.h"
#include "demos.h"
#include "fastinfer/device.h"

namespace fastinfer::cli {

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Run GDN prefill, GDN decode and mm_bf16_fp4 on realistic shapes");
  cmd->callback([] {
    const bool on_gpu = cuda_device_count() > 0;
    if (!on_gpu) {
      std::printf("notice: no CUDA device found; running on the CPU reference backend (smaller shapes)\n");
    }
    bool ok = demo_gdn_prefill(on_gpu);
    ok = demo_gdn_decode(on_gpu) && ok;
    ok = demo_mm_bf16_fp4(on_gpu) && ok;
    std::printf("demo: %s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    if (!ok) throw CLI::RuntimeError(1);
  });
}

}  // namespace fastinfer::cli
