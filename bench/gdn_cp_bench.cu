// Routine "gdn_cp": the context-parallel GDN prefill (issue 6) end to end on the issue's shapes:
// the whole CP call (gdn::prefill, use_cp On) with and without programmatic dependent launch,
// the non-CP path (use_cp Off), what Auto picks, per-stage times (stages 1, 1-2, 1-3 timed alone;
// stage 4 = whole - stages 1-3), the floor (bytes at the measured copy bandwidth vs the nominal
// 4 T Hv 128^2 flops at the measured bf16 peak) and the anchors; the host cost of a warm CP call
// against four raw cudaLaunchKernel calls of an empty kernel in the same process.
#include <cstdio>
#include <string>
#include <vector>

#include "gdn/cp.h"
#include "gdn/prefill_validate.h"
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
  // The issue's cases, then cases around the Auto rule's crossover (N x Hsab from 32 to 256).
  std::vector<CpCase> cases = {{16, 32, 1, 1024, 0.567}, {16, 32, 1, 8192, 0.831}, {16, 32, 1, 32768, 2.64},
                               {16, 32, 1, 131072, 10.1}, {16, 64, 1, 65536, 0},     {2, 8, 1, 8192, 0},
                               {2, 8, 1, 65536, 0},       {16, 32, 1, 2048, 0},      {16, 32, 1, 4096, 0},
                               {16, 32, 2, 8192, 0},      {16, 32, 4, 8192, 0},      {16, 32, 8, 4096, 0},
                               {2, 8, 4, 2048, 0},        {2, 8, 16, 4096, 0},
                               // Around N Hsab = 48-64 for the Auto rule (session 7): longer and shorter sequences.
                               {16, 64, 1, 16384, 0},     {16, 64, 1, 32768, 0},     {16, 48, 1, 32768, 0},
                               {16, 32, 2, 32768, 0},     {2, 8, 8, 8192, 0},        {2, 8, 8, 32768, 0},
                               {16, 64, 1, 2048, 0},      {16, 64, 1, 4096, 0},      {16, 64, 1, 8192, 0},
                               {2, 8, 4, 8192, 0},        {16, 32, 3, 8192, 0}};
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int host_reps = options.quick ? 200 : 2000;
  void* no_args[] = {nullptr};
  const double raw4_us = host_us_per_call([&] {
    for (int i = 0; i < 4; ++i)
      FASTINFER_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(&empty_kernel), dim3(1), dim3(32), no_args, 0, stream));
  }, host_reps);
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));

  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-16s %6s %8s %8s %8s %8s %6s %8s %8s %8s %8s %8s %7s %6s\n", "Hq/Hv NxL", "chunks", "cp ms", "nopdl",
              "non-cp", "auto", "pick", "st1", "st2", "st3", "st4", "floor", "TFLOP/s", "fla");
  const int warm = 2, reps = options.quick ? 5 : 15;
  for (const CpCase& c : cases) {
    const std::string label = std::to_string(c.hq) + "/" + std::to_string(c.hv) + " " + std::to_string(c.seqs) +
                              "x" + std::to_string(c.len);
    if (!options.only_shapes.empty() && label.find(options.only_shapes) == std::string::npos) continue;
    const std::int64_t T = c.seqs * c.len, hsab = std::max(c.hq, c.hv);
    DeviceBuffer q(T * c.hq * 128 * 2), k(T * c.hq * 128 * 2), v(T * c.hv * 128 * 2), alpha(T * hsab * 4),
        beta(T * hsab * 4), cu((c.seqs + 1) * 4), out(T * hsab * 128 * 2);
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
    args.output = device_view(out, DType::kBFloat16, {T, hsab, 128});
    args.max_seqlen = c.len;
    const ExecContext ctx{Device::cuda(0), stream};
    const gdn::PrefillShape shape = gdn::validate_prefill(args);

    auto timed = [&](const std::function<void()>& fn) { return median_ms([&](int) { fn(); }, warm, reps, stream); };
    gdn::PrefillArgs on = args, off = args, autop = args;
    on.use_cp = gdn::UseCp::kOn;
    off.use_cp = gdn::UseCp::kOff;
    autop.use_cp = gdn::UseCp::kAuto;
    const double cp_ms = timed([&] { gdn::prefill(on, stream); });
    const double nopdl_ms = timed([&] {
      gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len, .programmatic_launch = false});
    });
    const double noncp_ms = timed([&] { gdn::prefill(off, stream); });
    const double auto_ms = timed([&] { gdn::prefill(autop, stream); });
    const bool auto_cp = std::abs(auto_ms - cp_ms) < std::abs(auto_ms - noncp_ms);
    double stage_ms[3];
    for (int s = 1; s <= 3; ++s)
      stage_ms[s - 1] = timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .map_splits = 0, .last_stage = s}); });
    // Stage 2 with the next-block prefetch forced on and off (CpOptions::prefetch_blocks; the rule
    // picks one).
    double st2_prefetch[2];
    for (int on = 0; on < 2; ++on)
      st2_prefetch[on] =
          timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .prefetch_blocks = on, .map_splits = 0, .last_stage = 2}); }) -
          stage_ms[0];
    // Stage 2 with bf16 hi + lo operands (CpOptions::fp16_operands false; fp16 is the default).
    const double st2_hilo =
        timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .fp16_operands = false, .map_splits = 0, .last_stage = 2}); }) -
        stage_ms[0];
    // Stage 2 on wgmma (CpOptions::wgmma_maps), and the whole CP call with it.
    const double st2_wgmma =
        timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .wgmma_maps = true, .map_splits = 0, .last_stage = 2}); }) -
        stage_ms[0];
    // The whole CP call with stage 4 on the solve-capable kernel (mma.sync consumers), as before
    // session 7 (CpOptions::stage4_without_solve 0); the default runs the kernel without the solve
    // wherever the plan covers every sequence.
    const double cp_solve_capable_ms =
        timed([&] { gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len, .stage4_without_solve = 0}); });
    // N > 1: the CP call without the max_seqlen hint (the plan sized from the token count covers
    // every sequence, so stage 4 runs without the solve fallback, on N-fold grids and workspace).
    double cp_no_hint_ms = 0;
    if (c.seqs > 1) {
      gdn::PrefillArgs no_hint = on;
      no_hint.max_seqlen = 0;
      cp_no_hint_ms = timed([&] { gdn::prefill(no_hint, stream); });
    }
    const double cp_wgmma_ms = timed([&] { gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len, .wgmma_maps = true}); });
    const double cp_mma_ms = timed([&] { gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len, .wgmma_maps = false}); });
    const double st2_mma =
        timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .wgmma_maps = false, .map_splits = 0, .last_stage = 2}); }) -
        stage_ms[0];
    // Stage 1 writing every block's Tinv (as when final states are asked for; stage 1 ignores them).
    DeviceBuffer dummy_finals(c.seqs * hsab * 128 * 128 * 4);
    const double st1_all_inverses = timed([&] {
      gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .map_splits = 1, .last_stage = 1}, static_cast<float*>(dummy_finals.get()));
    });
    // The whole CP call with stage 1 writing (and stage 2 reading) the whole fp32 Tinv of every
    // block, as before session 6.
    const double cp_all_tinv_ms = timed([&] {
      gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len, .skip_last_chunk_inverse = false, .lower_inverse_blocks = false});
    });
    // Stages 1 and 1-2 with the whole fp32 Tinv written and read (lower_inverse_blocks false).
    const double st1_full_tinv =
        timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .lower_inverse_blocks = false, .map_splits = 0, .last_stage = 1}); });
    const double st12_full_tinv =
        timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .lower_inverse_blocks = false, .map_splits = 0, .last_stage = 2}); });
    // Stage 3 with 16 and 32 rows per CTA (CpOptions::fixup_rows; the rule picks one).
    double st3_rows[2];
    for (int i = 0; i < 2; ++i)
      st3_rows[i] = timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .map_splits = 0, .last_stage = 3, .fixup_rows = 16 * (i + 1)}); }) -
                    stage_ms[1];
    // Stage 2 with one map per chunk (map_splits 1), against the rule's pieces.
    const double st2_unsplit =
        timed([&] { gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .map_splits = 1, .last_stage = 2}); }) -
        stage_ms[0];
    const auto plan = gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .map_splits = 0, .last_stage = 1}).plan;
    const double st1 = stage_ms[0], st2 = stage_ms[1] - stage_ms[0], st3 = stage_ms[2] - stage_ms[1], st4 = cp_ms - stage_ms[2];
    const double bytes = static_cast<double>(T) * (2 * c.hq + c.hv + hsab) * 128 * 2 + 2.0 * T * hsab * 4;
    const double flops = 4.0 * T * c.hv * 128 * 128;
    const double floor = floor_ms(bytes, flops);
    const double best = std::min(cp_ms, noncp_ms);
    // Host cost on the smallest case and on the short N > 1 case (its stage 4 is two launches); a
    // long case would measure the queue draining.
    const bool host_case = &c == &cases.front() || label == "2/8 4x2048";
    const double host_us = !host_case ? 0.0 : host_us_per_call([&] { gdn::prefill(on, stream); }, 100);  // 400-500 launches: below the launch queue depth
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::printf("%-16s %6lld %8.3f %8.3f %8.3f %8.3f %6s %8.3f %8.3f %8.3f %8.3f %8.4f %7.1f %6.3f\n", label.c_str(),
                static_cast<long long>(plan.chunks_per_seq), cp_ms, nopdl_ms, noncp_ms, auto_ms, auto_cp ? "cp" : "plain",
                st1, st2, st3, st4, floor, flops / (best * 1e-3) / 1e12, c.fla_ms);
    rows.push_back({{"case", label}, {"chunk_len", plan.chunk_len}, {"chunks_per_seq", plan.chunks_per_seq},
                    {"cp_ms", cp_ms}, {"cp_ms_no_pdl", nopdl_ms}, {"non_cp_ms", noncp_ms}, {"auto_ms", auto_ms},
                    {"auto_picked_cp", auto_cp}, {"stage1_ms", st1}, {"stage2_ms", st2}, {"stage3_ms", st3},
                    {"stage4_ms", st4}, {"floor_ms", floor}, {"floor_ratio", best / floor},
                    {"nominal_tflops", flops / (best * 1e-3) / 1e12}, {"fla_anchor_ms", c.fla_ms},
                    {"fla_ratio", c.fla_ms > 0 ? best / c.fla_ms : 0.0}, {"host_us_per_call", host_us}});
    std::printf("  stage 2 (%lld pieces per chunk): %.3f ms, bf16 hi + lo operands %.3f ms, next-block prefetch off / on %.3f / %.3f ms, one piece per chunk %.3f ms\n",
                static_cast<long long>(plan.map_splits), st2, st2_hilo, st2_prefetch[0], st2_prefetch[1], st2_unsplit);
    std::printf("  stage 2 wgmma %.3f ms (mma.sync %.3f); CP call with wgmma stage 2 %.3f ms, mma.sync %.3f ms\n", st2_wgmma,
                st2_mma, cp_wgmma_ms, cp_mma_ms);
    rows.back()["stage2_mma_sync_ms"] = st2_mma;
    std::printf("  stage 4 on the solve-capable kernel %.3f ms (CP call %.3f ms); default %.3f ms\n",
                cp_solve_capable_ms - stage_ms[2], cp_solve_capable_ms, st4);
    rows.back()["cp_stage4_solve_capable_ms"] = cp_solve_capable_ms;
    rows.back()["stage4_solve_capable_ms"] = cp_solve_capable_ms - stage_ms[2];
    if (c.seqs > 1) {
      std::printf("  CP call without the max_seqlen hint %.3f ms\n", cp_no_hint_ms);
      rows.back()["cp_no_hint_ms"] = cp_no_hint_ms;
    }
    std::printf("  stage 1 writing every chunk's Tinv %.3f ms (the last chunk's skipped: %.3f)\n", st1_all_inverses, st1);
    std::printf("  whole fp32 Tinv (lower_inverse_blocks off): stage 1 %.3f ms, stage 2 %.3f ms\n", st1_full_tinv,
                st12_full_tinv - st1_full_tinv);
    std::printf("  CP call with every block's whole Tinv %.3f ms\n", cp_all_tinv_ms);
    rows.back()["cp_all_tinv_ms"] = cp_all_tinv_ms;
    rows.back()["stage1_full_tinv_ms"] = st1_full_tinv;
    rows.back()["stage2_full_tinv_ms"] = st12_full_tinv - st1_full_tinv;
    rows.back()["stage1_all_inverses_ms"] = st1_all_inverses;
    std::printf("  stage 3 with 16 rows per CTA %.3f ms, 32 rows %.3f ms\n", st3_rows[0], st3_rows[1]);
    rows.back()["stage3_rows16_ms"] = st3_rows[0];
    rows.back()["stage3_rows32_ms"] = st3_rows[1];
    rows.back()["stage2_wgmma_ms"] = st2_wgmma;
    rows.back()["cp_wgmma_maps_ms"] = cp_wgmma_ms;
    rows.back()["cp_mma_maps_ms"] = cp_mma_ms;
    rows.back()["stage2_hilo_ms"] = st2_hilo;
    rows.back()["stage2_no_prefetch_ms"] = st2_prefetch[0];
    rows.back()["stage2_prefetch_ms"] = st2_prefetch[1];
    rows.back()["stage2_one_piece_ms"] = st2_unsplit;
    rows.back()["map_splits"] = plan.map_splits;
    if (host_us > 0)
      std::printf("host (%s): warm CP call %.2f us, 4 raw cudaLaunchKernel %.2f us (ratio %.2f)\n", label.c_str(), host_us, raw4_us,
                  host_us / raw4_us);
  }
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  return {{"raw_4_launches_us", raw4_us}, {"rows", rows}};
}

const RoutineRegistration registration{{"gdn_cp", "GDN context-parallel prefill, end to end (stages 1-4)", run_gdn_cp}};

}  // namespace
}  // namespace fastinfer::bench
