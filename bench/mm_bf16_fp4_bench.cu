// Routine "mm_bf16_fp4" (issue 3): out[M,N] = alpha * a[M,K] @ W^T with W in NVFP4, through the
// public op (the runner's default tactic, as production calls it). Per (N, K, M): median GPU time
// over input sets rotated past the L2 (each set has its own weights), TB/s on
// bytes = 2MK + NK/2 + NK/16 + 2MN, TFLOP/s, the cuBLASLt bf16 anchor, the floor
// max(bytes / copy_bw, 2MNK / bf16_peak) and the ratios.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fastinfer/gemm.h"
#include "gemm/mm_tunable.h"
#include "gemm/weights_impl.h"
#include "harness.h"
#include "routines.h"

namespace fastinfer::bench {
namespace {

struct WeightSet {
  DeviceBuffer packed, scales;
  std::shared_ptr<const gemm::Bf16Fp4Weights> weights;
};

// The rotated input sets of one (N, K, M) cell: random NVFP4 weights (prepared), activations and
// outputs, `sets` of each (enough to touch more than the L2 per pass), and the bytes one call moves.
struct CellInputs {
  double bytes;  // 2MK + NK/2 + NK/16 + 2MN
  int sets;
  std::vector<WeightSet> ws;
  std::vector<DeviceBuffer> as, outs;

  CellInputs(int n, int k, int m) {
    const std::size_t w_bytes = static_cast<std::size_t>(n) * k / 2 + static_cast<std::size_t>(n) * k / 16;
    const std::size_t a_bytes = static_cast<std::size_t>(m) * k * 2, o_bytes = static_cast<std::size_t>(m) * n * 2;
    bytes = static_cast<double>(w_bytes + a_bytes + o_bytes);
    sets = rotation_count(w_bytes + a_bytes + o_bytes);
    ws.resize(static_cast<std::size_t>(sets));
    for (int i = 0; i < sets; ++i) {
      WeightSet& w = ws[static_cast<std::size_t>(i)];
      w.packed = DeviceBuffer(static_cast<std::size_t>(n) * k / 2);
      w.scales = DeviceBuffer(static_cast<std::size_t>(n) * k / 16);
      fill_uniform(w.packed.get(), DType::kUInt8, w.packed.bytes(), 0, 0, 11 + i);
      fill_uniform(w.scales.get(), DType::kUInt8, w.scales.bytes(), 0, 0, 99 + i);
      w.weights = gemm::prepare_bf16_fp4_weights(
          TensorView::contiguous(w.packed.get(), DType::kUInt8, {n, k / 2}, Device::cuda(0)),
          TensorView::contiguous(w.scales.get(), DType::kUInt8, {static_cast<std::int64_t>(n) * k / 16}, Device::cuda(0)),
          nvfp4::ScaleLayout::kLinear, 1.0f / 2688.0f);
      as.emplace_back(a_bytes);
      fill_uniform(as.back().get(), DType::kBFloat16, static_cast<std::size_t>(m) * k, -1, 1, 7 + i);
      outs.emplace_back(o_bytes);
    }
  }
};

// The M list: FASTINFER_BENCH_MS (comma separated) when set, else `fallback`.
std::vector<int> bench_ms(std::vector<int> fallback) {
  const char* env = std::getenv("FASTINFER_BENCH_MS");
  if (!env) return fallback;
  std::vector<int> ms;
  for (const char* c = env; *c;) {
    ms.push_back(std::atoi(c));
    while (*c && *c != ',') ++c;
    if (*c == ',') ++c;
  }
  return ms;
}

// Routine "mm_bf16_fp4": the public op with its default tactic. M list from FASTINFER_BENCH_MS or
// {1, 16, 64, 256, 1024, 4096, 8192} (--quick: {1, 16, 256}).
nlohmann::json run_mm_bf16_fp4(const BenchOptions& options) {
  const int shapes[][2] = {{2048, 7168}, {4096, 4096}, {6144, 4096}, {28672, 4096}, {4096, 14336}};
  const std::vector<int> ms =
      bench_ms(options.quick ? std::vector<int>{1, 16, 256} : std::vector<int>{1, 16, 64, 256, 1024, 4096, 8192});
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%6s %6s %5s | %9s %7s %7s | %9s %9s | %7s %7s\n", "N", "K", "M", "ms", "TB/s", "TFLOP/s", "cublas_ms",
              "floor_ms", "xcublas", "xfloor");
  for (const auto& s : shapes) {
    const int n = s[0], k = s[1];
    for (int m : ms) {
      char label[64];
      std::snprintf(label, sizeof label, "N%d_K%d_M%d", n, k, m);
      if (!options.wants(label)) continue;
      const CellInputs in(n, k, m);
      auto call = [&](int i) {
        const int j = i % in.sets;
        gemm::mm_bf16_fp4(TensorView::contiguous(in.as[j].get(), DType::kBFloat16, {m, k}, Device::cuda(0)),
                          *in.ws[static_cast<std::size_t>(j)].weights,
                          TensorView::contiguous(in.outs[j].get(), DType::kBFloat16, {m, n}, Device::cuda(0)));
      };
      const double ms_median = median_ms(call, 5, options.quick ? 10 : 30);
      const double host_us = host_us_per_call([&] { call(0); }, 200);
      const double bytes = in.bytes;
      const double flops = 2.0 * m * n * static_cast<double>(k);
      const double cublas = cublas_bf16_gemm_ms(m, n, k);
      const double floor = floor_ms(bytes, flops);
      std::printf("%6d %6d %5d | %9.4f %7.2f %7.1f | %9.4f %9.4f | %7.2f %7.2f\n", n, k, m, ms_median,
                  bytes / ms_median * 1e-9, flops / ms_median * 1e-9, cublas, floor, cublas / ms_median,
                  ms_median / floor);
      rows.push_back({{"label", label}, {"n", n}, {"k", k}, {"m", m}, {"ms", ms_median}, {"host_us", host_us},
                      {"tbps", bytes / ms_median * 1e-9}, {"tflops", flops / ms_median * 1e-9},
                      {"cublas_bf16_ms", cublas}, {"floor_ms", floor}, {"speedup_vs_cublas", cublas / ms_median},
                      {"ratio_to_floor", ms_median / floor}});
    }
  }
  return {{"routine", "mm_bf16_fp4"}, {"environment", environment_json()}, {"results", rows}};
}

// Routine "mm_bf16_fp4_tactics": every tactic of the runner per (N, K, M) cell (the data behind the
// default heuristic), the default's time and the best tactic. M list from FASTINFER_BENCH_MS
// (comma separated) or {1, 16, 64, 256} (--quick: {1, 16}).
nlohmann::json run_mm_bf16_fp4_tactics(const BenchOptions& options) {
  const int shapes[][2] = {{2048, 7168}, {4096, 4096}, {6144, 4096}, {28672, 4096}, {4096, 14336}};
  const std::vector<int> ms = bench_ms(options.quick ? std::vector<int>{1, 16} : std::vector<int>{1, 16, 64, 256});
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : shapes) {
    const int n = s[0], k = s[1];
    for (int m : ms) {
      char label[64];
      std::snprintf(label, sizeof label, "N%d_K%d_M%d", n, k, m);
      if (!options.wants(label)) continue;
      const CellInputs in(n, k, m);
      auto runner = gemm::detail::mm_runner_for(0, DType::kBFloat16, n, k);
      auto time_tactic = [&](int tactic) {
        return median_ms(
            [&](int i) {
              const int j = i % in.sets;
              gemm::detail::MmCall call{in.as[j].get(), k, &in.ws[static_cast<std::size_t>(j)].weights->impl(), in.outs[j].get(), n, m, false};
              runner->run(call, tactic, nullptr);
            },
            3, options.quick ? 8 : 15);
      };
      const double bytes = in.bytes;
      const double flops = 2.0 * m * n * static_cast<double>(k);
      const double floor = floor_ms(bytes, flops), cublas = cublas_bf16_gemm_ms(m, n, k);
      nlohmann::json per = nlohmann::json::object(), resident = nlohmann::json::object();
      double best = 1e30;
      std::string best_name;
      for (int id : runner->tactics(m)) {
        const double t = time_tactic(id);
        per[runner->tactic(id).name] = t;
        resident[runner->tactic(id).name] = runner->resident_ctas(id, m);
        if (t < best) {
          best = t;
          best_name = runner->tactic(id).name;
        }
      }
      const int def = runner->default_tactic(m);
      const double def_ms = time_tactic(-1);
      std::printf("%-20s best %-34s %8.4f ms (x floor %5.2f, x cublas %5.2f) | default %-34s %8.4f (%.2fx best)\n", label,
                  best_name.c_str(), best, best / floor, cublas / best, runner->tactic(def).name.c_str(), def_ms, def_ms / best);
      std::printf("  all");
      for (const auto& [name, t] : per.items()) std::printf(" %s=%.4f", name.c_str(), t.get<double>());
      std::printf("\n");
      std::fflush(stdout);
      rows.push_back({{"label", label}, {"n", n}, {"k", k}, {"m", m}, {"floor_ms", floor}, {"cublas_bf16_ms", cublas},
                      {"best", best_name}, {"best_ms", best}, {"default", runner->tactic(def).name}, {"default_ms", def_ms},
                      {"tactics_ms", per}, {"resident_ctas_per_sm", resident}});
    }
  }
  return {{"routine", "mm_bf16_fp4_tactics"}, {"environment", environment_json()}, {"results", rows}};
}

const RoutineRegistration registration{
    {"mm_bf16_fp4", "bf16 x NVFP4 GEMM (issue 3 shapes), default tactic vs cuBLASLt bf16 and the floor", run_mm_bf16_fp4}};
const RoutineRegistration tactics_registration{
    {"mm_bf16_fp4_tactics", "mm_bf16_fp4: every tactic per (N, K, M) cell, the default and the best", run_mm_bf16_fp4_tactics}};

}  // namespace
}  // namespace fastinfer::bench
