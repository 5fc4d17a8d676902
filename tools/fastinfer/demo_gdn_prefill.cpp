// Demo step for gdn::prefill. On the GPU: a Qwen3-Next-shaped prefill (16 q/k heads, 32 value
// heads, 4 sequences of 4096 tokens, bf16, fp32 packed state in and out), timed with CUDA events;
// the first 256 tokens of sequence 0 are checked against the fp64 oracle (their outputs depend on
// nothing else). Without a GPU: the CPU path (the fp64 oracle) on 2 sequences of 100 and 37 tokens,
// checked against the chunked fp32 form the kernel computes.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "demos.h"
#include "fastinfer/error.h"
#include "fastinfer/gdn.h"
#include "ref/gdn_ref.h"
#include "ref/host_tensor.h"

namespace fastinfer::cli {
namespace {

using ref::HostTensor;
constexpr std::int64_t D = 128;

struct HostPrefill {
  HostTensor q, k, v, cu, alpha, beta, output, state_in, state_out;

  HostPrefill(std::int64_t hq, std::int64_t hv, const std::vector<std::int64_t>& lengths, std::uint64_t seed) {
    std::int64_t T = 0;
    for (auto l : lengths) T += l;
    const std::int64_t N = static_cast<std::int64_t>(lengths.size());
    q = HostTensor(DType::kBFloat16, {T, hq, D});
    k = HostTensor(DType::kBFloat16, {T, hq, D});
    v = HostTensor(DType::kBFloat16, {T, hv, D});
    cu = HostTensor(DType::kInt32, {N + 1});
    alpha = HostTensor(DType::kFloat32, {T, hv});
    beta = HostTensor(DType::kFloat32, {T, hv});
    output = HostTensor(DType::kBFloat16, {T, hv, D});
    state_in = HostTensor(DType::kFloat32, {N, hv, D, D});
    state_out = HostTensor(DType::kFloat32, {N, hv, D, D});
    std::mt19937_64 rng(seed);
    for (HostTensor* t : {&q, &k, &v}) t->fill_uniform(rng, -1, 1);
    alpha.fill_uniform(rng, 0.9, 1.0);
    beta.fill_uniform(rng, 0.05, 1.0);
    state_in.fill_uniform(rng, -0.1, 0.1);
    auto* offsets = static_cast<std::int32_t*>(cu.data());
    offsets[0] = 0;
    for (std::int64_t n = 0; n < N; ++n) offsets[n + 1] = offsets[n] + static_cast<std::int32_t>(lengths[n]);
  }
  gdn::PrefillArgs args() const {
    gdn::PrefillArgs a;
    a.q = q, a.k = k, a.v = v, a.cu_seqlens = cu, a.output = output;
    a.alpha = alpha.view(), a.beta = beta.view();
    a.use_qk_l2norm = true;
    a.initial_state = state_in.view(), a.output_state = state_out.view();
    return a;
  }
};

// Max |a - b| and whether |a - b| <= atol + rtol |b| everywhere (first `count` elements).
bool close(const HostTensor& a, const HostTensor& b, std::int64_t count, double atol, double rtol, double& max_abs) {
  bool ok = true;
  max_abs = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const double d = std::fabs(a.get(i) - b.get(i));
    ok = ok && d <= atol + rtol * std::fabs(b.get(i));
    max_abs = std::max(max_abs, d);
  }
  return ok;
}

void* to_device(const HostTensor& h) {
  void* p = nullptr;
  if (cudaMalloc(&p, h.nbytes()) != cudaSuccess || cudaMemcpy(p, h.data(), h.nbytes(), cudaMemcpyHostToDevice) != cudaSuccess)
    throw Error(Error::Kind::kRuntime, "demo gdn_prefill: device allocation failed");
  return p;
}

TensorView on_device(const HostTensor& h, void* p) {
  TensorView v = h.view();
  v.data = p;
  v.device = Device::cuda(0);
  return v;
}

bool demo_gpu() {
  const std::vector<std::int64_t> lengths{4096, 4096, 4096, 4096};
  HostPrefill host(16, 32, lengths, 2026);
  gdn::PrefillArgs a = host.args();
  std::vector<void*> buffers;
  auto dev = [&](const HostTensor& h) {
    buffers.push_back(to_device(h));
    return on_device(h, buffers.back());
  };
  a.q = dev(host.q), a.k = dev(host.k), a.v = dev(host.v), a.cu_seqlens = dev(host.cu), a.output = dev(host.output);
  a.alpha = dev(host.alpha), a.beta = dev(host.beta), a.initial_state = dev(host.state_in), a.output_state = dev(host.state_out);
  gdn::prefill(a);  // warm-up: builds the runner
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  gdn::prefill(a);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaMemcpy(host.output.data(), a.output.data, host.output.nbytes(), cudaMemcpyDeviceToHost);
  for (void* p : buffers) cudaFree(p);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);

  // Oracle on the first 256 tokens of sequence 0 (same inputs and initial state).
  HostPrefill slice(16, 32, {256}, 2026);
  for (std::int64_t i = 0; i < slice.q.numel(); ++i) slice.q.set(i, host.q.get(i)), slice.k.set(i, host.k.get(i));
  for (std::int64_t i = 0; i < slice.v.numel(); ++i) slice.v.set(i, host.v.get(i));
  for (std::int64_t i = 0; i < slice.alpha.numel(); ++i) slice.alpha.set(i, host.alpha.get(i)), slice.beta.set(i, host.beta.get(i));
  for (std::int64_t i = 0; i < slice.state_in.numel(); ++i) slice.state_in.set(i, host.state_in.get(i));
  ref::gdn_prefill_serial_fp64(slice.args());
  double max_abs = 0;
  const bool ok = close(host.output, slice.output, slice.output.numel(), 1e-2, 1e-2, max_abs);
  const double tflops = 4.0 * 16384 * 32 * D * D / (ms * 1e-3) / 1e12;
  std::printf("gdn_prefill: 4x4096 tokens, heads 16/32, bf16, fp32 state: %.3f ms (%.1f nominal TFLOP/s); "
              "first 256 tokens vs fp64 oracle: max abs %.2e -> %s\n", ms, tflops, max_abs, ok ? "ok" : "MISMATCH");
  return ok;
}

bool demo_cpu() {
  HostPrefill oracle(2, 4, {100, 37}, 7);
  HostPrefill chunked = oracle;
  gdn::prefill(oracle.args());  // the CPU path of the public API (fp64 oracle)
  ref::gdn_prefill_chunked_fp32(chunked.args());
  double out_abs = 0, state_abs = 0;
  const bool ok = close(chunked.output, oracle.output, oracle.output.numel(), 1e-2, 1e-2, out_abs) &&
                  close(chunked.state_out, oracle.state_out, oracle.state_out.numel(), 5e-3, 1e-3, state_abs);
  std::printf("gdn_prefill (CPU reference): 2 sequences (100, 37 tokens), heads 2/4; chunked fp32 form vs fp64 "
              "oracle: output max abs %.2e, state max abs %.2e -> %s\n", out_abs, state_abs, ok ? "ok" : "MISMATCH");
  return ok;
}

}  // namespace

bool demo_gdn_prefill(bool on_gpu) {
  try {
    return on_gpu ? demo_gpu() : demo_cpu();
  } catch (const std::exception& e) {
    std::printf("gdn_prefill: error: %s\n", e.what());
    return false;
  }
}

}  // namespace fastinfer::cli
