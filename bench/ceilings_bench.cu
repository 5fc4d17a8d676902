// The two ceilings every other routine is measured against, reported on their own.
#include <cstdio>

#include "harness.h"
#include "routines.h"

namespace fastinfer::bench {
namespace {

nlohmann::json run_ceilings(const BenchOptions&) {
  const Ceilings& c = ceilings();
  std::printf("copy bandwidth %.2f TB/s (read + write), bf16 cuBLASLt 8192^3 %.0f TFLOP/s\n", c.copy_tbps, c.bf16_tflops);
  return {{"copy_tbps", c.copy_tbps}, {"bf16_tflops", c.bf16_tflops}};
}

const RoutineRegistration registration{{"ceilings", "copy bandwidth and bf16 tensor-core peak", run_ceilings}};

}  // namespace
}  // namespace fastinfer::bench
