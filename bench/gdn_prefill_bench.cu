// Routine "gdn_prefill": the issue's table -- median GPU ms and nominal TFLOP/s
// (4 * T * Hv * 128^2 / time, FlashInfer's formula) for heads 16/32 and 16/64, against the
// anchors of issue 5. Inputs bf16, alpha in [0.9, 1), beta in [0.05, 1), k L2-normalised in the
// kernel, no initial or final state (the anchors' setting: state I/O is measured separately).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fastinfer/gdn_prefill.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

struct PrefillShape {
  int seqs, len, hq, hv;
  double anchor_ms;  // 0: none
  const char* anchor;
};

// Anchors from issue 5: flash-linear-attention measured on the H200 (16/32) and FlashInfer's
// CuTe-DSL kernel published on H100 (16/64 8192x32).
const std::vector<PrefillShape> kShapes{
    {64, 1024, 16, 32, 4.52, "fla H200"}, {16, 4096, 16, 32, 4.43, "fla H200"}, {4, 8192, 16, 32, 2.31, "fla H200"},
    {128, 512, 16, 32, 0, ""},             {1, 8192, 16, 32, 0.83, "fla H200"},  {64, 1024, 16, 64, 0, ""},
    {16, 4096, 16, 64, 0, ""},             {4, 8192, 16, 64, 0, ""},             {128, 512, 16, 64, 0, ""},
    {8192, 32, 16, 64, 6.42, "FlashInfer H100"}, {1, 8192, 16, 64, 0, ""}};

struct Inputs {
  DeviceBuffer q, k, v, alpha, beta, out, cu;
};

nlohmann::json run_gdn_prefill(const BenchOptions& options) {
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-16s %7s %10s %9s %12s %10s\n", "shape NxL", "heads", "median ms", "TFLOP/s", "anchor ms", "speed-up");
  for (const PrefillShape& s : kShapes) {
    const std::string label = std::to_string(s.seqs) + "x" + std::to_string(s.len);
    if (!options.only_shapes.empty() && label.find(options.only_shapes) == std::string::npos) continue;
    const std::int64_t T = std::int64_t{s.seqs} * s.len, D = gdn::kHeadDim;
    const std::size_t bytes = T * (2 * s.hq + 2 * s.hv) * D * 2 + T * s.hv * 8;
    const int sets = options.quick ? 1 : std::min(rotation_count(bytes), 4);
    std::vector<Inputs> in(sets);
    std::vector<std::int32_t> cu(s.seqs + 1);
    for (int i = 0; i <= s.seqs; ++i) cu[i] = i * s.len;
    for (int r = 0; r < sets; ++r) {
      in[r].q = DeviceBuffer(T * s.hq * D * 2);
      in[r].k = DeviceBuffer(T * s.hq * D * 2);
      in[r].v = DeviceBuffer(T * s.hv * D * 2);
      in[r].alpha = DeviceBuffer(T * s.hv * 4);
      in[r].beta = DeviceBuffer(T * s.hv * 4);
      in[r].out = DeviceBuffer(T * s.hv * D * 2);
      in[r].cu = DeviceBuffer(cu.size() * 4);
      fill_uniform(in[r].q.get(), DType::kBFloat16, T * s.hq * D, -1, 1, 11 + r);
      fill_uniform(in[r].k.get(), DType::kBFloat16, T * s.hq * D, -1, 1, 23 + r);
      fill_uniform(in[r].v.get(), DType::kBFloat16, T * s.hv * D, -1, 1, 37 + r);
      fill_uniform(in[r].alpha.get(), DType::kFloat32, T * s.hv, 0.9f, 1.0f, 41 + r);
      fill_uniform(in[r].beta.get(), DType::kFloat32, T * s.hv, 0.05f, 1.0f, 53 + r);
      FASTINFER_CUDA_CHECK(cudaMemcpy(in[r].cu.get(), cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
    }
    auto args_for = [&](int r) {
      const Device dev = Device::cuda(0);
      gdn::PrefillArgs a;
      a.q = TensorView::contiguous(in[r].q.get(), DType::kBFloat16, {T, s.hq, D}, dev);
      a.k = TensorView::contiguous(in[r].k.get(), DType::kBFloat16, {T, s.hq, D}, dev);
      a.v = TensorView::contiguous(in[r].v.get(), DType::kBFloat16, {T, s.hv, D}, dev);
      a.cu_seqlens = TensorView::contiguous(in[r].cu.get(), DType::kInt32, {s.seqs + 1}, dev);
      a.alpha = TensorView::contiguous(in[r].alpha.get(), DType::kFloat32, {T, s.hv}, dev);
      a.beta = TensorView::contiguous(in[r].beta.get(), DType::kFloat32, {T, s.hv}, dev);
      a.use_qk_l2norm = true;
      a.output = TensorView::contiguous(in[r].out.get(), DType::kBFloat16, {T, s.hv, D}, dev);
      return a;
    };
    std::vector<gdn::PrefillArgs> args;
    for (int r = 0; r < sets; ++r) args.push_back(args_for(r));
    const double ms = median_ms([&](int i) { gdn::prefill(args[i % sets]); }, 3, options.quick ? 5 : 20);
    const double tflops = 4.0 * T * s.hv * D * D / (ms * 1e-3) / 1e12;
    const std::string heads = std::to_string(s.hq) + "/" + std::to_string(s.hv);
    std::printf("%-16s %7s %10.3f %9.1f %12s %10s\n", label.c_str(), heads.c_str(), ms, tflops,
                s.anchor_ms > 0 ? (std::to_string(s.anchor_ms) + " " + s.anchor).c_str() : "-",
                s.anchor_ms > 0 ? std::to_string(s.anchor_ms / ms).c_str() : "-");
    rows.push_back({{"shape", label}, {"heads", heads}, {"tokens", T}, {"median_ms", ms}, {"nominal_tflops", tflops},
                    {"anchor_ms", s.anchor_ms}, {"anchor", s.anchor}, {"state", "none"}});
  }
  // Host cost of one call on a warm runner cache (what the caller's thread pays).
  {
    DeviceBuffer q(64 * 16 * 128 * 2), k(64 * 16 * 128 * 2), v(64 * 32 * 128 * 2), out(64 * 32 * 128 * 2), cu(8);
    const std::int32_t offsets[2] = {0, 64};
    FASTINFER_CUDA_CHECK(cudaMemcpy(cu.get(), offsets, 8, cudaMemcpyHostToDevice));
    gdn::PrefillArgs a;
    const Device dev = Device::cuda(0);
    a.q = TensorView::contiguous(q.get(), DType::kBFloat16, {64, 16, 128}, dev);
    a.k = TensorView::contiguous(k.get(), DType::kBFloat16, {64, 16, 128}, dev);
    a.v = TensorView::contiguous(v.get(), DType::kBFloat16, {64, 32, 128}, dev);
    a.cu_seqlens = TensorView::contiguous(cu.get(), DType::kInt32, {2}, dev);
    a.output = TensorView::contiguous(out.get(), DType::kBFloat16, {64, 32, 128}, dev);
    const double us = host_us_per_call([&] { gdn::prefill(a); }, options.quick ? 200 : 2000);
    std::printf("host time per call (1x64, 16/32): %.2f us\n", us);
    rows.push_back({{"shape", "host_us_per_call 1x64"}, {"heads", "16/32"}, {"host_us", us}});
  }
  return rows;
}

const RoutineRegistration registration{
    {"gdn_prefill", "GDN chunked prefill: median ms and nominal TFLOP/s (issue 5 table)", run_gdn_prefill}};

}  // namespace
}  // namespace fastinfer::bench
