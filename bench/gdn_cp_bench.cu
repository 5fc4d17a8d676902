// Routine "gdn_cp": the context-parallel GDN prefill (issue 6) end to end on the issue's shapes:
// the whole CP call (gdn::prefill, use_cp On) with and without programmatic dependent launch,
// the non-CP path (use_cp Off), what Auto picks, per-stage times (stages 1, 1-2, 1-3 timed alone;
// stage 4 = whole - stages 1-3), the floor (bytes at the measured copy bandwidth vs the nominal
// 4 T Hv 128^2 flops at the measured bf16 peak) and the anchors; the host cost of a warm CP call
// against four raw cudaLaunchKernel calls of an empty kernel in the same process.
#include <cupti_activity.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

  std::string label() const {  // "Hq/Hv NxL", e.g. "16/32 1x131072"
    return std::to_string(hq) + "/" + std::to_string(hv) + " " + std::to_string(seqs) + "x" + std::to_string(len);
  }
};

TensorView device_view(const DeviceBuffer& b, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(b.get(), t, shape, Device::cuda(0));
}

// One case's inputs on the device: `seqs` sequences of `len` tokens, bf16 q / k / v in [-1, 1],
// alpha in [0.99, 1) (long memory: the CP setting), beta in [0.05, 1), k L2-normalised in the
// kernel, no state; `args` views them (the buffers stay here: neither copied nor moved).
struct CpInputs {
  DeviceBuffer q, k, v, alpha, beta, cu, out;
  gdn::PrefillArgs args;

  CpInputs(int hq, int hv, std::int64_t seqs, std::int64_t len, cudaStream_t stream)
      : q(seqs * len * hq * 128 * 2), k(seqs * len * hq * 128 * 2), v(seqs * len * hv * 128 * 2),
        alpha(seqs * len * std::max(hq, hv) * 4), beta(seqs * len * std::max(hq, hv) * 4), cu((seqs + 1) * 4),
        out(seqs * len * std::max(hq, hv) * 128 * 2) {
    const std::int64_t T = seqs * len, hsab = std::max(hq, hv);
    fill_uniform(q.get(), DType::kBFloat16, T * hq * 128, -1, 1, 1, stream);
    fill_uniform(k.get(), DType::kBFloat16, T * hq * 128, -1, 1, 2, stream);
    fill_uniform(v.get(), DType::kBFloat16, T * hv * 128, -1, 1, 3, stream);
    fill_uniform(alpha.get(), DType::kFloat32, T * hsab, 0.99f, 1.0f, 4, stream);
    fill_uniform(beta.get(), DType::kFloat32, T * hsab, 0.05f, 1.0f, 5, stream);
    std::vector<std::int32_t> offsets(seqs + 1);
    for (std::int64_t i = 0; i <= seqs; ++i) offsets[i] = static_cast<std::int32_t>(i * len);
    FASTINFER_CUDA_CHECK(cudaMemcpy(cu.get(), offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));
    args.q = device_view(q, DType::kBFloat16, {T, hq, 128});
    args.k = device_view(k, DType::kBFloat16, {T, hq, 128});
    args.v = device_view(v, DType::kBFloat16, {T, hv, 128});
    args.alpha = device_view(alpha, DType::kFloat32, {T, hsab});
    args.beta = device_view(beta, DType::kFloat32, {T, hsab});
    args.cu_seqlens = device_view(cu, DType::kInt32, {seqs + 1});
    args.use_qk_l2norm = true;
    args.output = device_view(out, DType::kBFloat16, {T, hsab, 128});
    args.max_seqlen = len;
  }
  CpInputs(const CpInputs&) = delete;
  CpInputs& operator=(const CpInputs&) = delete;
};

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
    const std::string label = c.label();
    if (!options.wants(label)) continue;
    const std::int64_t T = c.seqs * c.len, hsab = std::max(c.hq, c.hv);
    const CpInputs inputs(c.hq, c.hv, c.seqs, c.len, stream);
    gdn::PrefillArgs args = inputs.args;
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

// ---- Routine "gdn_cp_timeline": where the time of one short CP call goes (issue 6, the small
// cases). CUPTI's concurrent-kernel activity records (GPU timestamps, no serialisation) of a few
// back-to-back warm calls, with and without programmatic dependent launch: each kernel's start,
// end and the gap to the previous kernel's end (negative: it started early, PDL). libcupti is
// opened at run time (dlopen), so the bench links nothing new; without it the routine says so.
using CuptiRegister = CUptiResult (*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
using CuptiKind = CUptiResult (*)(CUpti_ActivityKind);
using CuptiFlush = CUptiResult (*)(uint32_t);
using CuptiNext = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);

struct KernelRecord {
  std::string name;
  std::uint64_t start, end;
  int grid_x, grid_y, grid_z;
};

struct Cupti {
  CuptiRegister register_callbacks = nullptr;
  CuptiKind enable = nullptr, disable = nullptr;
  CuptiFlush flush = nullptr;
  CuptiNext next = nullptr;
  bool ok = false;
  static std::vector<KernelRecord>& records() {
    static std::vector<KernelRecord> r;
    return r;
  }
  static Cupti& get() {
    static Cupti c = [] {
      Cupti x;
      void* lib = dlopen("libcupti.so.13", RTLD_NOW);
      if (lib == nullptr) lib = dlopen("libcupti.so", RTLD_NOW);
      if (lib == nullptr) return x;
      x.register_callbacks = reinterpret_cast<CuptiRegister>(dlsym(lib, "cuptiActivityRegisterCallbacks"));
      x.enable = reinterpret_cast<CuptiKind>(dlsym(lib, "cuptiActivityEnable"));
      x.disable = reinterpret_cast<CuptiKind>(dlsym(lib, "cuptiActivityDisable"));
      x.flush = reinterpret_cast<CuptiFlush>(dlsym(lib, "cuptiActivityFlushAll"));
      x.next = reinterpret_cast<CuptiNext>(dlsym(lib, "cuptiActivityGetNextRecord"));
      x.ok = x.register_callbacks && x.enable && x.disable && x.flush && x.next &&
             x.register_callbacks(&requested, &completed) == CUPTI_SUCCESS;
      return x;
    }();
    return c;
  }
  static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *size = 1 << 20;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
    *max_records = 0;
  }
  static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    while (get().next(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      records().push_back({k->name ? k->name : "?", k->start, k->end, k->gridX, k->gridY, k->gridZ});
    }
    std::free(buffer);
  }
};

// A short readable name of a CP pipeline kernel.
std::string stage_name(const std::string& mangled) {
  if (mangled.find("block_inverse") != std::string::npos) return "st1 block_inverse";
  if (mangled.find("chunk_maps") != std::string::npos) return "st2 chunk_maps";
  if (mangled.find("fixup") != std::string::npos) return "st3 fixup";
  if (mangled.find("prefill") != std::string::npos) return "st4 prefill";
  return mangled.substr(0, 40);
}

nlohmann::json run_gdn_cp_timeline(const BenchOptions& options) {
  Cupti& cupti = Cupti::get();
  if (!cupti.ok) {
    std::printf("gdn_cp_timeline: libcupti not found (LD_LIBRARY_PATH), nothing measured\n");
    return {{"error", "no libcupti"}};
  }
  struct Case {
    int hq, hv;
    std::int64_t len, chunk_len;  // chunk_len 0 = the plan's rule
    int ready_tiles = -1;         // CpOptions::ready_tiles
  };
  std::vector<Case> cases = {{16, 32, 1024, 0},      {16, 32, 8192, 0},      {2, 8, 8192, 0},
                             {16, 32, 131072, 0},    {16, 32, 1024, 0, 0},   {16, 32, 8192, 0, 0},
                             {16, 32, 131072, 0, 0}};
  // The plan's alternatives at the small cases: fewer, longer CP chunks.
  for (const std::int64_t cl : {512, 1024, 2048, 4096, 8192}) cases.push_back({16, 32, 8192, cl});
  for (const std::int64_t cl : {256, 512, 1024}) cases.push_back({16, 32, 1024, cl});
  for (const std::int64_t cl : {1024, 2048, 4096}) cases.push_back({2, 8, 8192, cl});
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  nlohmann::json rows = nlohmann::json::array();
  for (const Case& c : cases) {
    const std::string label = std::to_string(c.hq) + "/" + std::to_string(c.hv) + " 1x" + std::to_string(c.len) +
                              (c.chunk_len ? " chunk " + std::to_string(c.chunk_len) : "") +
                              (c.ready_tiles == 0 ? " built T" : "");
    if (!options.wants(label)) continue;
    const CpInputs inputs(c.hq, c.hv, 1, c.len, stream);
    gdn::PrefillArgs args = inputs.args;
    const ExecContext ctx{Device::cuda(0), stream};
    const gdn::PrefillShape shape = gdn::validate_prefill(args);
    for (const bool pdl : {true, false}) {
      const gdn::detail::CpOptions opts{.max_seqlen = c.len, .chunk_len = c.chunk_len, .programmatic_launch = pdl,
                                        .ready_tiles = c.ready_tiles};
      auto call = [&] { gdn::detail::prefill_cp(args, shape, ctx, opts); };
      const double ms = median_ms([&](int) { call(); }, 3, options.quick ? 9 : 31, stream);
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
      Cupti::records().clear();
      FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
      cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      constexpr int kCalls = 3;
      for (int i = 0; i < kCalls; ++i) call();
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
      cupti.flush(1);  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
      cupti.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      auto recs = Cupti::records();
      std::sort(recs.begin(), recs.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.start < b.start; });
      if (recs.empty()) continue;
      // The last call (its first kernel is stage 1): relative to its stage-1 start.
      std::size_t first = 0;
      for (std::size_t i = 0; i < recs.size(); ++i)
        if (stage_name(recs[i].name).rfind("st1", 0) == 0) first = i;
      const std::uint64_t t0 = recs[first].start;
      const double prev_call_end_gap = first > 0 ? (static_cast<double>(t0) - static_cast<double>(recs[first - 1].end)) / 1e3 : 0;
      std::printf("%-28s %s: median %.3f ms (events), last of %d calls by CUPTI: %.1f us from stage-1 start to the last end; "
                  "previous call's end -> stage 1 start %.1f us\n",
                  label.c_str(), pdl ? "PDL" : "no PDL", ms, kCalls, (recs.back().end - t0) / 1e3, prev_call_end_gap);
      nlohmann::json kernels = nlohmann::json::array();
      for (std::size_t i = first; i < recs.size(); ++i) {
        const KernelRecord& r = recs[i];
        const double gap = i > first ? (static_cast<double>(r.start) - static_cast<double>(recs[i - 1].end)) / 1e3 : prev_call_end_gap;
        std::printf("    %-18s grid %5d x %3d x %2d  start %8.1f us  end %8.1f us  dur %8.1f us  gap %7.1f us\n",
                    stage_name(r.name).c_str(), r.grid_x, r.grid_y, r.grid_z, (r.start - t0) / 1e3, (r.end - t0) / 1e3,
                    (r.end - r.start) / 1e3, gap);
        kernels.push_back({{"kernel", stage_name(r.name)}, {"grid", {r.grid_x, r.grid_y, r.grid_z}},
                           {"start_us", (r.start - t0) / 1e3}, {"end_us", (r.end - t0) / 1e3},
                           {"duration_us", (r.end - r.start) / 1e3}, {"gap_us", gap}});
      }
      const auto plan = gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .chunk_len = c.chunk_len, .last_stage = 1}).plan;
      rows.push_back({{"case", label}, {"pdl", pdl}, {"median_ms", ms}, {"chunk_len", plan.chunk_len},
                      {"chunks_per_seq", plan.chunks_per_seq}, {"kernels", kernels}});
    }
  }
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  return {{"rows", rows}};
}

// ---- Routine "gdn_cp_ready": stage 2 on stage 1's ready tiles (CpOptions::ready_tiles) against
// stage 2 building its operands from Tinv, in one process: per case and setting the whole CP call
// and stages 1, 1-2, 1-3 timed alone (stage 4 = whole - stages 1-3), and stage 2 with the ready
// tiles with / without the next-block prefetch.
nlohmann::json run_gdn_cp_ready(const BenchOptions& options) {
  const std::vector<CpCase> cases = {{16, 32, 1, 1024, 0.567}, {16, 32, 1, 8192, 0.831}, {16, 32, 1, 32768, 2.64},
                                     {16, 32, 1, 131072, 10.1}, {16, 64, 1, 65536, 0},    {2, 8, 1, 8192, 0},
                                     {2, 8, 1, 65536, 0},       {16, 32, 2, 8192, 0}};
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-16s %6s | %8s %7s %7s %7s %7s | %8s %7s %7s %7s %7s | %7s %7s | %7s %7s %7s\n", "Hq/Hv NxL", "pieces", "cp built",
              "st1", "st2", "st3", "st4", "cp ready", "st1", "st2", "st3", "st4", "st3 r8", "st3 r16", "st2 pf0", "st2 pf1", "floor");
  const int warm = 2, reps = options.quick ? 7 : 21;
  for (const CpCase& c : cases) {
    const std::string label = c.label();
    if (!options.wants(label)) continue;
    const std::int64_t T = c.seqs * c.len, hsab = std::max(c.hq, c.hv);
    const CpInputs inputs(c.hq, c.hv, c.seqs, c.len, stream);
    gdn::PrefillArgs args = inputs.args;
    const ExecContext ctx{Device::cuda(0), stream};
    const gdn::PrefillShape shape = gdn::validate_prefill(args);
    auto timed = [&](const std::function<void()>& fn) { return median_ms([&](int) { fn(); }, warm, reps, stream); };
    nlohmann::json row = {{"case", label}};
    double st[2][4], cp[2];
    for (int ready = 0; ready < 2; ++ready) {  // built from Tinv, ready tiles
      cp[ready] = timed([&] { gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len, .ready_tiles = ready}); });
      double cum[3];
      for (int s = 1; s <= 3; ++s)
        cum[s - 1] = timed([&] {
          gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .ready_tiles = ready, .map_splits = 0, .last_stage = s});
        });
      st[ready][0] = cum[0], st[ready][1] = cum[1] - cum[0], st[ready][2] = cum[2] - cum[1], st[ready][3] = cp[ready] - cum[2];
      const char* tag = ready ? "ready" : "built";
      row[std::string("cp_ms_") + tag] = cp[ready];
      for (int s = 0; s < 4; ++s) row["stage" + std::to_string(s + 1) + "_ms_" + tag] = st[ready][s];
    }
    // Stage 3 with 8 and 16 rows per CTA (CpOptions::fixup_rows; the rule picks 16 or 32).
    double fix[2];
    for (int i = 0; i < 2; ++i)
      fix[i] = timed([&] {
                 gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .map_splits = 0, .last_stage = 3, .fixup_rows = 8 << i});
               }) - (st[1][0] + st[1][1]);
    row["stage3_rows8_ms"] = fix[0];
    row["stage3_rows16_ms"] = fix[1];
    double pf[2];
    for (int on = 0; on < 2; ++on)
      pf[on] = timed([&] {
                 gdn::detail::run_cp_stages(args, ctx,
                                            {.max_seqlen = c.len, .prefetch_blocks = on, .ready_tiles = 1, .map_splits = 0, .last_stage = 2});
               }) - st[1][0];
    const auto plan = gdn::detail::run_cp_stages(args, ctx, {.max_seqlen = c.len, .map_splits = 0, .last_stage = 1}).plan;
    const double bytes = static_cast<double>(T) * (2 * c.hq + c.hv + hsab) * 128 * 2 + 2.0 * T * hsab * 4;
    const double floor = floor_ms(bytes, 4.0 * T * c.hv * 128 * 128);
    std::printf("%-16s %6lld | %8.3f %7.3f %7.3f %7.3f %7.3f | %8.3f %7.3f %7.3f %7.3f %7.3f | %7.3f %7.3f | %7.3f %7.3f %7.4f\n",
                label.c_str(), static_cast<long long>(plan.map_splits), cp[0], st[0][0], st[0][1], st[0][2], st[0][3], cp[1], st[1][0],
                st[1][1], st[1][2], st[1][3], fix[0], fix[1], pf[0], pf[1], floor);
    row["stage2_ready_no_prefetch_ms"] = pf[0];
    row["stage2_ready_prefetch_ms"] = pf[1];
    row["map_splits"] = plan.map_splits;
    row["floor_ms"] = floor;
    rows.push_back(row);
  }
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  return {{"rows", rows}};
}

// ---- Routine "gdn_cp_rule": CP (both stage-2 settings) against the plain path and what Auto picks,
// on the rows around the Auto rule's boundaries (cp_plan.h should_use_cp) where stage 2 runs (two
// or more CP chunks per sequence).
nlohmann::json run_gdn_cp_rule(const BenchOptions& options) {
  const std::vector<CpCase> cases = {{16, 32, 1, 1024, 0}, {16, 32, 1, 2048, 0}, {16, 32, 1, 4096, 0}, {16, 64, 1, 2048, 0},
                                     {16, 64, 1, 4096, 0}, {16, 64, 1, 8192, 0}, {16, 32, 2, 4096, 0}, {16, 32, 2, 8192, 0},
                                     {2, 8, 4, 2048, 0},   {2, 8, 8, 4096, 0},   {2, 8, 8, 8192, 0}};
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-16s %6s %9s %9s %9s %9s %6s\n", "Hq/Hv NxL", "N Hsab", "cp ready", "cp built", "non-cp", "auto", "pick");
  const int warm = 2, reps = options.quick ? 9 : 31;
  for (const CpCase& c : cases) {
    const std::string label = c.label();
    if (!options.wants(label)) continue;
    const std::int64_t hsab = std::max(c.hq, c.hv);
    const CpInputs inputs(c.hq, c.hv, c.seqs, c.len, stream);
    gdn::PrefillArgs args = inputs.args;
    const ExecContext ctx{Device::cuda(0), stream};
    const gdn::PrefillShape shape = gdn::validate_prefill(args);
    auto timed = [&](const std::function<void()>& fn) { return median_ms([&](int) { fn(); }, warm, reps, stream); };
    gdn::PrefillArgs off = args, autop = args;
    off.use_cp = gdn::UseCp::kOff;
    autop.use_cp = gdn::UseCp::kAuto;
    const double ready_ms = timed([&] { gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len}); });
    const double built_ms = timed([&] { gdn::detail::prefill_cp(args, shape, ctx, {.max_seqlen = c.len, .ready_tiles = 0}); });
    const double plain_ms = timed([&] { gdn::prefill(off, stream); });
    const double auto_ms = timed([&] { gdn::prefill(autop, stream); });
    const bool auto_cp = std::abs(auto_ms - ready_ms) < std::abs(auto_ms - plain_ms);
    std::printf("%-16s %6lld %9.3f %9.3f %9.3f %9.3f %6s\n", label.c_str(), static_cast<long long>(c.seqs * hsab), ready_ms,
                built_ms, plain_ms, auto_ms, auto_cp ? "cp" : "plain");
    rows.push_back({{"case", label}, {"cp_ready_ms", ready_ms}, {"cp_built_ms", built_ms}, {"non_cp_ms", plain_ms},
                    {"auto_ms", auto_ms}, {"auto_picked_cp", auto_cp}});
  }
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  return {{"rows", rows}};
}

const RoutineRegistration rule_registration{
    {"gdn_cp_rule", "GDN CP prefill: CP vs plain vs Auto around the Auto rule's boundaries", run_gdn_cp_rule}};

const RoutineRegistration ready_registration{
    {"gdn_cp_ready", "GDN CP prefill: stage 2 on stage 1's ready tiles vs built from Tinv (per stage)", run_gdn_cp_ready}};

const RoutineRegistration timeline_registration{
    {"gdn_cp_timeline", "GDN CP prefill: per-kernel timeline of short calls (CUPTI), PDL on/off, chunk lengths", run_gdn_cp_timeline}};

}  // namespace
}  // namespace fastinfer::bench
