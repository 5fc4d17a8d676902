// Routine "gdn_prefill_fast": the warp-specialised prefill kernel (gdn::run_prefill_fast) against
// the current one (gdn::prefill) on the gdn_prefill routine's shapes and setting (bf16, alpha in
// [0.9, 1), beta in [0.05, 1), k L2-normalised in the kernel, no state I/O). Reports median ms of
// both, nominal TFLOP/s (4 * T * Hv * 128^2 / time), the speed-up, the anchor ratio and the floor
// (max of input+output bytes over the measured copy bandwidth and nominal flops over the
// measured bf16 peak).
#include <cstdio>
#include <string>
#include <vector>

#include "fastinfer/gdn_prefill.h"
#include "gdn/prefill_fast_launch.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

struct FastShape {
  int seqs, len, hq, hv;
  double anchor_ms;  // 0: none (issue 5's anchors)
  const char* anchor;
};

const std::vector<FastShape> kFastShapes{
    {64, 1024, 16, 32, 4.52, "fla H200"}, {16, 4096, 16, 32, 4.43, "fla H200"}, {4, 8192, 16, 32, 2.31, "fla H200"},
    {128, 512, 16, 32, 0, ""},             {1, 8192, 16, 32, 0.83, "fla H200"},  {64, 1024, 16, 64, 0, ""},
    {16, 4096, 16, 64, 0, ""},             {4, 8192, 16, 64, 0, ""},             {128, 512, 16, 64, 0, ""},
    {8192, 32, 16, 64, 6.42, "FlashInfer H100"}, {1, 8192, 16, 64, 0, ""}};

struct FastInputs {
  DeviceBuffer q, k, v, alpha, beta, out, cu;
};

nlohmann::json run_gdn_prefill_fast(const BenchOptions& options) {
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-10s %6s %9s %9s %8s %8s %9s %9s %12s\n", "shape", "heads", "old ms", "new ms", "speedup", "TFLOP/s",
              "floor ms", "new/floor", "anchor/new");
  for (const FastShape& s : kFastShapes) {
    const std::string label = std::to_string(s.seqs) + "x" + std::to_string(s.len);
    if (!options.only_shapes.empty() && label.find(options.only_shapes) == std::string::npos) continue;
    const std::int64_t T = std::int64_t{s.seqs} * s.len, D = gdn::kHeadDim;
    const std::size_t bytes = T * (2 * s.hq + 2 * s.hv) * D * 2 + T * s.hv * 8;
    const int sets = options.quick ? 1 : std::min(rotation_count(bytes), 4);
    std::vector<FastInputs> in(sets);
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
    std::vector<gdn::PrefillArgs> args;
    for (int r = 0; r < sets; ++r) {
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
      args.push_back(a);
    }
    const int reps = options.quick ? 5 : 20;
    const double old_ms = median_ms([&](int i) { gdn::prefill(args[i % sets]); }, 2, reps);
    const double new_ms = median_ms([&](int i) { gdn::run_prefill_fast(args[i % sets]); }, 3, reps);
    // Where CTA 0's time goes (cycles per chunk): producer phases and consumer wait/compute.
    DeviceBuffer profile_buffer(sizeof(gdn::FastProfile));
    FASTINFER_CUDA_CHECK(cudaMemset(profile_buffer.get(), 0, sizeof(gdn::FastProfile)));
    gdn::run_prefill_fast(args[0], nullptr, 0, profile_buffer.as<unsigned long long>());
    gdn::FastProfile prof{};
    FASTINFER_CUDA_CHECK(cudaMemcpy(&prof, profile_buffer.get(), sizeof prof, cudaMemcpyDeviceToHost));
    prof.producer_prepare = prof.prepare_load_wait + prof.prepare_gates_norm + prof.prepare_products;
    prof.producer_finish = prof.finish_inverse + prof.finish_t_gated;
    const double pc = prof.producer_chunks ? static_cast<double>(prof.producer_chunks) : 1.0;
    const double cc = prof.consumer_chunks ? static_cast<double>(prof.consumer_chunks) : 1.0;
    std::printf("  cycles/chunk (CTA 0, %llu chunks): producer prepare %.0f wait %.0f issue %.0f finish %.0f other %.0f | "
                "consumer wait %.0f compute %.0f other %.0f\n",
                prof.consumer_chunks, prof.producer_prepare / pc, prof.producer_wait / pc, prof.producer_issue / pc,
                prof.producer_finish / pc, prof.producer_other / pc, prof.consumer_wait / cc, prof.consumer_compute / cc,
                prof.consumer_other / cc);
    std::printf("    prepare = load wait %.0f + gates/L2 norm %.0f + A0/P %.0f; finish = inverse %.0f + T_g %.0f\n",
                prof.prepare_load_wait / pc, prof.prepare_gates_norm / pc, prof.prepare_products / pc,
                prof.finish_inverse / pc, prof.finish_t_gated / pc);
    const double flops = 4.0 * T * s.hv * D * D;
    const double tflops = flops / (new_ms * 1e-3) / 1e12;
    const double floor = floor_ms(static_cast<double>(bytes), flops);
    const std::string heads = std::to_string(s.hq) + "/" + std::to_string(s.hv);
    std::printf("%-10s %6s %9.3f %9.3f %8.2f %8.1f %9.3f %9.1f %12s\n", label.c_str(), heads.c_str(), old_ms, new_ms,
                old_ms / new_ms, tflops, floor, new_ms / floor,
                s.anchor_ms > 0 ? (std::to_string(s.anchor_ms / new_ms) + " " + s.anchor).c_str() : "-");
    rows.push_back({{"shape", label},         {"heads", heads},           {"tokens", T},
                    {"old_ms", old_ms},       {"new_ms", new_ms},         {"speedup", old_ms / new_ms},
                    {"nominal_tflops", tflops}, {"floor_ms", floor},      {"anchor_ms", s.anchor_ms},
                    {"anchor", s.anchor},
                    {"cycles_per_chunk",
                     {{"producer_prepare", prof.producer_prepare / pc}, {"producer_wait", prof.producer_wait / pc},
                      {"producer_issue", prof.producer_issue / pc}, {"producer_finish", prof.producer_finish / pc},
                      {"consumer_wait", prof.consumer_wait / cc}, {"consumer_compute", prof.consumer_compute / cc},
                      {"consumer_other", prof.consumer_other / cc},
                      {"prepare_load_wait", prof.prepare_load_wait / pc}, {"prepare_gates_norm", prof.prepare_gates_norm / pc},
                      {"prepare_products", prof.prepare_products / pc}, {"finish_inverse", prof.finish_inverse / pc},
                      {"finish_t_gated", prof.finish_t_gated / pc}}}});
  }
  return rows;
}

const RoutineRegistration registration{
    {"gdn_prefill_fast", "GDN prefill: warp-specialised kernel vs the current one (issue 5 shapes)", run_gdn_prefill_fast}};

}  // namespace
}  // namespace fastinfer::bench
