// GDN decode diagnostics (issue 7): "gdn_decode_scan" (time against the batch beside a matched copy),
// "gdn_decode_profile" (in-kernel timestamps of a call), "gdn_decode_tail" (the pipelined work
// orders' static / dynamic / claimed-tail shares), "gdn_decode_b2b" (back-to-back calls without /
// with programmatic dependent launch). The issue table is gdn_decode_bench.cu.
#include "gdn_decode_bench_util.h"

namespace fastinfer::bench {
namespace {

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
        if (!options.wants(s.label())) continue;
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
    if (!options.wants(label)) continue;
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
    if (!options.wants(label)) continue;
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
        if (!options.wants(s.label())) continue;
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

}  // namespace
}  // namespace fastinfer::bench
