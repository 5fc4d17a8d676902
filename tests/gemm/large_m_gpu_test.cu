// GPU tests of the large-M mm_bf16_fp4 path against an fp64 CPU reference of dequant(W):
// every tactic on ragged shapes (M, N, K tails), bf16 and fp16 outputs, padded strides, poisoned
// outputs, bitwise repeatability, PDL and CUDA-graph replay, and the decode pass bit for bit.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gemm/large_m.h"
#include "ref/numeric.h"
#include "support/gpu_test.h"

namespace fastinfer::gemm::detail {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// --- tiny local NVFP4 reference (DESIGN.md "NVFP4") ---
double e2m1_value(unsigned nibble) {
  static constexpr double kMagnitude[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (nibble & 8 ? -1.0 : 1.0) * kMagnitude[nibble & 7];
}

double e4m3_value(std::uint8_t bits) {
  const int sign = bits >> 7, exponent = (bits >> 3) & 15, mantissa = bits & 7;
  const double v = exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
  return sign ? -v : v;
}

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  explicit DeviceBuffer(std::size_t count) {
    if (cudaMalloc(&ptr, std::max<std::size_t>(count, 1) * sizeof(T)) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Problem {
  int m, n, k, lda, ldo;
  std::vector<std::uint16_t> a;       // bf16 [m, lda]
  std::vector<std::uint8_t> packed;   // [n, k/2]
  std::vector<std::uint8_t> scales;   // [n, k/16]
  float w_dequant, alpha;
  std::vector<double> reference;      // [m, n]
};

// Random inputs; scale bytes in [lo, hi] (positive e4m3, never NaN).
Problem make_problem(int m, int n, int k, int lda_pad, int ldo_pad, std::uint32_t seed, int scale_lo = 0x28,
                     int scale_hi = 0x50) {
  Problem p{m, n, k, k + lda_pad, n + ldo_pad};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), scale(scale_lo, scale_hi);
  p.a.resize(static_cast<std::size_t>(m) * p.lda);
  for (auto& v : p.a) v = ref::float_to_bf16(uniform(rng));
  p.packed.resize(static_cast<std::size_t>(n) * k / 2);
  for (auto& v : p.packed) v = static_cast<std::uint8_t>(byte(rng));
  p.scales.resize(static_cast<std::size_t>(n) * k / 16);
  for (auto& v : p.scales) v = static_cast<std::uint8_t>(scale(rng));
  p.w_dequant = 1.0f / 37.5f;
  p.alpha = 0.75f;

  // dequant(W) in fp64, then out = alpha * a @ W^T accumulated in fp64, rows split over threads.
  std::vector<double> w(static_cast<std::size_t>(n) * k);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const unsigned nibble = (p.packed[i / 2] >> (4 * (i % 2))) & 15;
    w[i] = e2m1_value(nibble) * e4m3_value(p.scales[i / 16]) * p.w_dequant;
  }
  p.reference.assign(static_cast<std::size_t>(m) * n, 0.0);
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<double> row(k);
      for (int i = t; i < m; i += threads) {
        for (int kk = 0; kk < k; ++kk) row[kk] = ref::bf16_to_float(p.a[static_cast<std::size_t>(i) * p.lda + kk]);
        for (int j = 0; j < n; ++j) {
          const double* wj = &w[static_cast<std::size_t>(j) * k];
          double acc = 0;
          for (int kk = 0; kk < k; ++kk) acc += row[kk] * wj[kk];
          p.reference[static_cast<std::size_t>(i) * n + j] = p.alpha * acc;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return p;
}

// Device copies of a problem plus a poisoned output (NaN in every element, padding included).
struct DeviceProblem {
  DeviceBuffer<std::uint16_t> a, out;
  DeviceBuffer<std::uint8_t> packed, scales;
  std::size_t out_elems;
  explicit DeviceProblem(const Problem& p)
      : a(p.a.size()), out(static_cast<std::size_t>(p.m) * p.ldo), packed(p.packed.size()), scales(p.scales.size()),
        out_elems(static_cast<std::size_t>(p.m) * p.ldo) {
    cudaMemcpy(a.ptr, p.a.data(), p.a.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(packed.ptr, p.packed.data(), p.packed.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(scales.ptr, p.scales.data(), p.scales.size(), cudaMemcpyHostToDevice);
    // A pageable cudaMemcpy may return before its DMA lands, and the legacy stream it runs on does
    // not order a non-blocking stream's kernels (check_pdl_and_graph): wait for it here. Without
    // this, one H200 run under load read the weights before they arrived (output all zeros).
    cudaDeviceSynchronize();
  }
  // 0xFFFF is NaN in bf16 and fp16; synchronous for the same reason as the uploads.
  void poison() {
    cudaMemset(out.ptr, 0xFF, out_elems * 2);
    cudaDeviceSynchronize();
  }
  LargeMParams params(const Problem& p, DType out_dtype, bool pdl = false) const {
    LargeMParams q;
    q.a = a.ptr, q.w_packed = packed.ptr, q.w_scales = scales.ptr, q.w_dequant = p.w_dequant, q.alpha = p.alpha;
    q.out = out.ptr, q.out_dtype = out_dtype, q.m = p.m, q.n = p.n, q.k = p.k, q.lda = p.lda, q.ldo = p.ldo;
    q.device = 0, q.enable_pdl = pdl;
    return q;
  }
  std::vector<std::uint16_t> download() const {
    std::vector<std::uint16_t> host(out_elems);
    cudaMemcpy(host.data(), out.ptr, out_elems * 2, cudaMemcpyDeviceToHost);
    return host;
  }
};

struct Comparison {
  double rel_l2 = INFINITY;
  long long bad = 0;          // NaN/inf inside the output
  long long padding_written = 0;  // non-poison values in the ldo padding
};

Comparison compare(const Problem& p, const std::vector<std::uint16_t>& out, DType dtype) {
  Comparison c;
  double err = 0, norm = 0;
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.ldo; ++j) {
      const std::uint16_t bits = out[static_cast<std::size_t>(i) * p.ldo + j];
      if (j >= p.n) {
        c.padding_written += bits != 0xFFFF;
        continue;
      }
      const double v = dtype == DType::kFloat16 ? ref::fp16_to_float(bits) : ref::bf16_to_float(bits);
      if (!std::isfinite(v)) {
        ++c.bad;
        continue;
      }
      const double r = p.reference[static_cast<std::size_t>(i) * p.n + j];
      err += (v - r) * (v - r);
      norm += r * r;
    }
  }
  c.rel_l2 = std::sqrt(err / std::max(norm, 1e-300));
  return c;
}

class GemmLargeMGpu : public testing::GpuTest {};

// Runs every tactic on one problem: correctness vs the reference and bitwise repeatability.
void check_all_configs(const Problem& p, DType dtype) {
  DeviceProblem d(p);
  ASSERT_NE(d.out.ptr, nullptr);
  int ran = 0;
  int expected = 0;
  for (const auto& config : large_m_configs()) {
    const LargeMParams params = d.params(p, dtype);
    if (config.algo == LargeMAlgo::kFusedWgmma && (p.k % 64 != 0 || p.k / 64 < config.split_k)) {  // its extra rules
      EXPECT_FALSE(can_implement(params, config)) << config.name << " k=" << p.k;
      continue;
    }
    ++expected;
    ASSERT_TRUE(can_implement(params, config)) << config.name << " m=" << p.m << " n=" << p.n << " k=" << p.k;
    DeviceBuffer<std::uint8_t> workspace(workspace_bytes(params, config));
    ASSERT_NE(workspace.ptr, nullptr);
    d.poison();
    run_large_m(params, config, workspace.ptr, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    const auto first = d.download();
    const Comparison c = compare(p, first, dtype);
    EXPECT_EQ(c.bad, 0) << config.name << ": non-finite (unwritten) outputs";
    EXPECT_EQ(c.padding_written, 0) << config.name << ": wrote into the ldo padding";
    EXPECT_LT(c.rel_l2, 1e-2) << config.name << " m=" << p.m << " n=" << p.n << " k=" << p.k;
    d.poison();
    run_large_m(params, config, workspace.ptr, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_TRUE(first == d.download()) << config.name << ": two runs differ";
    std::printf("[large_m] %-40s m=%5d n=%5d k=%5d %s rel_l2=%.2e\n", config.name, p.m, p.n, p.k,
                dtype == DType::kFloat16 ? "fp16" : "bf16", c.rel_l2);
    ++ran;
  }
  EXPECT_EQ(ran, expected);
}

struct Shape {
  int m, n, k, lda_pad, ldo_pad;
};

TEST_F(GemmLargeMGpu, EveryTacticMatchesTheReferenceBf16) {
  const Shape shapes[] = {
      {64, 4096, 4096, 0, 0},  {128, 704, 960, 0, 0},    {256, 1088, 768, 8, 0}, {512, 2048, 1024, 0, 8},
      {1000, 1600, 1536, 0, 0}, {2048, 2688, 2688, 0, 0}, {3000, 1088, 768, 0, 0}, {3, 448, 320, 0, 0},
      {65, 264, 48, 8, 8},     {127, 8, 16, 0, 0},       {13, 11008, 128, 0, 0},
      {192, 2056, 4096, 0, 0}, {320, 392, 2048, 8, 8},  // mid M: token and row tails, padded strides
  };
  std::uint32_t seed = 1;
  for (const Shape& s : shapes) check_all_configs(make_problem(s.m, s.n, s.k, s.lda_pad, s.ldo_pad, seed++), DType::kBFloat16);
}

TEST_F(GemmLargeMGpu, EveryTacticMatchesTheReferenceFp16) {
  check_all_configs(make_problem(1000, 1600, 1536, 0, 0, 101), DType::kFloat16);
  check_all_configs(make_problem(200, 520, 272, 8, 8, 102), DType::kFloat16);
}

TEST_F(GemmLargeMGpu, ExtremeScalesStayAccurate) {
  // The whole finite positive e4m3 range, subnormals included: decode products stay exact in bf16.
  check_all_configs(make_problem(256, 512, 512, 0, 0, 201, 0x01, 0x7E), DType::kBFloat16);
}

void check_pdl_and_graph(const Problem& p, const LargeMConfig& config);

TEST_F(GemmLargeMGpu, PdlAndGraphReplayGiveTheSameBits) {
  const Problem p = make_problem(512, 1024, 1024, 0, 0, 301);
  for (const LargeMConfig& config : large_m_configs()) check_pdl_and_graph(p, config);
}

TEST_F(GemmLargeMGpu, FusedTacticsAreExactForEveryCodeAndScale) {
  // Codes cycle through all 256 byte values; row r uses scale byte r % 126 + 1 (every finite positive
  // e4m3, subnormals included) for all its groups; a is a one-hot per token, so out[m, n] is one
  // decoded weight times alpha: bit-exact against the fp64 value.
  const int m = 320, n = 264, k = 256;  // every k of 4 chunks (5 t mod 256), token and row tails
  Problem p = make_problem(m, n, k, 0, 0, 401);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < k / 2; ++c) p.packed[static_cast<std::size_t>(r) * (k / 2) + c] = static_cast<std::uint8_t>((r * 7 + c) & 0xFF);
    for (int b = 0; b < k / 16; ++b) p.scales[static_cast<std::size_t>(r) * (k / 16) + b] = static_cast<std::uint8_t>(r % 126 + 1);
  }
  std::fill(p.a.begin(), p.a.end(), std::uint16_t{0});
  for (int t = 0; t < m; ++t) p.a[static_cast<std::size_t>(t) * p.lda + (t * 5) % k] = 0x3F80;  // 1.0
  p.w_dequant = 1.0f, p.alpha = 1.0f;
  DeviceProblem d(p);
  for (const LargeMConfig& config : large_m_configs()) {
    if (config.algo != LargeMAlgo::kFusedWgmma) continue;
    const LargeMParams params = d.params(p, DType::kBFloat16);
    ASSERT_TRUE(can_implement(params, config)) << config.name;
    DeviceBuffer<std::uint8_t> workspace(workspace_bytes(params, config));
    d.poison();
    run_large_m(params, config, workspace.ptr, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    const auto got = d.download();
    int wrong = 0;
    for (int t = 0; t < m; ++t)
      for (int r = 0; r < n; ++r) {
        const int kk = (t * 5) % k;
        const std::uint8_t byte = p.packed[static_cast<std::size_t>(r) * (k / 2) + kk / 2];
        const double want = e2m1_value(kk % 2 ? byte >> 4 : byte & 15) * e4m3_value(p.scales[static_cast<std::size_t>(r) * (k / 16) + kk / 16]);
        const double have = ref::bf16_to_float(got[static_cast<std::size_t>(t) * p.ldo + r]);
        if (have != want && ++wrong <= 5) ADD_FAILURE() << config.name << " token " << t << " row " << r << ": " << have << " vs " << want;
      }
    EXPECT_EQ(wrong, 0) << config.name;
  }
}

void check_pdl_and_graph(const Problem& p, const LargeMConfig& config) {
  SCOPED_TRACE(config.name);
  DeviceProblem d(p);
  DeviceBuffer<std::uint8_t> workspace(workspace_bytes(d.params(p, DType::kBFloat16), config));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  d.poison();
  run_large_m(d.params(p, DType::kBFloat16, false), config, workspace.ptr, stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  const auto plain = d.download();
  EXPECT_LT(compare(p, plain, DType::kBFloat16).rel_l2, 1e-2);

  d.poison();
  run_large_m(d.params(p, DType::kBFloat16, true), config, workspace.ptr, stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_TRUE(plain == d.download()) << "PDL launch differs";

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  run_large_m(d.params(p, DType::kBFloat16, true), config, workspace.ptr, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  d.poison();
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_TRUE(plain == d.download()) << "graph replay differs";
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
}

TEST_F(GemmLargeMGpu, DecodePassIsExactForEveryByteAndScale) {
  // Row r uses scale byte r for all its groups; the packed bytes cycle through all 256 values.
  const int n = 256, k = 512;
  std::vector<std::uint8_t> packed(static_cast<std::size_t>(n) * k / 2), scales(static_cast<std::size_t>(n) * k / 16);
  std::mt19937 rng(7);
  for (std::size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<std::uint8_t>(i % 256 ^ (rng() & 0xF0));
  for (int r = 0; r < n; ++r)
    for (int g = 0; g < k / 16; ++g) scales[static_cast<std::size_t>(r) * (k / 16) + g] = static_cast<std::uint8_t>(r == 0x7F || r == 0xFF ? 0x38 : r);
  for (int odd_groups : {0, 1}) {  // also an odd group count (n * k/16 odd) for the tail path
    const int rows = odd_groups ? 1 : n, cols = odd_groups ? 16 * 7 : k;
    DeviceBuffer<std::uint8_t> d_packed(packed.size()), d_scales(scales.size());
    DeviceBuffer<std::uint16_t> d_out(static_cast<std::size_t>(rows) * cols + 8);
    std::vector<std::uint8_t> p2(static_cast<std::size_t>(rows) * cols / 2), s2(static_cast<std::size_t>(rows) * cols / 16);
    std::copy_n(packed.begin(), p2.size(), p2.begin());
    std::copy_n(scales.begin() + (odd_groups ? 40 * (k / 16) : 0), s2.size(), s2.begin());
    CUDA_OK(cudaMemcpy(d_packed.ptr, p2.data(), p2.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_scales.ptr, s2.data(), s2.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_out.ptr, 0xFF, (static_cast<std::size_t>(rows) * cols + 8) * 2));
    decode_nvfp4_to_bf16(d_packed.ptr, d_scales.ptr, d_out.ptr, rows, cols, false, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> out(static_cast<std::size_t>(rows) * cols + 8);
    CUDA_OK(cudaMemcpy(out.data(), d_out.ptr, out.size() * 2, cudaMemcpyDeviceToHost));
    long long mismatches = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * cols; ++i) {
      const double expected = e2m1_value((p2[i / 2] >> (4 * (i % 2))) & 15) * e4m3_value(s2[i / 16]);
      const std::uint16_t want = ref::float_to_bf16(static_cast<float>(expected));
      // -0 and +0 are the same number; anything else must match bit for bit.
      if (out[i] != want && !(expected == 0 && (out[i] & 0x7FFF) == 0)) ++mismatches;
    }
    EXPECT_EQ(mismatches, 0) << "rows=" << rows << " cols=" << cols;
    for (int i = 0; i < 8; ++i) EXPECT_EQ(out[static_cast<std::size_t>(rows) * cols + i], 0xFFFF) << "wrote past the end";
  }
}

}  // namespace
}  // namespace fastinfer::gemm::detail
