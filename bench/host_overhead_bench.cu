// Host cost per call (issue 9): the raw launch of an empty kernel and of a 4-node CUDA graph (the
// yardsticks), then every public op on tiny shapes (so the GPU never limits the loop): host time
// per call, the kernels it launches (counted from a stream capture of one call), and the ratio to
// that many raw launches; the autotuner's cache hit on a real runner key; and the cold start of
// every op: its first call in a fresh process (this binary re-run as a child per op).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fastinfer/gdn.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
#include "fastinfer/tune.h"
#include "fastinfer/workspace.h"
#include "gemm/mm_runner.h"
#include "gemm/mm_tunable.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"
#include "runtime/graph_nodes.h"

namespace fastinfer::bench {
namespace {

__global__ void empty_kernel() {}

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// Median over `batches` of the mean host time of `per_batch` back-to-back calls. Each batch starts
// on an idle stream and is short enough (well under the launch queue depth) that the host never
// waits for the GPU, so this is the caller's cost even when a call's GPU time exceeds it.
constexpr int kShortBatch = 8;

double host_cost_us(const std::function<void()>& fn, cudaStream_t stream, int batches, int per_batch = 64) {
  for (int i = 0; i < 16; ++i) fn();
  std::vector<double> us(batches);
  for (int b = 0; b < batches; ++b) {
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t0 = Clock::now();
    for (int i = 0; i < per_batch; ++i) fn();
    us[b] = us_since(t0) / per_batch;
  }
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::nth_element(us.begin(), us.begin() + batches / 2, us.end());
  return us[batches / 2];
}

// Kernel nodes (and all nodes) a stream capture of one call records: the launches the call makes.
std::pair<int, int> count_launches(const std::function<void()>& fn, cudaStream_t stream) {
  cudaGraph_t graph;
  FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  fn();
  FASTINFER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  const GraphNodeCounts counts = count_graph_nodes(graph);
  FASTINFER_CUDA_CHECK(cudaGraphDestroy(graph));
  return {counts.kernels, counts.all};
}

// One public op on tiny shapes, with the device buffers it uses.
struct OpCase {
  std::string name;
  std::function<void()> call;  // one call on the case's stream
  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
  std::shared_ptr<const gemm::Bf16Fp4Weights> weights;
  double setup_ms = 0;  // time spent preparing (prepare_bf16_fp4_weights for the GEMM)
};

class CaseBuilder {
 public:
  explicit CaseBuilder(OpCase& c) : c_(c) {}
  // A device tensor of `shape` filled with uniform values in [lo, hi).
  TensorView tensor(DType t, std::initializer_list<std::int64_t> shape, float lo = -1.0f, float hi = 1.0f) {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    auto b = std::make_shared<DeviceBuffer>(static_cast<std::size_t>(n) * dtype_size(t));
    if (t == DType::kInt32) {
      FASTINFER_CUDA_CHECK(cudaMemset(b->get(), 0, b->bytes()));  // index 0 / offsets filled by the case
    } else {
      fill_uniform(b->get(), t, static_cast<std::size_t>(n), lo, hi, seed_++);
    }
    c_.buffers.push_back(b);
    return TensorView::contiguous(b->get(), t, shape, Device::cuda(0));
  }
  void ints(const TensorView& t, std::vector<std::int32_t> values) {
    FASTINFER_CUDA_CHECK(cudaMemcpy(t.data, values.data(), values.size() * 4, cudaMemcpyHostToDevice));
  }

 private:
  OpCase& c_;
  std::uint64_t seed_ = 11;
};

constexpr std::int64_t kD = 128;

// Non-CP: one 64-token sequence. CP (use_cp = On): one 1024-token sequence, the shortest that
// spans several CP chunks.
OpCase prefill_case(cudaStream_t s, bool with_state, bool cp) {
  OpCase c{std::string(cp ? "gdn::prefill CP 1x1024" : "gdn::prefill 1x64") + " heads 1/1/1" +
           (with_state ? ", pool state" : "")};
  CaseBuilder b(c);
  const std::int64_t T = cp ? 1024 : 64;
  gdn::PrefillArgs a;
  a.q = b.tensor(DType::kBFloat16, {T, 1, kD});
  a.k = b.tensor(DType::kBFloat16, {T, 1, kD});
  a.v = b.tensor(DType::kBFloat16, {T, 1, kD});
  a.cu_seqlens = b.tensor(DType::kInt32, {2});
  b.ints(a.cu_seqlens, {0, static_cast<std::int32_t>(T)});
  a.alpha = b.tensor(DType::kFloat32, {T, 1}, 0.9f, 1.0f);
  a.beta = b.tensor(DType::kFloat32, {T, 1}, 0.1f, 1.0f);
  a.output = b.tensor(DType::kBFloat16, {T, 1, kD});
  a.use_cp = cp ? gdn::UseCp::kOn : gdn::UseCp::kOff;
  a.max_seqlen = T;
  if (with_state) {
    a.initial_state = b.tensor(DType::kFloat32, {2, 1, kD, kD});
    a.output_state = a.initial_state;
    a.state_indices = b.tensor(DType::kInt32, {1});
    b.ints(*a.state_indices, {1});
  }
  c.call = [a, s] { gdn::prefill(a, s); };
  return c;
}

OpCase decode_case(cudaStream_t s, int tokens) {
  OpCase c{tokens == 1 ? "gdn::decode B1 T1 heads 1/1" : "gdn::decode (MTP) B1 T2 heads 1/1, intermediate states"};
  CaseBuilder b(c);
  const std::int64_t T = tokens;
  gdn::DecodeArgs a;
  a.q = b.tensor(DType::kBFloat16, {1, T, 1, kD});
  a.k = b.tensor(DType::kBFloat16, {1, T, 1, kD});
  a.v = b.tensor(DType::kBFloat16, {1, T, 1, kD});
  a.A_log = b.tensor(DType::kFloat32, {1}, -3.0f, 1.0f);
  a.a = b.tensor(DType::kFloat32, {1, T, 1});
  a.dt_bias = b.tensor(DType::kFloat32, {1});
  a.b = b.tensor(DType::kFloat32, {1, T, 1});
  a.state = b.tensor(DType::kFloat32, {2, 1, kD, kD}, -0.1f, 0.1f);
  a.initial_state_indices = b.tensor(DType::kInt32, {1});
  b.ints(a.initial_state_indices, {1});
  a.output = b.tensor(DType::kBFloat16, {1, T, 1, kD});
  if (tokens > 1) {
    a.intermediate_states = b.tensor(DType::kFloat32, {1, T, 1, kD, kD});
    a.disable_state_update = true;
  }
  c.call = [a, s] { gdn::decode(a, s); };
  return c;
}

OpCase quantize_case(cudaStream_t s) {
  OpCase c{"nvfp4::quantize 128x128 swizzled"};
  CaseBuilder b(c);
  const TensorView w = b.tensor(DType::kBFloat16, {128, 128});
  const TensorView packed = b.tensor(DType::kUInt8, {128, 64});
  const TensorView scales = b.tensor(DType::kUInt8, {nvfp4::scale_bytes(128, 128, nvfp4::ScaleLayout::kSwizzled128x4)});
  c.call = [=] { nvfp4::quantize(w, 1.0f, packed, scales, nvfp4::ScaleLayout::kSwizzled128x4, s); };
  return c;
}

OpCase dequantize_case(cudaStream_t s) {
  OpCase c{"nvfp4::dequantize 128x128 linear"};
  CaseBuilder b(c);
  const TensorView packed = b.tensor(DType::kUInt8, {128, 64});
  const TensorView scales = b.tensor(DType::kUInt8, {128, 8});
  FASTINFER_CUDA_CHECK(cudaMemset(scales.data, 0x38, 128 * 8));  // e4m3 1.0
  const TensorView out = b.tensor(DType::kBFloat16, {128, 128});
  c.call = [=] { nvfp4::dequantize(packed, scales, nvfp4::ScaleLayout::kLinear, 1.0f, out, s); };
  return c;
}

OpCase mm_case(cudaStream_t s, bool pdl) {
  OpCase c{pdl ? "gemm::mm_bf16_fp4 M1 N128 K128, PDL" : "gemm::mm_bf16_fp4 M1 N128 K128"};
  CaseBuilder b(c);
  const TensorView packed = b.tensor(DType::kUInt8, {128, 64});
  const TensorView scales = b.tensor(DType::kUInt8, {128, 8});
  FASTINFER_CUDA_CHECK(cudaMemset(scales.data, 0x38, 128 * 8));  // e4m3 1.0
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = Clock::now();
  c.weights = gemm::prepare_bf16_fp4_weights(packed, scales, nvfp4::ScaleLayout::kLinear, 1.0f, s);
  c.setup_ms = us_since(t0) * 1e-3;
  const TensorView a = b.tensor(DType::kBFloat16, {1, 128});
  const TensorView out = b.tensor(DType::kBFloat16, {1, 128});
  const gemm::Bf16Fp4Weights* w = c.weights.get();
  c.call = [=] { gemm::mm_bf16_fp4(a, *w, out, s, pdl); };
  return c;
}

using CaseFactory = std::function<OpCase(cudaStream_t)>;
std::vector<std::pair<std::string, CaseFactory>> case_factories() {
  return {{"prefill", [](cudaStream_t s) { return prefill_case(s, false, false); }},
          {"prefill_state", [](cudaStream_t s) { return prefill_case(s, true, false); }},
          {"prefill_cp", [](cudaStream_t s) { return prefill_case(s, false, true); }},
          {"prefill_cp_state", [](cudaStream_t s) { return prefill_case(s, true, true); }},
          {"decode", [](cudaStream_t s) { return decode_case(s, 1); }},
          {"decode_mtp", [](cudaStream_t s) { return decode_case(s, 2); }},
          {"quantize", [](cudaStream_t s) { return quantize_case(s); }},
          {"dequantize", [](cudaStream_t s) { return dequantize_case(s); }},
          {"mm_bf16_fp4", [](cudaStream_t s) { return mm_case(s, false); }},
          {"mm_bf16_fp4_pdl", [](cudaStream_t s) { return mm_case(s, true); }}};
}

// ---------------------------------------------------------------------------------------------
// Cold start: in a child process (FASTINFER_COLD_START_OP=<key>), the CUDA context is created
// first and timed apart; then the inputs; then the op's first call (host return and completion)
// and its second call. The child prints one "COLD_START {json}" line and exits at once.

constexpr const char* kColdEnv = "FASTINFER_COLD_START_OP";

[[noreturn]] void run_cold_child(const std::string& key) {
  nlohmann::json r{{"op", key}};
  try {
    auto t0 = Clock::now();
    FASTINFER_CUDA_CHECK(cudaFree(nullptr));
    r["context_ms"] = us_since(t0) * 1e-3;
    cudaStream_t s;
    FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (key.rfind("probe_", 0) == 0) {  // diagnostics of what a first call may pay, in a fresh process
      t0 = Clock::now();
      if (key == "probe_malloc_async") {  // the first stream-ordered allocation (cold memory pool)
        void* p = nullptr;
        FASTINFER_CUDA_CHECK(cudaMallocAsync(&p, 1 << 20, s));
        FASTINFER_CUDA_CHECK(cudaFreeAsync(p, s));
      } else if (key == "probe_reserve_workspace") {  // the pool's first block (what the CP path grows)
        reserve_workspace(0, s, "probe", 64 << 20);
      }
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));
      r["name"] = key;
      r["setup_ms"] = 0.0;
      r["first_call_host_ms"] = r["first_call_done_ms"] = us_since(t0) * 1e-3;
      r["second_call_host_us"] = r["second_call_done_us"] = 0.0;
      std::printf("COLD_START %s\n", r.dump().c_str());
      std::fflush(stdout);
      std::_Exit(0);
    }
    OpCase c;
    for (const auto& [k, make] : case_factories())
      if (k == key) c = make(s);
    if (!c.call) throw std::runtime_error("unknown op key " + key);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    r["name"] = c.name;
    r["setup_ms"] = c.setup_ms;
    t0 = Clock::now();
    c.call();
    r["first_call_host_ms"] = us_since(t0) * 1e-3;
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));
    r["first_call_done_ms"] = us_since(t0) * 1e-3;
    t0 = Clock::now();
    c.call();
    r["second_call_host_us"] = us_since(t0);
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));
    r["second_call_done_us"] = us_since(t0);
  } catch (const std::exception& e) {
    r["error"] = e.what();
  }
  std::printf("COLD_START %s\n", r.dump().c_str());
  std::fflush(stdout);
  std::_Exit(0);  // skip the driver's environment probe (ceilings): this process only measures
}

nlohmann::json cold_start_all() {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return {{"error", "cannot find /proc/self/exe"}};
  exe[len] = '\0';
  nlohmann::json rows = nlohmann::json::array();
  std::printf("\n%-58s %9s %9s %11s %11s %10s %9s\n", "cold start (fresh process per op)", "proc ms", "ctx ms",
              "1st host ms", "1st done ms", "2nd us", "setup ms");
  // Every op, then diagnostics: the CP path with eager module loading (is its first call module
  // loading?), and the first stream-ordered allocation / workspace block in a fresh process.
  std::vector<std::pair<std::string, std::string>> runs;  // (key, extra environment)
  for (const auto& [key, make] : case_factories()) runs.emplace_back(key, "");
  runs.emplace_back("prefill_cp", "CUDA_MODULE_LOADING=EAGER");
  runs.emplace_back("probe_malloc_async", "");
  runs.emplace_back("probe_reserve_workspace", "");
  for (const auto& [key, env] : runs) {
    const std::string cmd = env + " " + kColdEnv + "=" + key + " '" + exe + "' host_overhead 2>&1";
    const auto t0 = Clock::now();
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) continue;
    std::string line, found;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, pipe)) {
      line = buf;
      if (line.rfind("COLD_START ", 0) == 0) found = line.substr(11);
    }
    pclose(pipe);
    const double process_ms = us_since(t0) * 1e-3;
    nlohmann::json r = found.empty() ? nlohmann::json{{"op", key}, {"error", "no COLD_START line"}} : nlohmann::json::parse(found);
    r["process_ms"] = process_ms;
    if (!env.empty()) r["environment"] = env, r["name"] = r.value("name", key) + " [" + env + "]";
    if (r.contains("error")) {
      std::printf("%-58s error: %s\n", key.c_str(), r["error"].get<std::string>().c_str());
    } else {
      std::printf("%-58s %9.1f %9.1f %11.3f %11.3f %10.1f %9.3f\n", r["name"].get<std::string>().c_str(), process_ms,
                  r["context_ms"].get<double>(), r["first_call_host_ms"].get<double>(), r["first_call_done_ms"].get<double>(),
                  r["second_call_host_us"].get<double>(), r["setup_ms"].get<double>());
    }
    rows.push_back(r);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------

nlohmann::json run_host_overhead(const BenchOptions& options) {
  if (const char* cold = std::getenv(kColdEnv)) run_cold_child(cold);
  const int batches = options.quick ? 50 : 300;
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const double launch_us = host_cost_us([&] { empty_kernel<<<1, 32, 0, stream>>>(); }, stream, batches);
  const double launch_mean_us = host_us_per_call([&] { empty_kernel<<<1, 32, 0, stream>>>(); }, options.quick ? 500 : 5000);

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 4; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  FASTINFER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FASTINFER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double graph_us = host_cost_us([&] { FASTINFER_CUDA_CHECK(cudaGraphLaunch(exec, stream)); }, stream, batches);
  const double gpu_empty_ms = median_ms([&](int) { empty_kernel<<<1, 32, 0, stream>>>(); }, 10, 100, stream);
  FASTINFER_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FASTINFER_CUDA_CHECK(cudaGraphDestroy(graph));

  std::printf("%-58s %9s\n", "call", "host us");
  std::printf("%-58s %9.2f  (mean of back-to-back calls: %.2f)\n", "cudaLaunchKernel (empty kernel)", launch_us, launch_mean_us);
  std::printf("%-58s %9.2f\n", "cudaGraphLaunch (4 empty kernels)", graph_us);
  std::printf("%-58s %9.2f\n", "empty kernel GPU time (us)", gpu_empty_ms * 1e3);

  // Every op, warm: host cost, launches, ratio to that many raw launches, target check.
  std::printf("\n%-58s %9s %8s %8s %9s %9s %6s\n", "op (tiny shapes, warm)", "host us", "kernels", "nodes", "x raw", "GPU us",
              "target");
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& [key, make] : case_factories()) {
    OpCase c = make(stream);
    c.call();
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto [kernels, nodes] = count_launches(c.call, stream);
    const double us = host_cost_us(c.call, stream, batches);
    // Short batches too: ops whose GPU time exceeds their host time (CP 1x1024) queue up to 64 calls
    // of GPU work in a long batch; 8 calls keep that backlog small (a check on the 64-call figure).
    const double us_short = host_cost_us(c.call, stream, batches, kShortBatch);
    const double gpu_ms = median_ms([&](int) { c.call(); }, 5, 50, stream);
    const double raw = std::max(kernels, 1) * launch_us;
    // Issue 9's target: at most 1.2x the raw cost of its launches plus 1 us.
    const bool ok = us <= 1.2 * raw + 1.0;
    std::printf("%-58s %9.2f %8d %8d %9.2f %9.2f %6s\n", c.name.c_str(), us, kernels, nodes, us / raw, gpu_ms * 1e3,
                ok ? "met" : "MISSED");
    ops.push_back({{"op", key}, {"name", c.name}, {"host_us", us}, {"kernels", kernels}, {"graph_nodes", nodes},
                   {"ratio_to_raw_launches", us / raw}, {"target_us", 1.2 * raw + 1.0}, {"target_met", ok},
                   {"gpu_us", gpu_ms * 1e3}, {"host_us_short_batch", us_short}, {"short_batch", kShortBatch}});
  }

  // The autotuner's choice on a live runner key (what mm_bf16_fp4 pays per call for it).
  auto runner = gemm::detail::mm_runner_for(0, DType::kBFloat16, 128, 128);
  const tune::RunnerKey& key = runner->tune_key();
  volatile int sink = 0;
  double choose_ns = 1e300;
  for (int b = 0; b < 20; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 100000; ++i) sink = sink + tune::Tuner::global().choose(key, 1 + (i & 63)).tactic;
    choose_ns = std::min(choose_ns, us_since(t0) * 1e3 / 100000);
  }
  std::printf("\nautotuner choose (bucket + lookup) on the mm_bf16_fp4 runner key: %.1f ns (target < 100 ns)\n", choose_ns);
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));

  nlohmann::json cold = cold_start_all();
  return {{"raw_launch_us", launch_us},        {"raw_launch_mean_us", launch_mean_us}, {"graph4_launch_us", graph_us},
          {"empty_kernel_gpu_us", gpu_empty_ms * 1e3}, {"ops", ops}, {"tune_choose_ns", choose_ns}, {"cold_start", cold}};
}

const RoutineRegistration registration{
    {"host_overhead", "host cost per call of raw launches and every op (tiny shapes), cold start per op", run_host_overhead}};

}  // namespace
}  // namespace fastinfer::bench
