// mm_bf16_fp4 on the GPU: every tactic on every shape of issue 3's grid it accepts, against the
// fp64 CPU reference (relative L2 < 1e-2), two runs bitwise identical, outputs poisoned first;
// an exact one-hot test of the in-register decode (every code x every scale byte); CUDA-graph
// capture; device-side validation.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "fastinfer/error.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
#include "gemm/mm_runner.h"
#include "gemm/mm_tunable.h"
#include "nvfp4/nvfp4_codec.h"
#include "ref/gemm_ref.h"
#include "ref/host_tensor.h"
#include "support/gpu_test.h"

namespace fastinfer {
namespace {

using ref::HostTensor;
using nvfp4::ScaleLayout;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

struct Dev {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit Dev(std::size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&ptr, n ? n : 1), cudaSuccess); }
  ~Dev() { cudaFree(ptr); }
  void upload(const void* h) { EXPECT_EQ(cudaMemcpy(ptr, h, bytes, cudaMemcpyHostToDevice), cudaSuccess); }
  void download(void* h) const { EXPECT_EQ(cudaMemcpy(h, ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess); }
};

// The reference on all cores (rows of a split across threads).
void reference(const HostTensor& a, const HostTensor& packed, const HostTensor& scales, float alpha, HostTensor& out) {
  const std::int64_t m = a.view().size(0), k = a.view().size(1), n = out.view().size(1);
  const int threads = static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const std::int64_t r0 = m * t / threads, r1 = m * (t + 1) / threads;
    if (r0 == r1) continue;
    pool.emplace_back([&, r0, r1] {
      TensorView av = TensorView::contiguous(static_cast<char*>(const_cast<void*>(a.data())) + r0 * k * 2, DType::kBFloat16, {r1 - r0, k});
      TensorView ov = TensorView::contiguous(static_cast<char*>(out.data()) + r0 * n * 4, DType::kFloat32, {r1 - r0, n});
      ref::mm_bf16_fp4(av, packed, scales, alpha, ov);
    });
  }
  for (auto& th : pool) th.join();
}

struct Problem {
  int m, n, k;
  HostTensor a, packed, scales;  // scales linear
  float alpha;
  Dev da, dpacked, dscales;
  std::shared_ptr<const gemm::Bf16Fp4Weights> weights;
  HostTensor expected;  // fp32
  Problem(int m_, int n_, int k_, std::uint64_t seed)
      : m(m_), n(n_), k(k_), a(DType::kBFloat16, {m_, k_}), packed(DType::kUInt8, {n_, k_ / 2}),
        scales(DType::kUInt8, {n_, k_ / 16}), da(static_cast<std::size_t>(m_) * k_ * 2),
        dpacked(static_cast<std::size_t>(n_) * k_ / 2), dscales(static_cast<std::size_t>(n_) * k_ / 16),
        expected(DType::kFloat32, {m_, n_}) {
    std::mt19937_64 rng(seed);
    a.fill_uniform(rng, -1.0, 1.0);
    // Weights quantized on the GPU from random values with a few all-zero blocks.
    HostTensor w(DType::kBFloat16, {n, k});
    w.fill_uniform(rng, -1.0, 1.0);
    for (int r = 0; r < n; r += 7) for (int i = 0; i < 16; ++i) w.set(static_cast<std::int64_t>(r) * k + i, 0.0);
    const float g = nvfp4::global_scale_for(1.0f);
    alpha = 1.0f / g;
    Dev dw(w.nbytes());
    dw.upload(w.data());
    nvfp4::quantize(TensorView::contiguous(dw.ptr, DType::kBFloat16, {n, k}, Device::cuda(0)), g,
                    TensorView::contiguous(dpacked.ptr, DType::kUInt8, {n, k / 2}, Device::cuda(0)),
                    TensorView::contiguous(dscales.ptr, DType::kUInt8, {n, k / 16}, Device::cuda(0)));
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    dpacked.download(packed.data());
    dscales.download(scales.data());
    da.upload(a.data());
    weights = gemm::prepare_bf16_fp4_weights(TensorView::contiguous(dpacked.ptr, DType::kUInt8, {n, k / 2}, Device::cuda(0)),
                                             TensorView::contiguous(dscales.ptr, DType::kUInt8, {n, k / 16}, Device::cuda(0)),
                                             ScaleLayout::kLinear, alpha);
    reference(a, packed, scales, alpha, expected);
  }
  TensorView a_view() const { return TensorView::contiguous(da.ptr, DType::kBFloat16, {m, k}, Device::cuda(0)); }
};

std::vector<std::uint16_t> run_tactic(const Problem& p, int tactic, DType out_t) {
  Dev dout(static_cast<std::size_t>(p.m) * p.n * 2);
  EXPECT_EQ(cudaMemset(dout.ptr, 0xFF, dout.bytes), cudaSuccess);  // NaN poison
  auto runner = gemm::detail::mm_runner_for(0, out_t, p.n, p.k);
  gemm::detail::MmCall call;
  call.a = p.da.ptr;
  call.lda = p.k;
  call.weights = &p.weights->impl();
  call.out = dout.ptr;
  call.ldo = p.n;
  call.m = p.m;
  runner->run(call, tactic, nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint16_t> h(static_cast<std::size_t>(p.m) * p.n);
  dout.download(h.data());
  return h;
}

double rel_l2(const std::vector<std::uint16_t>& got, const HostTensor& expected, DType out_t) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = out_t == DType::kFloat16 ? ref::fp16_to_float(got[i]) : ref::bf16_to_float(got[i]);
    const double e = expected.get(static_cast<std::int64_t>(i));
    if (!std::isfinite(g)) return INFINITY;
    num += (g - e) * (g - e);
    den += e * e;
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

class GemmGpu : public testing::GpuTest {};

void check_all_tactics(int m, int n, int k, DType out_t = DType::kBFloat16) {
  SCOPED_TRACE(::testing::Message() << "M=" << m << " N=" << n << " K=" << k);
  Problem p(m, n, k, static_cast<std::uint64_t>(m) * 131 + n * 7 + k);
  auto runner = gemm::detail::mm_runner_for(0, out_t, n, k);
  std::vector<int> ids = runner->tactics(m);
  ids.push_back(-1);
  ASSERT_GT(ids.size(), 1u);
  for (int id : ids) {
    SCOPED_TRACE(id < 0 ? std::string("default") : runner->tactic(id).name);
    const auto first = run_tactic(p, id, out_t);
    const auto second = run_tactic(p, id, out_t);
    EXPECT_LT(rel_l2(first, p.expected, out_t), 1e-2);
    EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * 2), 0) << "two runs differ";
  }
}

TEST_F(GemmGpu, SquareGridEveryTactic) {
  for (int m : {1, 4, 16, 64, 128, 256, 512}) check_all_tactics(m, 4096, 4096);
}

TEST_F(GemmGpu, RaggedShapesEveryTactic) {
  const int shapes[][3] = {{3, 448, 320},      {127, 704, 960},  {1000, 1600, 1536}, {3000, 1088, 768},
                           {13, 11008, 128},   {2048, 2688, 2688}, {1, 2048, 7168},  {16, 10304, 2688},
                           // K not a multiple of 64 (zero-filled activation tails), N not a multiple of 128
                           {37, 200, 208},     {70, 520, 1200}};
  for (const auto& s : shapes) check_all_tactics(s[0], s[1], s[2]);
  check_all_tactics(5, 448, 320, DType::kFloat16);
  check_all_tactics(100, 704, 960, DType::kFloat16);
}

// The persistent tactics cut the weight's row-group x k-chunk list into equal shares per warp,
// so a row group can be split between several warps (slots + last-arriver sum): the issue's two
// large shapes, K = 64 (one chunk per row group), K = 4160 (65 chunks), tiny N, M = 8 and 9 (the
// T = 1 / 2 boundary), T = 1, 2 and 4.
TEST_F(GemmGpu, PersistentSharesEveryTactic) {
  const int shapes[][3] = {{1, 28672, 4096}, {16, 4096, 14336}, {5, 200, 64},     {9, 1000, 4160},
                           {27, 1000, 4160}, {2, 64, 256},      {12, 6144, 4096}, {32, 2048, 7168},
                           {8, 2048, 7168},  {4, 28672, 4096},
                           {24, 28672, 4096}};  // the default picks a persistent tactic here
  for (const auto& s : shapes) check_all_tactics(s[0], s[1], s[2]);
}

// Each persistent tactic captured in a CUDA graph and replayed three times (PDL on the eager
// warm-up): the row-group counters must be back at zero after every launch.
TEST_F(GemmGpu, PersistentGraphReplayResetsCounters) {
  Problem p(16, 4096, 4096, 7);
  auto runner = gemm::detail::mm_runner_for(0, DType::kBFloat16, p.n, p.k);
  Dev dout(static_cast<std::size_t>(p.m) * p.n * 2);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  int tested = 0;
  for (int id : runner->tactics(p.m)) {
    if (runner->tactic(id).persist_stages == 0) continue;
    SCOPED_TRACE(runner->tactic(id).name);
    ++tested;
    gemm::detail::MmCall call{p.da.ptr, p.k, &p.weights->impl(), dout.ptr, p.n, p.m, true};
    runner->run(call, id, s);
    runner->run(call, id, s);
    CUDA_OK(cudaStreamSynchronize(s));
    std::vector<std::uint16_t> eager(static_cast<std::size_t>(p.m) * p.n), replay(eager.size());
    dout.download(eager.data());
    EXPECT_LT(rel_l2(eager, p.expected, DType::kBFloat16), 1e-2);
    call.enable_pdl = false;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    runner->run(call, id, s);
    CUDA_OK(cudaStreamEndCapture(s, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < 3; ++r) {
      CUDA_OK(cudaMemsetAsync(dout.ptr, 0xFF, dout.bytes, s));
      CUDA_OK(cudaGraphLaunch(exec, s));
      CUDA_OK(cudaStreamSynchronize(s));
      dout.download(replay.data());
      EXPECT_EQ(std::memcmp(eager.data(), replay.data(), eager.size() * 2), 0) << "replay " << r;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(s);
  EXPECT_GT(tested, 0);
}

// The runner caches its heuristic's pick per M: every M from 1 to 600 (and both sides of the
// cache's end) gets a tactic that can run it, the same on a second ask.
TEST_F(GemmGpu, DefaultTacticRunsItsMAndIsStable) {
  const std::int64_t shapes[][2] = {{28672, 4096}, {4096, 14336}, {200, 208}, {704, 960}};
  for (const auto& s : shapes) {
    auto runner = gemm::detail::mm_runner_for(0, DType::kBFloat16, s[0], s[1]);
    std::vector<std::int64_t> ms;
    for (std::int64_t m = 1; m <= 600; ++m) ms.push_back(m);
    for (std::int64_t m : {8191, 8192, 8193, 20000}) ms.push_back(m);
    for (std::int64_t m : ms) {
      const int id = runner->default_tactic(m);
      const std::vector<int> ids = runner->tactics(m);
      ASSERT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << s[0] << "x" << s[1] << " M=" << m << " id " << id;
      ASSERT_EQ(runner->default_tactic(m), id) << "M=" << m;
    }
  }
}

// a = one-hot rows: out[m, n] = e2m1(q[n, k_m]) * sf[n, k_m / 16] exactly, for every code and
// every scale byte (incl. e4m3 subnormals and 0.5, the bf16-subnormal decode).
TEST_F(GemmGpu, DecodeIsExactForEveryCodeAndScale) {
  const int m = 64, n = 256, k = 1024;
  HostTensor packed(DType::kUInt8, {n, k / 2}), scales(DType::kUInt8, {n, k / 16}), a(DType::kBFloat16, {m, k});
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < k / 16; ++b) {
      static_cast<std::uint8_t*>(scales.data())[r * (k / 16) + b] = static_cast<std::uint8_t>((7 * r + b) % 127);  // 0x00..0x7e
      for (int i = 0; i < 8; ++i) {
        const int lo = (r + 3 * b + 2 * i) % 16, hi = (r + 5 * b + 2 * i + 1) % 16;
        static_cast<std::uint8_t*>(packed.data())[r * (k / 2) + b * 8 + i] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
    }
  a.fill(0.0);
  std::vector<int> col(m);
  for (int t = 0; t < m; ++t) {
    col[t] = 16 * t + (t * 5) % 16;
    a.set(t * k + col[t], 1.0);
  }
  Dev dp(packed.nbytes()), ds(scales.nbytes()), da(a.nbytes()), dout(static_cast<std::size_t>(m) * n * 2);
  dp.upload(packed.data());
  ds.upload(scales.data());
  da.upload(a.data());
  auto w = gemm::prepare_bf16_fp4_weights(TensorView::contiguous(dp.ptr, DType::kUInt8, {n, k / 2}, Device::cuda(0)),
                                          TensorView::contiguous(ds.ptr, DType::kUInt8, {n, k / 16}, Device::cuda(0)),
                                          ScaleLayout::kLinear, 1.0f);
  auto runner = gemm::detail::mm_runner_for(0, DType::kBFloat16, n, k);
  for (int mm : {8, 64}) {
    for (int id : runner->tactics(mm)) {
      if (runner->tactic(id).large_m) continue;
      SCOPED_TRACE(runner->tactic(id).name + " M=" + std::to_string(mm));
      CUDA_OK(cudaMemset(dout.ptr, 0xFF, dout.bytes));
      gemm::detail::MmCall call{da.ptr, k, &w->impl(), dout.ptr, n, mm, false};
      runner->run(call, id, nullptr);
      CUDA_OK(cudaDeviceSynchronize());
      std::vector<std::uint16_t> h(static_cast<std::size_t>(m) * n);
      dout.download(h.data());
      int bad = 0;
      for (int t = 0; t < mm; ++t)
        for (int r = 0; r < n; ++r) {
          const int byte = static_cast<int>(packed.get(r * (k / 2) + col[t] / 2));
          const int code = col[t] % 2 ? byte >> 4 : byte & 0xf;
          const float want = nvfp4::codec::e2m1_to_float(static_cast<std::uint8_t>(code)) *
                             nvfp4::codec::e4m3_to_float(static_cast<std::uint8_t>(scales.get(r * (k / 16) + col[t] / 16)));
          const float got = ref::bf16_to_float(h[static_cast<std::size_t>(t) * n + r]);
          if (got != want && !(got == 0 && want == 0) && bad++ < 5)
            ADD_FAILURE() << "token " << t << " row " << r << " code " << code << " scale byte "
                          << scales.get(r * (k / 16) + col[t] / 16) << ": got " << got << " want " << want;
        }
      EXPECT_EQ(bad, 0);
    }
  }
}

// The heuristic's mid-M range (docs/GEMM_LARGE_M.md): fused wgmma from M = 65 to 512 (and at M = 64
// on a wide N or a large narrow weight), the decode pass + GEMM from M = 1024; the fused tile follows
// M and N, with the persistent stream-K split below N = 16384 for 64-token tiles and for up to 32
// CTAs of 128 tokens (mm_runner.cpp).
TEST_F(GemmGpu, DefaultTacticIsFusedAtMidM) {
  struct Case { std::int64_t n, k, m; const char* want; };
  const Case cases[] = {{28672, 4096, 64, "fused_wgmma_64x128x64"},      {28672, 4096, 128, "fused_wgmma_128x128x64_pp"},
                        {28672, 4096, 256, "fused_wgmma_256x128x64_il"}, {28672, 4096, 512, "fused_wgmma_256x128x64_il"},
                        {4096, 14336, 128, "fused_wgmma_128x128x64_sk"}, {4096, 14336, 512, "fused_wgmma_256x128x64_k2"},
                        {2048, 7168, 128, "fused_wgmma_128x128x64_sk"},  {2048, 7168, 256, "fused_wgmma_128x128x64_sk"},
                        {4096, 4096, 256, "fused_wgmma_128x128x64_k2"},  {6144, 4096, 64, "fused_wgmma_64x128x64_sk"},
                        {6144, 4096, 256, "fused_wgmma_256x128x64_k2"},  {28672, 4096, 1024, "fused_wgmma_256x128x64_il"},
                        {28672, 4096, 2048, "dequant_gemm"},             {4096, 14336, 1024, "dequant_gemm"}};
  for (const Case& c : cases) {
    auto runner = gemm::detail::mm_runner_for(0, DType::kBFloat16, c.n, c.k);
    bool large_built = false;
    for (int id = 0; id < runner->tactic_count(); ++id) large_built |= runner->tactic(id).large_m;
    if (!large_built) GTEST_SKIP() << "built with FASTINFER_WITH_LARGE_M=OFF: no fused tactics";
    const std::string got = runner->tactic(runner->default_tactic(c.m)).name;
    const std::string want = std::string("large_m_") + c.want;  // dequant_gemm: any of its tiles
    EXPECT_TRUE(got == want || (want.ends_with("dequant_gemm") && got.starts_with(want)))
        << c.n << "x" << c.k << " M=" << c.m << ": " << got;
  }
}

class GemmGpuEntry : public testing::GpuTest, public ::testing::WithParamInterface<int> {};

// The default tactic at M = 16 (small-M streaming, lean ring), 48 (small-M with 64-token tiles: N is
// below the heuristic's kSmallMWideToN), 100 and 300 (the fused wgmma tactics with 128 / 256 tokens
// and split K when the large-M path is built, else the mid-M kernel).
INSTANTIATE_TEST_SUITE_P(DefaultTactics, GemmGpuEntry, ::testing::Values(16, 48, 100, 300));

TEST_P(GemmGpuEntry, PublicEntryGraphCaptureAndPdl) {
  Problem p(GetParam(), 1024, 512, 99);
  Dev dout(static_cast<std::size_t>(p.m) * p.n * 2);
  TensorView out = TensorView::contiguous(dout.ptr, DType::kBFloat16, {p.m, p.n}, Device::cuda(0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  gemm::mm_bf16_fp4(p.a_view(), *p.weights, out, s, /*enable_pdl=*/true);  // warm-up
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<std::uint16_t> eager(static_cast<std::size_t>(p.m) * p.n), replay(eager.size());
  dout.download(eager.data());
  EXPECT_LT(rel_l2(eager, p.expected, DType::kBFloat16), 1e-2);
  CUDA_OK(cudaMemset(dout.ptr, 0xFF, dout.bytes));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  gemm::mm_bf16_fp4(p.a_view(), *p.weights, out, s);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  dout.download(replay.data());
  EXPECT_EQ(std::memcmp(eager.data(), replay.data(), eager.size() * 2), 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  // Device-side validation: a misaligned activation pointer is rejected before any launch.
  TensorView bad_a = TensorView::contiguous(static_cast<char*>(p.da.ptr) + 2, DType::kBFloat16, {p.m - 1, p.k}, Device::cuda(0));
  TensorView out2 = TensorView::contiguous(dout.ptr, DType::kBFloat16, {p.m - 1, p.n}, Device::cuda(0));
  EXPECT_THROW(gemm::mm_bf16_fp4(bad_a, *p.weights, out2), Error);
}

}  // namespace
}  // namespace fastinfer
