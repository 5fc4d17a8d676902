// Routine "gdn_cp": the context-parallel GDN prefill pipeline (issue 6) on the issue's shapes.
// Stage 4 (the prefill kernel over segments) is not wired yet, so this measures stages 1-3 (the
// CP overhead on top of a segmented prefill): median GPU ms with and without programmatic
// dependent launch, and the host cost of the call against the same number of raw launches.
#include <cstdio>
#include <string>
#include <vector>

#include "gdn/cp.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

__global__ void empty_kernel() {}

struct CpCase {
  int hq, hv;
  std::int64_t seqs, len;
  double fla_ms;  // flash-linear-attention on the H200 (issue 6), 0 = none
};

TensorView device_view(const DeviceBuffer& b, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(b.get(), t, shape, Device::cuda(0));
}

nlohmann::json run_gdn_cp(const BenchOptions& options) {
  std::vector<CpCase> cases = {{16, 32, 1, 1024, 0.567}, {16, 32, 1, 8192, 0.831}, {16, 32, 1, 32768, 2.64},
                               {16, 32, 1, 131072, 10.1}, {16, 64, 1, 65536, 0},     {2, 8, 1, 8192, 0},
                               {2, 8, 1, 65536, 0}};
  if (options.quick) cases.resize(2);
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int reps = options.quick ? 200 : 2000;
  const double raw3_us = host_us_per_call([&] {
    for (int i = 0; i < 3; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  }, reps);

  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-22s %8s %10s %10s %10s %12s %10s\n", "case (Hq/Hv NxL)", "chunks", "pdl ms", "no-pdl ms",
              "fla ms", "host us", "3 raw us");
  for (const CpCase& c : cases) {
    const std::string label = std::to_string(c.hq) + "/" + std::to_string(c.hv) + " " + std::to_string(c.seqs) +
                              "x" + std::to_string(c.len);
    if (!options.only_shapes.empty() && label.find(options.only_shapes) == std::string::npos) continue;
    const std::int64_t T = c.seqs * c.len, hsab = std::max(c.hq, c.hv);
    DeviceBuffer q(T * c.hq * 128 * 2), k(T * c.hq * 128 * 2), v(T * c.hv * 128 * 2), alpha(T * hsab * 4),
        beta(T * hsab * 4), cu((c.seqs + 1) * 4);
    fill_uniform(q.get(), DType::kBFloat16, T * c.hq * 128, -1, 1, 1, stream);
    fill_uniform(k.get(), DType::kBFloat16, T * c.hq * 128, -1, 1, 2, stream);
    fill_uniform(v.get(), DType::kBFloat16, T * c.hv * 128, -1, 1, 3, stream);
    fill_uniform(alpha.get(), DType::kFloat32, T * hsab, 0.99f, 1.0f, 4, stream);
    fill_uniform(beta.get(), DType::kFloat32, T * hsab, 0.05f, 1.0f, 5, stream);
    std::vector<std::int32_t> offsets(c.seqs + 1);
    for (std::int64_t i = 0; i <= c.seqs; ++i) offsets[i] = static_cast<std::int32_t>(i * c.len);
    FASTINFER_CUDA_CHECK(cudaMemcpy(cu.get(), offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));

    gdn::PrefillArgs args;
    args.q = device_view(q, DType::kBFloat16, {T, c.hq, 128});
    args.k = device_view(k, DType::kBFloat16, {T, c.hq, 128});
    args.v = device_view(v, DType::kBFloat16, {T, c.hv, 128});
    args.alpha = device_view(alpha, DType::kFloat32, {T, hsab});
    args.beta = device_view(beta, DType::kFloat32, {T, hsab});
    args.cu_seqlens = device_view(cu, DType::kInt32, {c.seqs + 1});
    args.use_qk_l2norm = true;
    args.output = args.q;
    const ExecContext ctx{Device::cuda(0), stream};
    gdn::detail::CpOptions with_pdl{.max_seqlen = c.len}, without_pdl{.max_seqlen = c.len, .programmatic_launch = false};
    const auto view = gdn::detail::run_cp_stages(args, ctx, with_pdl);
    const double pdl_ms = median_ms([&](int) { gdn::detail::run_cp_stages(args, ctx, with_pdl); }, 3, options.quick ? 5 : 20, stream);
    const double plain_ms = median_ms([&](int) { gdn::detail::run_cp_stages(args, ctx, without_pdl); }, 3, options.quick ? 5 : 20, stream);
    // Host cost on the smallest case only (a long case would measure the queue draining).
    const double host_us = &c != &cases.front() ? 0.0
        : host_us_per_call([&] { gdn::detail::run_cp_stages(args, ctx, with_pdl); }, options.quick ? 50 : 300);
    std::printf("%-22s %8lld %10.3f %10.3f %10.3f %12.2f %10.2f\n", label.c_str(),
                static_cast<long long>(view.plan.chunks_per_seq), pdl_ms, plain_ms, c.fla_ms, host_us, raw3_us);
    rows.push_back({{"case", label}, {"chunk_len", view.plan.chunk_len}, {"chunks_per_seq", view.plan.chunks_per_seq},
                    {"stages123_ms_pdl", pdl_ms}, {"stages123_ms_no_pdl", plain_ms}, {"fla_anchor_ms", c.fla_ms},
                    {"host_us_per_call", host_us}, {"raw_3_launches_us", raw3_us}});
  }
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  return {{"note", "stages 1-3 only (stage 4 pending the prefill kernel's segment hooks)"}, {"rows", rows}};
}

const RoutineRegistration registration{{"gdn_cp", "GDN context-parallel prefill (stages 1-3)", run_gdn_cp}};

}  // namespace
}  // namespace fastinfer::bench
