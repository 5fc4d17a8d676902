// `fastinfer check`: a self-test of every op on small shapes against the CPU reference, one
// PASS/FAIL line per case (self_check.h). Exit status 1 when any case fails.
#include <cstdio>
#include <exception>

#include "commands.h"
#include "fastinfer/device.h"
#include "self_check.h"

namespace fastinfer::cli {

void add_check_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "Self-test: run every op on small shapes against the CPU reference");
  cmd->callback([] {
    const bool on_gpu = cuda_device_count() > 0;
    if (on_gpu) {
      std::printf("check: CUDA kernels on %s against the CPU reference\n", device_info(0).name.c_str());
    } else {
      std::printf("notice: no CUDA device found; checking the CPU reference path against a second, independent "
                  "reference\n");
    }
    std::vector<SelfCheck> checks = gdn_self_checks(on_gpu);
    for (SelfCheck& c : gemm_self_checks(on_gpu)) checks.push_back(std::move(c));
    int failed = 0, i = 0;
    for (const SelfCheck& c : checks) {
      std::printf("[%d/%zu] %s ... ", ++i, checks.size(), c.name.c_str());
      std::fflush(stdout);
      CheckOutcome r;
      try {
        r = c.run();
      } catch (const std::exception& e) {
        r = {false, std::string("error: ") + e.what()};
      }
      failed += !r.passed;
      std::printf("%s\n      %s\n", r.passed ? "PASS" : "FAIL", r.detail.c_str());
    }
    std::printf("check: %zu of %zu passed%s\n", checks.size() - failed, checks.size(), on_gpu ? "" : " (CPU reference)");
    if (failed > 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace fastinfer::cli
