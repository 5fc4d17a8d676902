// Routine "gdn_prefill": the issue's table -- median GPU ms and nominal TFLOP/s
// (4 * T * Hv * 128^2 / time, FlashInfer's formula) for heads 16/32 and 16/64, against the
// anchors of issue 5 and the floor (max of input + output bytes over the measured copy bandwidth
// and nominal flops over the measured bf16 peak). Inputs bf16, alpha in [0.9, 1), beta in
// [0.05, 1), k L2-normalised in the kernel, no initial or final state (the anchors' setting:
// state I/O is measured separately). Besides gdn::prefill (which may pick CP or, given the max_seqlen hint, the short-sequence path), the non-CP kernel
// with each inverse source (T solved in the kernel / Tinv or T_g precomputed by CP stage 1) and where CTA 0's
// time goes in each (clock64 cycles per chunk of the producer's and the consumers' phases).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fastinfer/gdn_prefill.h"
#include "gdn/prefill_fast_launch.h"
#include "gdn/prefill_runner.h"
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

// CTA 0's cycles per chunk of one run with `options` (profile buffer added), printed and returned.
nlohmann::json phase_profile(const gdn::PrefillArgs& args, gdn::PrefillRunOptions options, const char* label) {
  DeviceBuffer buffer(sizeof(gdn::FastProfile));
  FASTINFER_CUDA_CHECK(cudaMemset(buffer.get(), 0, sizeof(gdn::FastProfile)));
  options.profile = buffer.as<unsigned long long>();
  gdn::prefill_with_options(args, nullptr, options);
  gdn::FastProfile prof{};
  FASTINFER_CUDA_CHECK(cudaMemcpy(&prof, buffer.get(), sizeof prof, cudaMemcpyDeviceToHost));
  prof.prepare_gates_norm += prof.prepare_gates;  // the kernel splits warp 0's gates off the norm
  prof.producer_prepare = prof.prepare_load_wait + prof.prepare_gates_norm + prof.prepare_products;
  prof.producer_finish = prof.finish_inverse + prof.finish_t_gated;
  // The wgmma consumers' parts (a build with FASTINFER_PREFILL_PART_PROFILE; zero otherwise).
  const unsigned long long parts[6] = {prof.consumer_prep, prof.consumer_x, prof.consumer_u,
                                       prof.consumer_o, prof.consumer_store, prof.consumer_state};
  for (const unsigned long long part : parts) prof.consumer_compute += part;
  const double pc = prof.producer_chunks ? static_cast<double>(prof.producer_chunks) : 1.0;
  const double cc = prof.consumer_chunks ? static_cast<double>(prof.consumer_chunks) : 1.0;
  std::printf("  %-5s cycles/chunk (CTA 0, %llu chunks): producer prepare %.0f (load wait %.0f gates/norm %.0f A0/P %.0f) "
              "wait %.0f issue %.0f finish %.0f (inverse %.0f T_g %.0f) | consumer wait %.0f compute %.0f other %.0f\n",
              label, prof.consumer_chunks, prof.producer_prepare / pc, prof.prepare_load_wait / pc,
              prof.prepare_gates_norm / pc, prof.prepare_products / pc, prof.producer_wait / pc, prof.producer_issue / pc,
              prof.producer_finish / pc, prof.finish_inverse / pc, prof.finish_t_gated / pc, prof.consumer_wait / cc,
              prof.consumer_compute / cc, prof.consumer_other / cc);
  if (prof.consumer_x != 0)
    std::printf("  %-5s consumer compute parts: prep %.0f S K^T + X %.0f U + S Q^T + U P^T %.0f store %.0f "
                "state %.0f; producer gates (warp 0) %.0f\n",
                label, parts[0] / cc, parts[1] / cc, (parts[2] + parts[3]) / cc, parts[4] / cc, parts[5] / cc,
                prof.prepare_gates / pc);
  return {{"producer_prepare", prof.producer_prepare / pc}, {"producer_wait", prof.producer_wait / pc},
          {"producer_issue", prof.producer_issue / pc},     {"producer_finish", prof.producer_finish / pc},
          {"consumer_wait", prof.consumer_wait / cc},       {"consumer_compute", prof.consumer_compute / cc},
          {"consumer_other", prof.consumer_other / cc},     {"prepare_load_wait", prof.prepare_load_wait / pc},
          {"prepare_gates_norm", prof.prepare_gates_norm / pc}, {"prepare_products", prof.prepare_products / pc},
          {"finish_inverse", prof.finish_inverse / pc},     {"finish_t_gated", prof.finish_t_gated / pc},
          {"consumer_prep", parts[0] / cc}, {"consumer_x", parts[1] / cc}, {"consumer_u", parts[2] / cc},
          {"consumer_o", parts[3] / cc}, {"consumer_store", parts[4] / cc}, {"consumer_state", parts[5] / cc},
          {"prepare_gates", prof.prepare_gates / pc}};
}

nlohmann::json run_gdn_prefill(const BenchOptions& options) {
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-10s %6s %9s %9s %9s %9s %8s %9s %9s %22s\n", "shape NxL", "heads", "ms", "solve ms", "tinv ms", "T_g ms",
              "TFLOP/s", "floor ms", "ms/floor", "anchor ms/ms");
  for (const PrefillShape& s : kShapes) {
    const std::string label = std::to_string(s.seqs) + "x" + std::to_string(s.len);
    if (!options.wants(label)) continue;
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
      a.max_seqlen = s.len;  // known on the host in serving: picks the short path (8192x32), sizes CP chunks
      return a;
    };
    std::vector<gdn::PrefillArgs> args;
    for (int r = 0; r < sets; ++r) args.push_back(args_for(r));
    const int reps = options.quick ? 5 : 20;
    const double ms = median_ms([&](int i) { gdn::prefill(args[i % sets]); }, 3, reps);
    const auto kernel_ms = [&](gdn::InverseSource inverse) {
      return median_ms([&](int i) { gdn::prefill_with_options(args[i % sets], nullptr, {.inverse = inverse}); }, 3, reps);
    };
    const double solve_ms = kernel_ms(gdn::InverseSource::kSolveInKernel);
    const double tinv_ms = kernel_ms(gdn::InverseSource::kPrecompute);
    const double t_gated_ms = kernel_ms(gdn::InverseSource::kPrecomputeGated);
    // The chunk table + stage 1 alone (writing T_g), the part of t_gated_ms before the kernel.
    const double stage1_ms = median_ms(
        [&](int i) {
          gdn::prefill_with_options(args[i % sets], nullptr,
                                    {.inverse = gdn::InverseSource::kPrecomputeGated, .precompute_only = true});
        },
        3, reps);
    std::printf("  stage 1 (chunk table + T_g) alone: %.3f ms\n", stage1_ms);
    // Where the workspace cap makes the kernel solve (8192 x 32 at 16/64: 12.9 GB of T_g rows),
    // T_g with the cap lifted: what the cap costs.
    if (s.seqs * std::int64_t{s.hv} > 65536) {
      const gdn::PrefillRunOptions uncapped{.inverse = gdn::InverseSource::kPrecomputeGated,
                                            .precompute_max_bytes = std::size_t{1} << 40};
      const double lifted_ms =
          median_ms([&](int i) { gdn::prefill_with_options(args[i % sets], nullptr, uncapped); }, 3, reps);
      auto stage1_only = uncapped;
      stage1_only.precompute_only = true;
      const double lifted_stage1_ms =
          median_ms([&](int i) { gdn::prefill_with_options(args[i % sets], nullptr, stage1_only); }, 3, reps);
      std::printf("  T_g with the workspace cap lifted: %.3f ms (stage 1 alone %.3f ms)\n", lifted_ms, lifted_stage1_ms);
      phase_profile(args[0], uncapped, "T_g uncapped");
    }
    const double flops = 4.0 * T * s.hv * D * D;
    const double tflops = flops / (ms * 1e-3) / 1e12;
    const double floor = floor_ms(static_cast<double>(bytes), flops);
    const std::string heads = std::to_string(s.hq) + "/" + std::to_string(s.hv);
    std::printf("%-10s %6s %9.3f %9.3f %9.3f %9.3f %8.1f %9.3f %9.1f %22s\n", label.c_str(), heads.c_str(), ms, solve_ms,
                tinv_ms, t_gated_ms, tflops, floor, ms / floor,
                s.anchor_ms > 0 ? (std::to_string(s.anchor_ms / ms) + " " + s.anchor).c_str() : "-");
    const nlohmann::json solve_profile = phase_profile(args[0], {.inverse = gdn::InverseSource::kSolveInKernel}, "solve");
    const nlohmann::json tinv_profile = phase_profile(args[0], {.inverse = gdn::InverseSource::kPrecompute}, "tinv");
    const nlohmann::json t_gated_profile = phase_profile(args[0], {.inverse = gdn::InverseSource::kPrecomputeGated}, "T_g");
    rows.push_back({{"shape", label}, {"heads", heads}, {"tokens", T}, {"median_ms", ms}, {"nominal_tflops", tflops},
                    {"solve_ms", solve_ms}, {"tinv_ms", tinv_ms}, {"t_gated_ms", t_gated_ms}, {"stage1_ms", stage1_ms}, {"floor_ms", floor}, {"anchor_ms", s.anchor_ms},
                    {"anchor", s.anchor}, {"state", "none"}, {"cycles_per_chunk_solve", solve_profile},
                    {"cycles_per_chunk_tinv", tinv_profile}, {"cycles_per_chunk_t_gated", t_gated_profile}});
  }
  // Tiny calls (1 sequence of 64 or 1024 tokens, 16/32): one launch (the kernel solves T) against
  // three (chunk table, stage 1, kernel): GPU ms and the caller's host us per call for each source.
  for (const int len : {64, 1024}) {
    const std::int64_t T = len;
    DeviceBuffer q(T * 16 * 128 * 2), k(T * 16 * 128 * 2), v(T * 32 * 128 * 2), out(T * 32 * 128 * 2), cu(8);
    DeviceBuffer alpha(T * 32 * 4), beta(T * 32 * 4);
    fill_uniform(q.get(), DType::kBFloat16, T * 16 * 128, -1, 1, 5);
    fill_uniform(k.get(), DType::kBFloat16, T * 16 * 128, -1, 1, 6);
    fill_uniform(v.get(), DType::kBFloat16, T * 32 * 128, -1, 1, 7);
    fill_uniform(alpha.get(), DType::kFloat32, T * 32, 0.9f, 1.0f, 8);
    fill_uniform(beta.get(), DType::kFloat32, T * 32, 0.05f, 1.0f, 9);
    const std::int32_t offsets[2] = {0, len};
    FASTINFER_CUDA_CHECK(cudaMemcpy(cu.get(), offsets, 8, cudaMemcpyHostToDevice));
    gdn::PrefillArgs a;
    const Device dev = Device::cuda(0);
    a.q = TensorView::contiguous(q.get(), DType::kBFloat16, {T, 16, 128}, dev);
    a.k = TensorView::contiguous(k.get(), DType::kBFloat16, {T, 16, 128}, dev);
    a.v = TensorView::contiguous(v.get(), DType::kBFloat16, {T, 32, 128}, dev);
    a.cu_seqlens = TensorView::contiguous(cu.get(), DType::kInt32, {2}, dev);
    a.alpha = TensorView::contiguous(alpha.get(), DType::kFloat32, {T, 32}, dev);
    a.beta = TensorView::contiguous(beta.get(), DType::kFloat32, {T, 32}, dev);
    a.use_qk_l2norm = true;
    a.use_cp = gdn::UseCp::kOff;
    a.output = TensorView::contiguous(out.get(), DType::kBFloat16, {T, 32, 128}, dev);
    const std::string label = "1x" + std::to_string(len);
    nlohmann::json row{{"shape", label + " tiny call"}, {"heads", "16/32"}};
    for (const auto& [name, source] : {std::pair{"solve", gdn::InverseSource::kSolveInKernel},
                                       std::pair{"tinv", gdn::InverseSource::kPrecompute},
                                       std::pair{"t_gated", gdn::InverseSource::kPrecomputeGated},
                                       std::pair{"auto", gdn::InverseSource::kAuto}}) {
      const auto call = [&, source = source] { gdn::prefill_with_options(a, nullptr, {.inverse = source}); };
      const double ms = median_ms([&](int) { call(); }, 5, options.quick ? 10 : 50);
      const double us = host_us_per_call(call, options.quick ? 200 : 2000);
      std::printf("tiny call %s 16/32 %-7s: %.4f ms GPU, %.2f us host per call\n", label.c_str(), name, ms, us);
      row[std::string(name) + "_ms"] = ms;
      row[std::string(name) + "_host_us"] = us;
    }
    rows.push_back(row);
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
    {"gdn_prefill", "GDN prefill: median ms, nominal TFLOP/s, floor, inverse sources, phase profile (issue 5 table)", run_gdn_prefill}};

}  // namespace
}  // namespace fastinfer::bench
