// Routine "gdn_prefill_short": many short sequences (docs/GDN_PREFILL_SHORT.md). Per shape, the
// median GPU ms of gdn::prefill with the max_seqlen hint (the short path where the hint is at most
// kShortPrefillMaxTokens) beside the main kernel (gdn::prefill_with_options, what gdn::prefill ran
// before), nominal TFLOP/s (4 T Hv 128^2 / time), the floor (input + output bytes over the measured
// copy bandwidth) and the anchor (FlashInfer's CuTe-DSL kernel, H100, 16/64 8192x32: 6.42 ms).
// Inputs bf16, alpha in [0.9, 1), beta in [0.05, 1), q and k L2-normalised in the kernel, no state.
// Each row also compares the two paths' outputs on the device (max |short - main|, max |main|), and
// times the short kernels on persistent CTAs with an L2 prefetch of the next item (not the default).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "fastinfer/gdn_prefill.h"
#include "gdn/prefill_runner.h"
#include "gdn/prefill_short_launch.h"
#include "gdn/prefill_short_runner.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

struct ShortShape {
  int seqs, len, hq, hv;
  double anchor_ms;  // 0: none
};

const std::vector<ShortShape> kShortShapes{{8192, 32, 16, 64, 6.42}, {8192, 32, 16, 32, 0}, {16384, 16, 16, 64, 0},
                                           {4096, 64, 16, 64, 0},    {1024, 32, 16, 64, 0}};

// max |a - b| and max |b| over n bf16 elements, as float bits (non-negative floats order as ints).
__global__ void max_abs_difference(const __nv_bfloat16* a, const __nv_bfloat16* b, std::int64_t n, unsigned* out) {
  float diff = 0.0f, mag = 0.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float x = __bfloat162float(a[i]), y = __bfloat162float(b[i]);
    diff = fmaxf(diff, x == y ? 0.0f : (std::isfinite(x) && std::isfinite(y) ? fabsf(x - y) : INFINITY));
    mag = fmaxf(mag, fabsf(y));
  }
  atomicMax(out, __float_as_uint(diff));
  atomicMax(out + 1, __float_as_uint(mag));
}

nlohmann::json run_gdn_prefill_short(const BenchOptions& options) {
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-10s %6s %9s %9s %10s %8s %9s %10s %10s %14s %s\n", "shape NxL", "heads", "main ms", "short ms",
              "persist ms", "speedup", "TFLOP/s", "floor ms", "ms/floor", "anchor ms/ms", "max|short-main| (max|main|)");
  for (const ShortShape& s : kShortShapes) {
    const std::string label = std::to_string(s.seqs) + "x" + std::to_string(s.len);
    if (!options.wants(label)) continue;
    const std::int64_t T = std::int64_t{s.seqs} * s.len, D = gdn::kHeadDim;
    const std::size_t bytes = T * (2 * s.hq + 2 * s.hv) * D * 2 + T * s.hv * 8;
    DeviceBuffer q(T * s.hq * D * 2), k(T * s.hq * D * 2), v(T * s.hv * D * 2), alpha(T * s.hv * 4), beta(T * s.hv * 4),
        out_main(T * s.hv * D * 2), out_short(T * s.hv * D * 2), cu((s.seqs + 1) * 4), check(8);
    fill_uniform(q.get(), DType::kBFloat16, T * s.hq * D, -1, 1, 11);
    fill_uniform(k.get(), DType::kBFloat16, T * s.hq * D, -1, 1, 23);
    fill_uniform(v.get(), DType::kBFloat16, T * s.hv * D, -1, 1, 37);
    fill_uniform(alpha.get(), DType::kFloat32, T * s.hv, 0.9f, 1.0f, 41);
    fill_uniform(beta.get(), DType::kFloat32, T * s.hv, 0.05f, 1.0f, 53);
    std::vector<std::int32_t> offsets(s.seqs + 1);
    for (int i = 0; i <= s.seqs; ++i) offsets[i] = i * s.len;
    FASTINFER_CUDA_CHECK(cudaMemcpy(cu.get(), offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));
    const Device dev = Device::cuda(0);
    gdn::PrefillArgs a;
    a.q = TensorView::contiguous(q.get(), DType::kBFloat16, {T, s.hq, D}, dev);
    a.k = TensorView::contiguous(k.get(), DType::kBFloat16, {T, s.hq, D}, dev);
    a.v = TensorView::contiguous(v.get(), DType::kBFloat16, {T, s.hv, D}, dev);
    a.cu_seqlens = TensorView::contiguous(cu.get(), DType::kInt32, {s.seqs + 1}, dev);
    a.alpha = TensorView::contiguous(alpha.get(), DType::kFloat32, {T, s.hv}, dev);
    a.beta = TensorView::contiguous(beta.get(), DType::kFloat32, {T, s.hv}, dev);
    a.use_qk_l2norm = true;
    a.max_seqlen = s.len;
    gdn::PrefillArgs main_args = a, short_args = a;
    main_args.output = TensorView::contiguous(out_main.get(), DType::kBFloat16, {T, s.hv, D}, dev);
    short_args.output = TensorView::contiguous(out_short.get(), DType::kBFloat16, {T, s.hv, D}, dev);
    // One set of inputs: every shape here moves several GB per call, far more than the L2.
    const int reps = options.quick ? 5 : 20;
    const double main_ms = median_ms([&](int) { gdn::prefill_with_options(main_args, nullptr, {}); }, 2, reps);
    const double short_ms = median_ms([&](int) { gdn::prefill(short_args); }, 3, reps);
    // The same kernels on persistent CTAs (as many as are resident), each prefetching its next item
    // into the L2, instead of one CTA per item.
    const double persistent_ms = median_ms([&](int) { gdn::prefill_short(short_args, nullptr, -1); }, 3, reps);
    FASTINFER_CUDA_CHECK(cudaMemset(check.get(), 0, 8));
    max_abs_difference<<<1024, 256>>>(out_short.as<__nv_bfloat16>(), out_main.as<__nv_bfloat16>(), T * s.hv * D,
                                      check.as<unsigned>());
    FASTINFER_CUDA_CHECK(cudaGetLastError());
    unsigned bits[2];
    FASTINFER_CUDA_CHECK(cudaMemcpy(bits, check.get(), 8, cudaMemcpyDeviceToHost));
    float diff, mag;
    std::memcpy(&diff, &bits[0], 4);
    std::memcpy(&mag, &bits[1], 4);
    const double flops = 4.0 * T * s.hv * D * D;
    const double floor = floor_ms(static_cast<double>(bytes), 0.0);
    const double tflops = flops / (short_ms * 1e-3) / 1e12;
    const std::string heads = std::to_string(s.hq) + "/" + std::to_string(s.hv);
    const bool short_path = s.len <= gdn::kShortPrefillMaxTokens;
    std::printf("%-10s %6s %9.3f %9.3f %10.3f %8.2f %9.1f %10.3f %10.2f %14s %.3g (%.3g)%s\n", label.c_str(),
                heads.c_str(), main_ms, short_ms, persistent_ms, main_ms / short_ms, tflops, floor, short_ms / floor,
                s.anchor_ms > 0 ? std::to_string(s.anchor_ms / short_ms).substr(0, 5).c_str() : "-", diff, mag,
                short_path ? "" : "  (hint above the cap: main kernel both)");
    std::fflush(stdout);
    rows.push_back({{"shape", label}, {"heads", heads}, {"main_ms", main_ms}, {"short_ms", short_ms}, {"persistent_ms", persistent_ms},
                    {"speedup", main_ms / short_ms}, {"tflops", tflops}, {"floor_ms", floor},
                    {"ms_per_floor", short_ms / floor}, {"anchor_ms", s.anchor_ms}, {"max_abs_diff", diff},
                    {"max_abs_main", mag}, {"short_path", short_path}});
  }
  return rows;
}

const RoutineRegistration registration{
    {"gdn_prefill_short", "GDN prefill, many short sequences: short path vs main kernel (ms, TFLOP/s, floor, anchor)",
     run_gdn_prefill_short}};

}  // namespace
}  // namespace fastinfer::bench
