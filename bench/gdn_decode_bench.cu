// Routine "gdn_decode": GDN decode / MTP against a state pool (issue 7). Per shape: median GPU
// time of the production path (gdn::decode, heuristic tactic) with pool slots and inputs rotated
// over more than the L2, achieved bandwidth vs the copy bandwidth measured in this process, the
// floor, the anchor of the issue (flash-linear-attention fused_recurrent on this H200), every
// tactic's time (unless --quick), and the host cost per call vs a raw empty-kernel launch.
#include "gdn_decode_bench_util.h"

namespace fastinfer::bench {
namespace {

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
    if (!options.wants(s.label())) continue;
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

const RoutineRegistration registration{
    {"gdn_decode", "GDN decode / MTP vs copy bandwidth, tactic sweep, host cost", run_gdn_decode}};

}  // namespace
}  // namespace fastinfer::bench
