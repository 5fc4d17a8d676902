// Routine "gemm_large_m": the large-M path of mm_bf16_fp4 on its own -- the decode pass, every
// tactic end to end (decode + bf16 GEMM), the GEMM alone on the decoded weight, against the cuBLAS
// bf16 anchor and the floor max(bytes/copy_bw, 2MNK/bf16_peak), bytes = 2MK + NK/2 + NK/16 + 2MN.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gemm/large_m.h"
#include "gemm/large_m/bf16_gemm_sm90.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

using namespace fastinfer::gemm::detail;

struct WeightShape {
  int n, k;
};

// Comma-separated substrings (FASTINFER_BENCH_TACTICS for tactic names, --shapes for labels):
// true when `text` contains one of them (or the list has none) and no "!"-prefixed one.
bool matches_any(const std::string& text, const std::string& list) {
  bool any_positive = false, hit = false;
  for (std::size_t b = 0; b < list.size();) {
    const std::size_t e = std::min(list.find(',', b), list.size());
    const bool exclude = list[b] == '!';
    const std::string item = list.substr(b + exclude, e - b - exclude);
    const bool found = !item.empty() && text.find(item) != std::string::npos;
    if (exclude && found) return false;
    if (!exclude) any_positive = true, hit = hit || found;
    b = e + 1;
  }
  return !any_positive || hit;
}

const Bf16GemmKernel& gemm_only_kernel(int id) {
  switch (id) {
    case 0: return bf16_gemm_sm90<Bf16GemmTile::kCoop128x256x64Cluster2x1, false>();
    case 1: return bf16_gemm_sm90<Bf16GemmTile::kCoop128x128x64Cluster1x2, false>();
    default: return bf16_gemm_sm90<Bf16GemmTile::kPingpong64x256x64Cluster1x1, false>();
  }
}

nlohmann::json run_gemm_large_m(const BenchOptions& options) {
  const std::vector<WeightShape> weights = options.quick ? std::vector<WeightShape>{{28672, 4096}, {2048, 7168}}
                                                         : std::vector<WeightShape>{{28672, 4096}, {2048, 7168}, {4096, 4096}, {6144, 4096}, {4096, 14336}};
  std::vector<int> ms = options.quick ? std::vector<int>{256, 8192} : std::vector<int>{64, 256, 1024, 4096, 8192};
  if (const char* env = std::getenv("FASTINFER_BENCH_MS")) {  // comma separated M list
    ms.clear();
    for (const char* c = env; *c;) {
      ms.push_back(std::atoi(c));
      while (*c && *c != ',') ++c;
      if (*c == ',') ++c;
    }
  }
  const int reps = options.quick ? 10 : 30;
  const char* tactic_env = std::getenv("FASTINFER_BENCH_TACTICS");
  const std::string tactic_filter = tactic_env ? tactic_env : "";
  const auto configs = large_m_configs();
  nlohmann::json rows = nlohmann::json::array();
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));

  std::printf("%6s %6s %5s %9s %-38s %9s %9s %9s %7s %7s\n", "N", "K", "M", "decode_ms", "best tactic", "total_ms",
              "gemm_ms", "cublas_ms", "cub/tot", "floor/t");
  for (const WeightShape& w : weights) {
    bool any_cell = false;
    for (int m : ms)
      any_cell = any_cell || matches_any(std::to_string(w.n) + "x" + std::to_string(w.k) + "_m" + std::to_string(m), options.only_shapes);
    if (!any_cell) continue;
    const std::size_t packed_bytes = std::size_t(w.n) * w.k / 2, scale_bytes = std::size_t(w.n) * w.k / 16;
    const int w_sets = rotation_count(packed_bytes + scale_bytes);
    DeviceBuffer packed(packed_bytes * w_sets), scales(scale_bytes * w_sets);
    fill_uniform(packed.get(), DType::kUInt8, packed_bytes * w_sets, 0, 0, 5);
    fill_uniform(scales.get(), DType::kUInt8, scale_bytes * w_sets, 0, 0, 6);
    DeviceBuffer decoded(std::size_t(w.n) * w.k * 2);
    const double decode_ms = median_ms([&](int i) {
      const int s = i % w_sets;
      decode_nvfp4_to_bf16(packed.as<std::uint8_t>() + s * packed_bytes, scales.as<std::uint8_t>() + s * scale_bytes,
                           decoded.get(), w.n, w.k, false, nullptr);
    }, 3, reps);

    for (int m : ms) {
      const std::string label = std::to_string(w.n) + "x" + std::to_string(w.k) + "_m" + std::to_string(m);
      if (!matches_any(label, options.only_shapes)) continue;
      const std::size_t a_bytes = std::size_t(m) * w.k * 2, o_bytes = std::size_t(m) * w.n * 2;
      const int sets = std::min(rotation_count(a_bytes + o_bytes + packed_bytes + scale_bytes), w_sets);
      DeviceBuffer a(a_bytes * sets), out(o_bytes * sets);
      fill_uniform(a.get(), DType::kBFloat16, a_bytes / 2 * sets, -1, 1, 7);
      auto params = [&](int s) {
        LargeMParams p;
        p.a = a.as<char>() + s * a_bytes, p.w_packed = packed.as<std::uint8_t>() + s * packed_bytes;
        p.w_scales = scales.as<std::uint8_t>() + s * scale_bytes, p.w_dequant = 1.0f / 2688.0f, p.alpha = 1.0f;
        p.out = out.as<char>() + s * o_bytes, p.m = m, p.n = w.n, p.k = w.k, p.lda = w.k, p.ldo = w.n, p.device = device;
        return p;
      };
      nlohmann::json per_config = nlohmann::json::array();
      double best_total = 1e30, best_gemm = 0;
      const char* best_name = "";
      for (const LargeMConfig& config : configs) {
        if (!can_implement(params(0), config) || !matches_any(config.name, tactic_filter)) continue;
        DeviceBuffer workspace(workspace_bytes(params(0), config));
        const double total = median_ms([&](int i) { run_large_m(params(i % sets), config, workspace.get(), nullptr); }, 3, reps);
        if (config.algo == LargeMAlgo::kFusedWgmma) {  // no separate GEMM: the kernel is the tactic
          per_config.push_back({{"tactic", config.name}, {"total_ms", total}, {"gemm_ms", total}});
          std::printf("       %-44s %9.4f\n", config.name, total);
          if (total < best_total) best_total = total, best_gemm = total, best_name = config.name;
          continue;
        }
        const Bf16GemmKernel& gemm = gemm_only_kernel(config.id);
        const double gemm_ms = median_ms([&](int i) {
          const LargeMParams p = params(i % sets);
          gemm.run(Bf16GemmArgs{p.a, decoded.get(), p.out, m, w.n, w.k, w.k, w.k, w.n, 1.0f, device, false},
                   workspace.get(), nullptr);
        }, 3, reps);
        per_config.push_back({{"tactic", config.name}, {"total_ms", total}, {"gemm_ms", gemm_ms}});
        std::printf("       %-44s %9.4f (gemm %.4f)\n", config.name, total, gemm_ms);
        if (total < best_total) best_total = total, best_gemm = gemm_ms, best_name = config.name;
      }
      const double cublas = cublas_bf16_gemm_ms(m, w.n, w.k);
      const double bytes = 2.0 * m * w.k + w.n * (w.k / 2.0 + w.k / 16.0) + 2.0 * m * w.n;
      const double flops = 2.0 * m * w.n * w.k;
      const double floor = floor_ms(bytes, flops);
      std::printf("%6d %6d %5d %9.4f %-38s %9.4f %9.4f %9.4f %7.2f %7.2f\n", w.n, w.k, m, decode_ms, best_name,
                  best_total, best_gemm, cublas, cublas / best_total, floor / best_total);
      std::fflush(stdout);
      rows.push_back({{"n", w.n}, {"k", w.k}, {"m", m}, {"decode_ms", decode_ms}, {"tactics", per_config},
                      {"best_tactic", best_name}, {"best_total_ms", best_total}, {"cublas_bf16_ms", cublas},
                      {"floor_ms", floor}, {"tflops", flops / best_total * 1e-9}});
    }
  }
  return rows;
}

const RoutineRegistration registration{
    {"gemm_large_m", "large-M mm_bf16_fp4 path: decode pass + bf16 GEMM tactics vs cuBLAS bf16", run_gemm_large_m}};

}  // namespace
}  // namespace fastinfer::bench
