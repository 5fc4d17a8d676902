// Link stubs for the GPU side of the ops the fuzzer calls (validation_fuzz.cpp). The fuzzer
// never hands an op a call that validation should let through to the GPU: every call it makes
// is either on CPU tensors or must be rejected. Reaching any of these is therefore a validation
// bug, and aborts the fuzzer with the name of the function reached.
#include <cstdio>
#include <cstdlib>

#include "fastinfer/tune.h"
#include "gemm/mm_runner.h"
#include "gemm/mm_tunable.h"
#include "gemm/small_m_repack.h"
#include "nvfp4/nvfp4_launch.h"

namespace {
[[noreturn]] void reached(const char* what) {
  std::fprintf(stderr, "validation_fuzz: GPU path reached (%s): validation let a call through that must be rejected\n", what);
  std::abort();
}
}  // namespace

namespace fastinfer::nvfp4::detail {
void launch_quantize(const QuantizeParams&, Stream) { reached("nvfp4 launch_quantize"); }
void launch_dequantize(const DequantizeParams&, Stream) { reached("nvfp4 launch_dequantize"); }
}  // namespace fastinfer::nvfp4::detail

namespace fastinfer::gemm::detail {
std::int64_t small_m_row_tiles(std::int64_t) { reached("gemm small_m_row_tiles"); }
void launch_scales_to_linear(const std::uint8_t*, nvfp4::ScaleLayout, std::uint8_t*, std::int64_t, std::int64_t, void*) {
  reached("gemm launch_scales_to_linear");
}
void launch_repack_small_m(const std::uint8_t*, const std::uint8_t*, std::int64_t, std::int64_t, void*, void*, void*) {
  reached("gemm launch_repack_small_m");
}
MmRunner::MmRunner(int, DType, std::int64_t, std::int64_t, const tune::BucketMapper& mapper)
    : key_("", "", {}, mapper) {
  reached("gemm MmRunner");
}
void MmRunner::run(const MmCall&, int, Stream) const { reached("gemm MmRunner::run"); }
std::vector<int> MmRunner::tactics(std::int64_t) const { reached("gemm MmRunner::tactics"); }
std::unique_ptr<tune::TunableRunner> make_tunable_mm(const tune::TuneRequest&) { reached("gemm make_tunable_mm"); }
}  // namespace fastinfer::gemm::detail

namespace fastinfer::tune {
Tuner& Tuner::global() { reached("tune::Tuner::global"); }
}  // namespace fastinfer::tune
