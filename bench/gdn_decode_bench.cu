// Routine "gdn_decode": GDN decode / MTP against a state pool (issue 7). Per shape: median GPU
// time of the production path (gdn::decode, heuristic tactic) with pool slots and inputs rotated
// over more than the L2, achieved bandwidth vs the copy bandwidth measured in this process, the
// floor, the anchor of the issue (flash-linear-attention fused_recurrent on this H200), every
// tactic's time (unless --quick), and the host cost per call vs a raw empty-kernel launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "fastinfer/device.h"
#include "fastinfer/gdn.h"
#include "gdn/decode_params.h"
#include "gdn/decode_runner.h"
#include "gdn/decode_tunable.h"
#include "gdn/kernels/decode_pipelined_sm90.cuh"
#include "gdn/kernels/decode_profile.cuh"
#include "fastinfer/tune.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

constexpr std::int64_t D = 128;

__global__ void empty_kernel() {}

// Keeps the GPU busy for `cycles` so that the host queues the timed calls behind it.
__global__ void spin_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// Median GPU ms of fn(i) with the calls queued behind a spin kernel, so that the events time the
// GPU only: at B <= 8 a call takes less GPU time than the host needs to issue it, and median_ms's
// events would then also time the host's issue gap (the GPU drains between calls). A served
// decode step (CUDA graph) runs queued like this.
double queued_median_ms(const std::function<void(int)>& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn(i);
  std::vector<cudaEvent_t> events(2 * reps);
  for (auto& e : events) FASTINFER_CUDA_CHECK(cudaEventCreate(&e));
  spin_kernel<<<1, 1>>>(2'000'000LL + 100'000LL * reps);  // ~1 ms + 50 us per call at ~2 GHz (issue: ~5 us)
  FASTINFER_CUDA_CHECK(cudaGetLastError());
  for (int i = 0; i < reps; ++i) {
    FASTINFER_CUDA_CHECK(cudaEventRecord(events[2 * i], nullptr));
    fn(warmup + i);
    FASTINFER_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], nullptr));
  }
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) FASTINFER_CUDA_CHECK(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]));
  for (auto& e : events) cudaEventDestroy(e);
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2];
}

// Batches whose GPU time is below the host's issue time: timed queued (queued_median_ms).
constexpr int kQueuedMaxBatch = 8;

struct Shape {
  int batch, tokens, heads_qk, heads_v;
  DType state;
  std::string label() const {
    return "B" + std::to_string(batch) + "_T" + std::to_string(tokens) + "_" + std::to_string(heads_qk) + "x" +
           std::to_string(heads_v) + "_" + (state == DType::kFloat32 ? "f32" : "bf16");
  }
};

// Issue 7 anchor: flash-linear-attention fused_recurrent, heads 16/32, fp32 state, T = 1, this H200.
double anchor_ms(const Shape& s) {
  if (s.heads_qk != 16 || s.heads_v != 32 || s.state != DType::kFloat32 || s.tokens != 1) return 0;
  if (s.batch == 256) return 0.446;
  if (s.batch == 32) return 0.126;
  if (s.batch == 1) return 0.094;
  return 0;
}

// `sets` independent problems in one allocation per tensor; set i uses pool slots [i B, (i+1) B).
struct Problem {
  Shape s;
  int sets;
  DeviceBuffer q, k, v, a, b, A_log, dt_bias, state, indices, output;
  std::vector<gdn::DecodeArgs> args;  // one per set

  explicit Problem(const Shape& shape) : s(shape) {
    const std::int64_t B = s.batch, T = s.tokens, H = s.heads_qk, HV = s.heads_v;
    const std::size_t state_bytes = std::size_t(B) * HV * D * D * dtype_size(s.state);
    sets = rotation_count(state_bytes);
    const std::int64_t SB = sets * B;
    q = DeviceBuffer(SB * T * H * D * 2);
    k = DeviceBuffer(SB * T * H * D * 2);
    v = DeviceBuffer(SB * T * HV * D * 2);
    output = DeviceBuffer(SB * T * HV * D * 2);
    a = DeviceBuffer(SB * T * HV * 4);
    b = DeviceBuffer(SB * T * HV * 4);
    A_log = DeviceBuffer(HV * 4);
    dt_bias = DeviceBuffer(HV * 4);
    state = DeviceBuffer(state_bytes * sets);
    indices = DeviceBuffer(SB * 4);
    fill_uniform(q.get(), DType::kBFloat16, SB * T * H * D, -1, 1, 1);
    fill_uniform(k.get(), DType::kBFloat16, SB * T * H * D, -1, 1, 2);
    fill_uniform(v.get(), DType::kBFloat16, SB * T * HV * D, -1, 1, 3);
    fill_uniform(a.get(), DType::kFloat32, SB * T * HV, -2, 2, 4);
    fill_uniform(b.get(), DType::kFloat32, SB * T * HV, -2, 2, 5);
    fill_uniform(A_log.get(), DType::kFloat32, HV, -2, 0, 6);
    fill_uniform(dt_bias.get(), DType::kFloat32, HV, -1, 1, 7);
    fill_uniform(state.get(), s.state, std::size_t(SB) * HV * D * D, -1, 1, 8);
    std::vector<std::int32_t> slots(SB);
    for (std::int64_t i = 0; i < SB; ++i) slots[i] = static_cast<std::int32_t>(i);
    FASTINFER_CUDA_CHECK(cudaMemcpy(indices.get(), slots.data(), SB * 4, cudaMemcpyHostToDevice));

    const Device dev = Device::cuda(0);
    for (int i = 0; i < sets; ++i) {
      gdn::DecodeArgs x;
      x.q = TensorView::contiguous(q.as<std::uint16_t>() + i * B * T * H * D, DType::kBFloat16, {B, T, H, D}, dev);
      x.k = TensorView::contiguous(k.as<std::uint16_t>() + i * B * T * H * D, DType::kBFloat16, {B, T, H, D}, dev);
      x.v = TensorView::contiguous(v.as<std::uint16_t>() + i * B * T * HV * D, DType::kBFloat16, {B, T, HV, D}, dev);
      x.output = TensorView::contiguous(output.as<std::uint16_t>() + i * B * T * HV * D, DType::kBFloat16, {B, T, HV, D}, dev);
      x.a = TensorView::contiguous(a.as<float>() + i * B * T * HV, DType::kFloat32, {B, T, HV}, dev);
      x.b = TensorView::contiguous(b.as<float>() + i * B * T * HV, DType::kFloat32, {B, T, HV}, dev);
      x.A_log = TensorView::contiguous(A_log.get(), DType::kFloat32, {HV}, dev);
      x.dt_bias = TensorView::contiguous(dt_bias.get(), DType::kFloat32, {HV}, dev);
      x.state = TensorView::contiguous(state.get(), s.state, {SB, HV, D, D}, dev);
      x.initial_state_indices = TensorView::contiguous(indices.as<std::int32_t>() + i * B, DType::kInt32, {B}, dev);
      args.push_back(x);
    }
  }

  // State read + written, q/k/v read, output written (gates are negligible).
  double bytes() const {
    const double B = s.batch, T = s.tokens;
    return 2.0 * B * s.heads_v * D * D * dtype_size(s.state) + B * T * (2.0 * s.heads_qk + 2.0 * s.heads_v) * D * 2;
  }
};

// A device-to-device copy of one set's state bytes (read + written: the decode's state traffic)
// timed like the decode: what the copy engine path achieves at this size, launch and ramp included.
double matched_copy_ms(const Problem& p, DeviceBuffer& dst) {
  const std::size_t bytes = std::size_t(p.s.batch) * p.s.heads_v * D * D * dtype_size(p.s.state);
  if (dst.bytes() < bytes) dst = DeviceBuffer(bytes);
  return median_ms([&](int i) {
    const char* src = p.state.as<const char>() + std::size_t(i % p.sets) * bytes;
    FASTINFER_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src, bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
}

// L<lanes>R<rows>W<warps>, then P<ctas per SM> for the pipelined kernel, C for the tensor-core one.
std::string tactic_label(const gdn::DecodeTactic& t) {
  std::string label =
      "L" + std::to_string(t.lanes_per_row) + "R" + std::to_string(t.rows_per_thread) + "W" + std::to_string(t.warps);
  if (t.pipelined()) label += "P" + std::to_string(t.ctas_per_sm);
  if (t.chunked) label += "C";
  if (t.small_batch) label += "S";
  if (t.state_major) label += "M";
  if (t.dynamic_items) label += "D";
  if (t.claimed_tail) label += "T";
  return label;
}

nlohmann::json run_gdn_decode(const BenchOptions& options) {
  const Ceilings& ceil = ceilings();
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  const DeviceInfo& info = device_info(device);

  std::vector<Shape> shapes;
  for (DType st : {DType::kFloat32, DType::kBFloat16})
    for (int T : {1, 4})
      for (int B : {1, 2, 4, 8, 32, 64, 256, 512}) shapes.push_back({B, T, 16, 32, st});
  if (!options.quick) shapes.push_back({256, 1, 16, 64, DType::kFloat32});

  const double raw_launch_us = host_us_per_call([] { empty_kernel<<<1, 32>>>(); }, 300);
  const double empty_queued_us = 1e3 * queued_median_ms([](int) { empty_kernel<<<1, 32>>>(); }, 5, 30);
  const double empty_events_us = 1e3 * median_ms([](int) { empty_kernel<<<1, 32>>>(); }, 5, 30);
  std::printf("copy bandwidth %.2f TB/s; raw empty-kernel launch %.2f us host, %.2f us GPU queued, %.2f us events\n",
              ceil.copy_tbps, raw_launch_us, empty_queued_us, empty_events_us);
  std::printf("%-20s %-9s %9s %8s %7s %9s %9s %-9s %9s %7s %9s %9s\n", "shape", "tactic", "ms", "TB/s", "%copy", "floor ms",
              "anchor ms", "best", "best ms", "%best", "host us", "queued ms");
  nlohmann::json rows = nlohmann::json::array();
  for (const Shape& s : shapes) {
    if (!options.only_shapes.empty() && s.label().find(options.only_shapes) == std::string::npos) continue;
    Problem p(s);
    // One pass over every set first: the fill leaves dirty lines in L2 whose write-back would
    // otherwise land in the first timed calls (B = 1: +0.5-0.9 us on the production path's median).
    for (const auto& x : p.args) gdn::decode(x);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    const int reps = options.quick ? 10 : 30;
    const double ms = median_ms([&](int i) { gdn::decode(p.args[i % p.sets]); }, 5, reps);
    const double floor = floor_ms(p.bytes(), 0);
    const double tbps = p.bytes() / (ms * 1e-3) / 1e12;
    const gdn::DecodeTactic chosen = gdn::choose_decode_tactic(s.state, s.batch, s.heads_v, s.tokens, info);
    // Small batches: the production path's GPU time queued too; the sweep is timed queued there
    // (what picks the kernel), the events of median_ms elsewhere.
    const bool queued = s.batch <= kQueuedMaxBatch;
    const double queued_ms = queued ? queued_median_ms([&](int i) { gdn::decode(p.args[i % p.sets]); }, 5, reps) : -1;
    auto time_ms = [&](const std::function<void(int)>& fn) {
      return queued ? queued_median_ms(fn, 3, 15) : median_ms(fn, 3, 15);
    };

    nlohmann::json tactics = nlohmann::json::object();
    std::string sweep;  // "label=ms" of every tactic, printed under the row
    std::string best = tactic_label(chosen);
    double best_ms = queued ? queued_ms : ms;
    if (!options.quick) {
      for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, s.state)) {
        auto runner = gdn::decode_runner({DType::kBFloat16, s.state, t});
        std::vector<gdn::DecodeParams> params;
        for (const auto& x : p.args) params.push_back(gdn::make_decode_params(x));
        const double t_ms = time_ms([&](int i) { runner->run(params[i % p.sets], nullptr); });
        tactics[tactic_label(t)] = t_ms;
        char item[48];
        std::snprintf(item, sizeof item, " %s=%.4f", tactic_label(t).c_str(), t_ms);
        sweep += item;
        if (t_ms < best_ms) best_ms = t_ms, best = tactic_label(t);
      }
    }
    // The best tactic with eager decay (decode_token_step.cuh): what the lazy decay saves on MTP.
    double eager_ms = -1;
    if (!options.quick && s.tokens > 1) {
      gdn::DecodeTactic best_tactic = chosen;
      for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, s.state))
        if (tactic_label(t) == best) best_tactic = t;
      auto runner = gdn::decode_runner({DType::kBFloat16, s.state, best_tactic});
      std::vector<gdn::DecodeParams> params;
      for (const auto& x : p.args) {
        params.push_back(gdn::make_decode_params(x));
        params.back().lazy_decay = false;
      }
      eager_ms = time_ms([&](int i) { runner->run(params[i % p.sets], nullptr); });
      char item[48];
      std::snprintf(item, sizeof item, " eager(%s)=%.4f", best.c_str(), eager_ms);
      sweep += item;
    }
    // The production path after tune mode profiled this batch's bucket on the live inputs (the
    // tuner then serves the measured winner instead of the heuristic).
    double tuned_ms = -1;
    std::string tuned = "-";
    if (!options.quick) {
      {
        tune::Scope scope({.tune_mode = true});
        gdn::decode(p.args[0]);
      }
      tuned_ms = queued ? queued_median_ms([&](int i) { gdn::decode(p.args[i % p.sets]); }, 3, reps)
                        : median_ms([&](int i) { gdn::decode(p.args[i % p.sets]); }, 3, reps);
      const auto op = gdn::detail::decode_op_runner(device, DType::kBFloat16, s.state, s.tokens, s.heads_qk, s.heads_v);
      tuned = op->tactic_name(tune::Tuner::global().choose(op->tune_key(), s.batch).tactic);
      char item[64];
      std::snprintf(item, sizeof item, " tuned(%s)=%.4f", tuned.c_str(), tuned_ms);
      sweep += item;
    }
    // Host cost only where the GPU keeps up with the host (small shapes), so the queue never fills.
    double host_us = -1;
    if (s.batch == 1) host_us = host_us_per_call([&] { gdn::decode(p.args[0]); }, 300);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    // Last: the copy leaves dirty lines in L2 that would slow the decode timings after it.
    DeviceBuffer copy_dst;
    const double copy_ms = matched_copy_ms(p, copy_dst);

    const double anchor = anchor_ms(s);
    // %copy = floor / time (the floor is these bytes at the copy bandwidth); %best the same for the
    // best tactic (queued times at B <= 8).
    std::printf("%-20s %-9s %9.4f %8.2f %6.1f%% %9.4f %9.3f %-9s %9.4f %6.1f%% %9.2f %9.4f\n", s.label().c_str(),
                tactic_label(chosen).c_str(), ms, tbps, 100.0 * floor / ms, floor, anchor, best.c_str(), best_ms,
                100.0 * floor / best_ms, host_us, queued_ms);
    std::printf("  matched copy %.4f ms (%.1f%% of the copy bandwidth; decode / copy %.3f)\n", copy_ms,
                100.0 * floor_ms(2.0 * s.batch * s.heads_v * D * D * dtype_size(s.state), 0) / copy_ms, ms / copy_ms);
    if (!sweep.empty()) std::printf("  sweep:%s\n", sweep.c_str());
    std::fflush(stdout);
    rows.push_back({{"shape", s.label()}, {"batch", s.batch}, {"tokens", s.tokens}, {"heads_qk", s.heads_qk},
                    {"heads_v", s.heads_v}, {"state", std::string(dtype_name(s.state))}, {"tactic", tactic_label(chosen)},
                    {"median_ms", ms}, {"tbps", tbps}, {"fraction_of_copy", tbps / ceil.copy_tbps},
                    {"floor_ms", floor}, {"floor_ratio", ms / floor}, {"anchor_ms", anchor}, {"best_tactic", best}, {"best_ms", best_ms}, {"best_eager_ms", eager_ms}, {"tuned_tactic", tuned}, {"tuned_ms", tuned_ms},
                    {"tactics_ms", tactics}, {"host_us", host_us}, {"raw_launch_us", raw_launch_us},
                    {"queued_ms", queued_ms}, {"sweep_timing", queued ? "queued" : "events"}, {"matched_copy_ms", copy_ms}});
  }
  return {{"copy_tbps", ceil.copy_tbps}, {"raw_launch_us", raw_launch_us}, {"empty_kernel_queued_us", empty_queued_us},
          {"empty_kernel_events_us", empty_events_us}, {"rows", rows}};
}

// Routine "gdn_decode_scan": the production path against the batch (B = 16..256, T = 1 and 4, heads
// 16/32, fp32 and bf16 pools) next to a matched copy, so that the fixed cost of a call (launch,
// pipeline start, last wave) and the marginal rate separate: time(B) = fixed + B x per-sequence.
nlohmann::json run_gdn_decode_scan(const BenchOptions& options) {
  const Ceilings& ceil = ceilings();
  std::printf("copy bandwidth %.2f TB/s\n%-20s %-9s %9s %7s %9s %9s %7s\n", ceil.copy_tbps, "shape", "tactic", "ms", "%copy",
              "floor ms", "copy ms", "%copy");
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  const DeviceInfo& info = device_info(device);
  nlohmann::json rows = nlohmann::json::array();
  DeviceBuffer copy_dst;
  for (DType st : {DType::kFloat32, DType::kBFloat16})
    for (int T : {1, 4})
      for (int B : {16, 24, 32, 48, 64, 80, 96, 128, 192, 256}) {
        const Shape s{B, T, 16, 32, st};
        if (!options.only_shapes.empty() && s.label().find(options.only_shapes) == std::string::npos) continue;
        Problem p(s);
        for (const auto& x : p.args) gdn::decode(x);
        FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
        const double ms = median_ms([&](int i) { gdn::decode(p.args[i % p.sets]); }, 5, options.quick ? 10 : 30);
        const double copy_ms = matched_copy_ms(p, copy_dst);
        const double floor = floor_ms(p.bytes(), 0);
        const double copy_floor = floor_ms(2.0 * B * s.heads_v * D * D * dtype_size(st), 0);
        const gdn::DecodeTactic chosen = gdn::choose_decode_tactic(st, B, s.heads_v, T, info);
        std::printf("%-20s %-9s %9.4f %6.1f%% %9.4f %9.4f %6.1f%%\n", s.label().c_str(), tactic_label(chosen).c_str(), ms,
                    100.0 * floor / ms, floor, copy_ms, 100.0 * copy_floor / copy_ms);
        std::fflush(stdout);
        rows.push_back({{"shape", s.label()}, {"batch", B}, {"tokens", T}, {"state", std::string(dtype_name(st))},
                        {"tactic", tactic_label(chosen)}, {"median_ms", ms}, {"floor_ms", floor},
                        {"matched_copy_ms", copy_ms}, {"copy_floor_ms", copy_floor}});
      }
  return {{"copy_tbps", ceil.copy_tbps}, {"rows", rows}};
}

// Routine "gdn_decode_profile": where the time of a call goes. Profile instantiations of the
// register kernel and the pipelined kernel (decode_profile.cuh: per-CTA %globaltimer and clock64
// stamps at entry, first state load issued, first data, last tile done, exit) on the shapes where
// the fixed cost of a call matters (B = 32/64 against 256; B = 1, T = 4), next to the event time
// of the same launch and of the production kernel of the same tactic.
using ProfileLauncher = void (*)(const gdn::DecodeParams&);

template <class Act, class State, int kLanes, int kRows, int kWarps, int kCtasPerSm, bool kDynamic = false,
          int kStaticPercent = 0>
void launch_pipelined_profile(const gdn::DecodeParams& params) {
  using Cfg = gdn::decode_sm90::PipelinedConfig<Act, State, kLanes, kRows, kWarps, kCtasPerSm, kDynamic>;
  constexpr auto kernel =
      gdn::decode_sm90::gdn_decode_pipelined_kernel<Act, State, kLanes, kRows, kWarps, kCtasPerSm, true, kDynamic>;
  gdn::decode_sm90::launch_resident<Cfg, kernel, kCtasPerSm>(params, nullptr, kStaticPercent);
}

template <class Act, class State, int kLanes, int kRows, int kWarps>
void launch_register_profile(const gdn::DecodeParams& params) {
  constexpr int kRowsPerCta = kWarps * 32 / kLanes * kRows;
  const long long ctas = static_cast<long long>(params.batch) * params.heads_v * (D / kRowsPerCta);
  gdn::decode_sm90::gdn_decode_kernel<Act, State, kLanes, kRows, true><<<static_cast<unsigned>(ctas), kWarps * 32>>>(params);
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

struct ProfileCase {
  Shape shape;
  gdn::DecodeTactic tactic;
  ProfileLauncher launch;
};

// min / median / max of v (sorted in place).
std::string spread(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  char text[64];
  std::snprintf(text, sizeof text, "%6.2f %6.2f %6.2f", v.front(), v[v.size() / 2], v.back());
  return text;
}

nlohmann::json run_gdn_decode_profile(const BenchOptions& options) {
  using namespace gdn::decode_sm90;
  using bf16 = __nv_bfloat16;
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  int clock_khz = 0;
  FASTINFER_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  const gdn::DecodeTactic reg_8x4x2{8, 4, 2, 0}, reg_16x4x4{16, 4, 4, 0}, pipe_8x4x8{8, 4, 8, 1}, pipe_16x4x16{16, 4, 16, 1};
  gdn::DecodeTactic dynamic_8x4x8 = pipe_8x4x8, dynamic_16x4x16 = pipe_16x4x16;
  dynamic_8x4x8.dynamic_items = dynamic_16x4x16.dynamic_items = true;
  std::vector<ProfileCase> cases;
  for (int B : {32, 64, 256}) {
    cases.push_back({{B, 1, 16, 32, DType::kFloat32}, reg_8x4x2, &launch_register_profile<bf16, float, 8, 4, 2>});
    cases.push_back({{B, 1, 16, 32, DType::kFloat32}, pipe_8x4x8, &launch_pipelined_profile<bf16, float, 8, 4, 8, 1>});
    cases.push_back({{B, 1, 16, 32, DType::kFloat32}, dynamic_8x4x8, &launch_pipelined_profile<bf16, float, 8, 4, 8, 1, true>});
    cases.push_back({{B, 4, 16, 32, DType::kFloat32}, pipe_8x4x8, &launch_pipelined_profile<bf16, float, 8, 4, 8, 1>});
    cases.push_back({{B, 4, 16, 32, DType::kFloat32}, dynamic_8x4x8, &launch_pipelined_profile<bf16, float, 8, 4, 8, 1, true>});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, pipe_8x4x8, &launch_pipelined_profile<bf16, bf16, 8, 4, 8, 1>});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, dynamic_8x4x8, &launch_pipelined_profile<bf16, bf16, 8, 4, 8, 1, true>});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, pipe_16x4x16, &launch_pipelined_profile<bf16, bf16, 16, 4, 16, 1>});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, dynamic_16x4x16, &launch_pipelined_profile<bf16, bf16, 16, 4, 16, 1, true>});
  }
  // Session 8: the claimed-tail tactics (most items static, the rest claimed).
  gdn::DecodeTactic tail_8x4x8 = dynamic_8x4x8, tail_16x4x16 = dynamic_16x4x16;
  tail_8x4x8.claimed_tail = tail_16x4x16.claimed_tail = true;
  constexpr int kTail = gdn::kDecodeClaimedTailStaticPercent;
  for (int B : {64, 256}) {
    cases.push_back({{B, 1, 16, 32, DType::kFloat32}, tail_8x4x8, &launch_pipelined_profile<bf16, float, 8, 4, 8, 1, true, kTail>});
    cases.push_back({{B, 4, 16, 32, DType::kFloat32}, tail_8x4x8, &launch_pipelined_profile<bf16, float, 8, 4, 8, 1, true, kTail>});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, tail_8x4x8, &launch_pipelined_profile<bf16, bf16, 8, 4, 8, 1, true, kTail>});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, tail_16x4x16, &launch_pipelined_profile<bf16, bf16, 16, 4, 16, 1, true, kTail>});
  }
  cases.push_back({{512, 1, 16, 32, DType::kFloat32}, reg_8x4x2, &launch_register_profile<bf16, float, 8, 4, 2>});
  cases.push_back({{512, 1, 16, 32, DType::kFloat32}, dynamic_8x4x8, &launch_pipelined_profile<bf16, float, 8, 4, 8, 1, true>});
  for (bool dynamic : {false, true}) {
    cases.push_back({{512, 4, 16, 32, DType::kFloat32}, dynamic ? dynamic_8x4x8 : pipe_8x4x8,
                     dynamic ? &launch_pipelined_profile<bf16, float, 8, 4, 8, 1, true> : &launch_pipelined_profile<bf16, float, 8, 4, 8, 1>});
    cases.push_back({{512, 1, 16, 32, DType::kBFloat16}, dynamic ? dynamic_16x4x16 : pipe_16x4x16,
                     dynamic ? &launch_pipelined_profile<bf16, bf16, 16, 4, 16, 1, true> : &launch_pipelined_profile<bf16, bf16, 16, 4, 16, 1>});
  }
  // Timing only (no profile instantiation): the tensor-core kernel, state-major (the default for
  // bf16 pools at T = 2..4) against the tile-major order with claimed tiles.
  gdn::DecodeTactic chunked_major{4, 2, 4, 3, true}, chunked_dynamic{4, 2, 4, 3, true};
  chunked_major.state_major = true;
  chunked_dynamic.dynamic_items = true;
  for (int B : {32, 64, 256, 512})
    for (const gdn::DecodeTactic& t : {chunked_major, chunked_dynamic}) cases.push_back({{B, 4, 16, 32, DType::kBFloat16}, t, nullptr});
  for (DType st : {DType::kFloat32, DType::kBFloat16})
    cases.push_back({{1, 4, 16, 32, st}, reg_16x4x4,
                     st == DType::kFloat32 ? &launch_register_profile<bf16, float, 16, 4, 4> : &launch_register_profile<bf16, bf16, 16, 4, 4>});

  std::printf("SM clock %.0f MHz. Per case: event ms of the production kernel and of the profile launch, then per event\n"
              "the min / median / max over CTAs of us since the first CTA's entry (globaltimer), and the median of\n"
              "us since the CTA's own entry by clock64; idle_end: per SM, us from its last exit to the kernel's.\n",
              clock_khz / 1e3);
  static const char* kEventNames[kProfileEvents] = {"entry", "first_issue", "first_data", "last_done", "exit"};
  nlohmann::json rows = nlohmann::json::array();
  for (const ProfileCase& c : cases) {
    const Shape& s = c.shape;
    const std::string label = s.label() + "_" + tactic_label(c.tactic);
    if (!options.only_shapes.empty() && label.find(options.only_shapes) == std::string::npos) continue;
    Problem p(s);
    const bool pipelined = c.tactic.pipelined();
    const int rows_per_cta = c.tactic.rows_per_cta();
    const long long ctas = pipelined ? static_cast<long long>(std::min<long long>(
                                           static_cast<long long>(s.batch) * s.heads_v * (D / rows_per_cta),
                                           static_cast<long long>(device_info(device).sm_count) * c.tactic.ctas_per_sm))
                                     : static_cast<long long>(s.batch) * s.heads_v * (D / rows_per_cta);
    DeviceBuffer stamps(ctas * kProfileSlots * sizeof(std::uint64_t));
    std::vector<gdn::DecodeParams> params;
    for (const auto& x : p.args) {
      params.push_back(gdn::make_decode_params(x));
      params.back().profile_stamps = stamps.as<std::uint64_t>();
    }
    auto runner = gdn::decode_runner({DType::kBFloat16, s.state, c.tactic});
    for (const auto& x : params) runner->run(x, nullptr);  // one pass: the fill's dirty lines out of L2
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    const double production_ms = median_ms([&](int i) { runner->run(params[i % p.sets], nullptr); }, 3, 15);
    const double profile_ms = c.launch ? median_ms([&](int i) { c.launch(params[i % p.sets]); }, 3, 15) : -1;
    // The same launch on one set over and over: its code, slots, inputs and (at small B) state stay
    // in L2 (against profile_ms: what the cold misses of a rotated call cost). Small batches queued.
    const double warm_ms = s.batch <= kQueuedMaxBatch ? queued_median_ms([&](int) { runner->run(params[0], nullptr); }, 3, 15)
                                                      : median_ms([&](int) { runner->run(params[0], nullptr); }, 3, 15);
    const double cold_queued_ms =
        s.batch <= kQueuedMaxBatch ? queued_median_ms([&](int i) { runner->run(params[i % p.sets], nullptr); }, 3, 15) : -1;
    if (!c.launch) {
      std::printf("%-32s production %.4f ms, one set %.4f ms, queued %.4f ms\n", label.c_str(), production_ms, warm_ms,
                  cold_queued_ms);
      rows.push_back({{"case", label}, {"production_ms", production_ms}, {"one_set_ms", warm_ms}, {"queued_ms", cold_queued_ms}});
      continue;
    }
    FASTINFER_CUDA_CHECK(cudaMemset(stamps.get(), 0, stamps.bytes()));
    c.launch(params[0]);  // set 0 was last touched 15+ launches ago (>= 3x L2 of other sets since)
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint64_t> h(ctas * kProfileSlots);
    FASTINFER_CUDA_CHECK(cudaMemcpy(h.data(), stamps.get(), stamps.bytes(), cudaMemcpyDeviceToHost));
    auto at = [&](long long cta, int word) { return h[cta * kProfileSlots + word]; };
    std::uint64_t t0 = ~0ull, t_end = 0;
    for (long long b = 0; b < ctas; ++b) t0 = std::min(t0, at(b, kProfileEntry)), t_end = std::max(t_end, at(b, kProfileExit));
    std::printf("%-32s production %.4f ms, profile %.4f ms, one set %.4f ms, queued %.4f ms, %lld CTAs, span %.2f us\n",
                label.c_str(), production_ms, profile_ms, warm_ms, cold_queued_ms, ctas, (t_end - t0) / 1e3);
    nlohmann::json events = nlohmann::json::object();
    for (int e = 0; e < kProfileEvents; ++e) {
      if (!pipelined && e == kProfileFirstIssue) continue;
      std::vector<double> since_start, since_entry;
      for (long long b = 0; b < ctas; ++b) {
        since_start.push_back((static_cast<double>(at(b, e)) - static_cast<double>(t0)) / 1e3);
        since_entry.push_back((static_cast<double>(at(b, 8 + e)) - static_cast<double>(at(b, 8 + kProfileEntry))) / (clock_khz / 1e3));
      }
      std::sort(since_entry.begin(), since_entry.end());
      const double cycles_median = since_entry[since_entry.size() / 2];
      events[kEventNames[e]] = {{"min_us", *std::min_element(since_start.begin(), since_start.end())},
                                {"max_us", *std::max_element(since_start.begin(), since_start.end())},
                                {"clock_median_us", cycles_median}};
      const std::string text = spread(since_start);
      std::printf("  %-12s %s   clock %6.2f\n", kEventNames[e], text.c_str(), cycles_median);
    }
    // Per SM: its last exit against the kernel's last exit (the last wave / drain imbalance).
    std::vector<double> last_exit(256, -1.0);
    for (long long b = 0; b < ctas; ++b) {
      const int sm = static_cast<int>(at(b, kProfileSmWord)) % 256;
      last_exit[sm] = std::max(last_exit[sm], (static_cast<double>(at(b, kProfileExit)) - static_cast<double>(t0)) / 1e3);
    }
    std::vector<double> idle_end;
    for (double x : last_exit)
      if (x >= 0) idle_end.push_back((t_end - t0) / 1e3 - x);
    const std::string idle = spread(idle_end);
    std::printf("  %-12s %s   (%zu SMs)\n", "idle_end", idle.c_str(), idle_end.size());
    if (pipelined) {
      std::vector<double> items;
      for (long long b = 0; b < ctas; ++b) items.push_back(static_cast<double>(at(b, kProfileItemsWord)));
      const std::string text = spread(items);
      std::printf("  %-12s %s\n", "items", text.c_str());
    }
    std::fflush(stdout);
    rows.push_back({{"case", label}, {"production_ms", production_ms}, {"profile_ms", profile_ms}, {"one_set_ms", warm_ms},
                    {"queued_ms", cold_queued_ms}, {"ctas", ctas},
                    {"span_us", (t_end - t0) / 1e3}, {"events", events}});
  }
  return {{"rows", rows}};
}

// Routine "gdn_decode_tail" (session 8): the work orders of the resident kernels side by side on the
// same inputs, next to gdn::decode's pick (prod). Pipelined kernels: static, dynamic (session 7:
// claims after the first two items), the claimed-tail tactic as launched, and dynamic with
// p.static_steps items per CTA in the static order first (dynNN: 50 / 75 / 90 / 100% of the even
// share). Tensor-core kernel (bf16 T = 4): state-major static, tile-major dynamic, state-major with
// a claimed tail as launched and with static shares 50 / 90 / 100%. Two rounds, median event ms.
nlohmann::json run_gdn_decode_tail(const BenchOptions& options) {
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  const int sms = device_info(device).sm_count;
  const gdn::DecodeTactic reg_8x4x2{8, 4, 2, 0}, pipe_8x4x8{8, 4, 8, 1}, pipe_16x4x16{16, 4, 16, 1};
  gdn::DecodeTactic chunked_major{4, 2, 4, 3, true};
  chunked_major.state_major = true;
  struct Case {
    Shape shape;
    gdn::DecodeTactic base;
  };
  std::vector<Case> cases;
  for (int B : {32, 64, 256}) {
    cases.push_back({{B, 1, 16, 32, DType::kFloat32}, pipe_8x4x8});
    cases.push_back({{B, 4, 16, 32, DType::kFloat32}, pipe_8x4x8});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, pipe_8x4x8});
    cases.push_back({{B, 1, 16, 32, DType::kBFloat16}, pipe_16x4x16});
    cases.push_back({{B, 4, 16, 32, DType::kBFloat16}, chunked_major});
  }
  cases.push_back({{512, 4, 16, 32, DType::kBFloat16}, chunked_major});
  cases.push_back({{512, 1, 16, 32, DType::kBFloat16}, pipe_8x4x8});
  cases.push_back({{512, 4, 16, 32, DType::kFloat32}, pipe_8x4x8});
  std::printf("ms per work order (see the routine's comment for the names)\n");
  nlohmann::json rows = nlohmann::json::array();
  for (const Case& c : cases) {
    const Shape& s = c.shape;
    const std::string label = s.label() + "_" + tactic_label(c.base);
    if (!options.only_shapes.empty() && label.find(options.only_shapes) == std::string::npos) continue;
    Problem p(s);
    std::vector<gdn::DecodeParams> params;
    for (const auto& x : p.args) params.push_back(gdn::make_decode_params(x));
    // The tensor-core kernel: its claimed order is tile-major (dyn), its claimed tail state-major.
    gdn::DecodeTactic dyn = c.base, tail = c.base;
    dyn.dynamic_items = true;
    dyn.state_major = false;
    tail.dynamic_items = tail.claimed_tail = true;
    const bool chunked = c.base.chunked;
    const auto static_runner = gdn::decode_runner({DType::kBFloat16, s.state, c.base});
    const auto dyn_runner = gdn::decode_runner({DType::kBFloat16, s.state, dyn});
    const auto tail_runner = gdn::decode_runner({DType::kBFloat16, s.state, tail});
    const auto reg_runner = gdn::decode_runner({DType::kBFloat16, s.state, reg_8x4x2});
    for (const auto& x : params) static_runner->run(x, nullptr);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    const long long items = static_cast<long long>(s.batch) * s.heads_v * (D / c.base.rows_per_cta());
    const long long ctas = std::min<long long>(items, static_cast<long long>(sms) * c.base.ctas_per_sm);
    const long long tail_steps = chunked ? items / (D / c.base.rows_per_cta()) : items;  // claims of whole states
    auto share = [&](long long steps, int pct) { return static_cast<int>(std::max(2LL, steps / ctas * pct / 100)); };
    auto timed = [&](const gdn::DecodeRunner& r, int static_steps) {
      std::vector<gdn::DecodeParams> q = params;
      for (auto& x : q) x.static_steps = static_steps;
      return median_ms([&](int i) { r.run(q[i % p.sets], nullptr); }, 3, 15);
    };
    nlohmann::json row = {{"case", label}};
    for (int round = 0; round < 2; ++round) {
      std::string line;
      char item[64];
      auto add = [&](const std::string& name, double ms) {
        std::snprintf(item, sizeof item, " %s=%.4f", name.c_str(), ms);
        line += item;
        row[name].push_back(ms);
      };
      add("prod", median_ms([&](int i) { gdn::decode(p.args[i % p.sets]); }, 3, 15));  // gdn::decode's pick
      add("static", timed(*static_runner, 0));
      add("dyn", timed(*dyn_runner, 0));
      add("tail", timed(*tail_runner, 0));
      if (chunked) {
        for (int pct : {50, 90, 100}) add("tail" + std::to_string(pct), timed(*tail_runner, share(tail_steps, pct)));
      } else {
        for (int pct : {50, 75, 90, 100}) add("dyn" + std::to_string(pct), timed(*dyn_runner, share(items, pct)));
        if (s.state == DType::kFloat32 && s.tokens == 1 && c.base == pipe_8x4x8) add("reg8x4x2", timed(*reg_runner, 0));
      }
      std::printf("%-28s%s\n", label.c_str(), line.c_str());
      std::fflush(stdout);
    }
    rows.push_back(row);
  }
  return {{"rows", rows}};
}

// Per-call GPU ms of `calls` launches issued back to back on `stream` (the serving case: a decode
// step's kernels follow each other with no event or host gap between them), queued behind a spin
// kernel; the median over `rounds` rounds. The events of median_ms sit between every two calls,
// which also keeps a programmatic dependent launch from overlapping them.
double back_to_back_ms(const std::function<void(int)>& fn, cudaStream_t stream, int calls = 20, int rounds = 5) {
  for (int i = 0; i < 3; ++i) fn(i);
  std::vector<cudaEvent_t> events(2 * rounds);
  for (auto& e : events) FASTINFER_CUDA_CHECK(cudaEventCreate(&e));
  spin_kernel<<<1, 1, 0, stream>>>(200'000LL + 10'000LL * calls * rounds);  // ~5 us per call at ~2 GHz
  FASTINFER_CUDA_CHECK(cudaGetLastError());
  for (int r = 0; r < rounds; ++r) {
    FASTINFER_CUDA_CHECK(cudaEventRecord(events[2 * r], stream));
    for (int i = 0; i < calls; ++i) fn(3 + r * calls + i);
    FASTINFER_CUDA_CHECK(cudaEventRecord(events[2 * r + 1], stream));
  }
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> ms(rounds);
  for (int r = 0; r < rounds; ++r) FASTINFER_CUDA_CHECK(cudaEventElapsedTime(&ms[r], events[2 * r], events[2 * r + 1]));
  for (auto& e : events) cudaEventDestroy(e);
  std::nth_element(ms.begin(), ms.begin() + rounds / 2, ms.end());
  return ms[rounds / 2] / calls;
}

// Routine "gdn_decode_b2b" (session 9): per shape (B = 1 / 32 / 64 / 256, T = 1 / 4, fp32 and bf16
// pools, heads 16/32), the heuristic's tactic and every resident (pipelined / tensor-core) tactic
// timed back to back (back_to_back_ms) without and with programmatic dependent launch
// (DecodeParams::programmatic_launch; the register kernels ignore it) and, for the pipelined
// kernels, with the ring filled at the start (DecodeParams::fill_ring_at_start), next to back-to-back copies
// of the same state bytes and the production path timed per call (the gdn_decode routine's ms).
nlohmann::json run_gdn_decode_b2b(const BenchOptions& options) {
  const Ceilings& ceil = ceilings();
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  const DeviceInfo& info = device_info(device);
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("copy bandwidth %.2f TB/s; ms per call back to back, tactic=plain/pdl[/fill/pdl+fill] (fill: the pipelined\n"
              "ring filled at the start), %%copy of the best\n",
              ceil.copy_tbps);
  nlohmann::json rows = nlohmann::json::array();
  DeviceBuffer copy_dst;
  for (DType st : {DType::kFloat32, DType::kBFloat16})
    for (int T : {1, 4})
      for (int B : {1, 32, 64, 256}) {
        const Shape s{B, T, 16, 32, st};
        if (!options.only_shapes.empty() && s.label().find(options.only_shapes) == std::string::npos) continue;
        Problem p(s);
        for (const auto& x : p.args) gdn::decode(x);
        FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
        const double per_call_ms = median_ms([&](int i) { gdn::decode(p.args[i % p.sets]); }, 3, 15);
        const double floor = floor_ms(p.bytes(), 0);
        const std::size_t bytes = std::size_t(B) * s.heads_v * D * D * dtype_size(st);
        if (copy_dst.bytes() < bytes) copy_dst = DeviceBuffer(bytes);
        const double copy_ms = back_to_back_ms(
            [&](int i) {
              const char* src = p.state.as<const char>() + std::size_t(i % p.sets) * bytes;
              FASTINFER_CUDA_CHECK(cudaMemcpyAsync(copy_dst.get(), src, bytes, cudaMemcpyDeviceToDevice, stream));
            },
            stream);
        const gdn::DecodeTactic chosen = gdn::choose_decode_tactic(st, B, s.heads_v, T, info);
        std::vector<gdn::DecodeTactic> tactics{chosen};
        for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, st))
          if (B > 1 && t.pipelined() && !(t == chosen)) tactics.push_back(t);  // B = 1: the heuristic's only
        std::vector<gdn::DecodeParams> params;
        for (const auto& x : p.args) params.push_back(gdn::make_decode_params(x));
        nlohmann::json timed = nlohmann::json::object();
        std::string line;
        double best = 1e30;
        std::string best_name;
        for (const gdn::DecodeTactic& t : tactics) {
          const auto runner = gdn::decode_runner({DType::kBFloat16, st, t});
          // Variants: plain, PDL, the ring filled at the start (pipelined kernels only), both.
          const int variants = t.chunked ? 2 : 4;
          std::vector<double> ms;
          for (int v = 0; v < variants; ++v) {
            std::vector<gdn::DecodeParams> q = params;
            for (auto& x : q) x.programmatic_launch = v % 2 == 1, x.fill_ring_at_start = v >= 2;
            ms.push_back(back_to_back_ms([&](int i) { runner->run(q[i % p.sets], stream); }, stream));
          }
          const std::string name = tactic_label(t) + (t == chosen ? "*" : "");
          timed[name] = ms;
          std::string item = " " + name + "=";
          for (int v = 0; v < variants; ++v) {
            char number[16];
            std::snprintf(number, sizeof number, "%s%.4f", v ? "/" : "", ms[v]);
            item += number;
            static const char* kSuffix[4] = {"", "+pdl", "+fill", "+pdl+fill"};
            if (ms[v] < best) best = ms[v], best_name = name + kSuffix[v];
          }
          line += item;
        }
        std::printf("%-20s per-call %.4f (%.1f%%) copy b2b %.4f (%.1f%%) best %s %.4f (%.1f%%)\n %s\n", s.label().c_str(),
                    per_call_ms, 100 * floor / per_call_ms, copy_ms, 100 * floor_ms(2.0 * bytes, 0) / copy_ms,
                    best_name.c_str(), best, 100 * floor / best, line.c_str());
        std::fflush(stdout);
        rows.push_back({{"shape", s.label()}, {"per_call_ms", per_call_ms}, {"floor_ms", floor}, {"copy_b2b_ms", copy_ms},
                        {"best", best_name}, {"best_ms", best}, {"tactics_off_on_ms", timed}});
      }
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  return {{"copy_tbps", ceil.copy_tbps}, {"rows", rows}};
}

const RoutineRegistration b2b_registration{
    {"gdn_decode_b2b", "GDN decode back to back without / with programmatic dependent launch", run_gdn_decode_b2b}};

const RoutineRegistration tail_registration{
    {"gdn_decode_tail", "GDN decode pipelined work orders: static, dynamic, claimed tail shares", run_gdn_decode_tail}};

const RoutineRegistration profile_registration{
    {"gdn_decode_profile", "GDN decode: in-kernel timestamps of a call (fixed cost breakdown)", run_gdn_decode_profile}};

const RoutineRegistration scan_registration{
    {"gdn_decode_scan", "GDN decode production path vs batch next to a matched copy", run_gdn_decode_scan}};

const RoutineRegistration registration{
    {"gdn_decode", "GDN decode / MTP vs copy bandwidth, tactic sweep, host cost", run_gdn_decode}};

}  // namespace
}  // namespace fastinfer::bench
