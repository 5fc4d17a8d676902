// Demo step for gdn::decode. On the GPU: one decode step (T = 1) and one MTP verification
// (T = 4, intermediate states, pool untouched) for B = 256 sequences with 16 q/k and 32 value
// heads on an fp32 pool, each checked against the fp64 CPU reference, with the GPU time and the
// achieved bandwidth. Without a GPU: the CPU path on B = 4, checked for MTP consistency (the
// intermediate state after token 0 equals a T = 1 step on token 0).
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "demos.h"
#include "fastinfer/gdn.h"
#include "ref/gdn_decode_ref.h"
#include "ref/host_tensor.h"

namespace fastinfer::cli {
namespace {

using ref::HostTensor;
constexpr std::int64_t D = 128;

struct HostDecode {
  HostTensor q, k, v, A_log, a, dt_bias, b, state, indices, output, intermediate;
  bool with_intermediate = false;
  bool verify_only = false;

  HostDecode(std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t HV, bool inter, std::uint64_t seed)
      : q(DType::kBFloat16, {B, T, H, D}), k(DType::kBFloat16, {B, T, H, D}), v(DType::kBFloat16, {B, T, HV, D}),
        A_log(DType::kFloat32, {HV}), a(DType::kFloat32, {B, T, HV}), dt_bias(DType::kFloat32, {HV}),
        b(DType::kFloat32, {B, T, HV}), state(DType::kFloat32, {B, HV, D, D}), indices(DType::kInt32, {B}),
        output(DType::kBFloat16, {B, T, HV, D}), with_intermediate(inter) {
    std::mt19937_64 rng(seed);
    for (HostTensor* t : {&q, &k, &v, &state}) t->fill_uniform(rng, -1, 1);
    A_log.fill_uniform(rng, -3, 1);
    dt_bias.fill_uniform(rng, -1, 1);
    a.fill_uniform(rng, -3, 3);
    b.fill_uniform(rng, -4, 4);
    for (std::int64_t i = 0; i < B; ++i)  // reversed slots (ref::store has no integer case)
      static_cast<std::int32_t*>(indices.data())[i] = static_cast<std::int32_t>(B - 1 - i);
    if (inter) intermediate = HostTensor(DType::kFloat32, {B, T, HV, D, D});
  }
  gdn::DecodeArgs args() const {
    gdn::DecodeArgs x;
    x.q = q; x.k = k; x.v = v; x.A_log = A_log; x.a = a; x.dt_bias = dt_bias; x.b = b;
    x.state = state; x.initial_state_indices = indices; x.output = output;
    if (with_intermediate) x.intermediate_states = intermediate.view();
    x.scale = 1.0f;
    x.disable_state_update = verify_only;
    return x;
  }
};

double rel_l2(const HostTensor& x, const HostTensor& y) {
  double e = 0, r = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double d = x.get(i) - y.get(i);
    e += d * d;
    r += y.get(i) * y.get(i);
  }
  return std::sqrt(e / std::max(r, 1e-300));
}

bool cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::printf("gdn_decode: %s failed: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

// Runs `h` on the GPU (timed), downloads the results into `gpu`, runs the reference on `h`.
bool run_on_gpu(const char* label, HostDecode& h, std::int64_t T) {
  std::vector<void*> buffers;
  auto upload = [&](const HostTensor& t) {
    TensorView v = t.view();
    void* p = nullptr;
    if (!cuda_ok(cudaMalloc(&p, t.nbytes()), "cudaMalloc")) return v;
    cudaMemcpy(p, t.data(), t.nbytes(), cudaMemcpyHostToDevice);
    buffers.push_back(p);
    v.data = p;
    v.device = Device::cuda(0);
    return v;
  };
  gdn::DecodeArgs d = h.args();
  d.q = upload(h.q); d.k = upload(h.k); d.v = upload(h.v);
  d.A_log = upload(h.A_log); d.a = upload(h.a); d.dt_bias = upload(h.dt_bias); d.b = upload(h.b);
  d.state = upload(h.state); d.initial_state_indices = upload(h.indices); d.output = upload(h.output);
  if (h.with_intermediate) d.intermediate_states = upload(h.intermediate);

  gdn::DecodeArgs warm = d;
  warm.disable_state_update = true;
  gdn::decode(warm);  // warm-up: runner built, clocks up; the pool is left as uploaded
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  gdn::decode(d);
  cudaEventRecord(stop);
  bool ok = cuda_ok(cudaEventSynchronize(stop), "decode");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);

  HostDecode gpu = h;
  cudaMemcpy(gpu.output.data(), d.output.data, h.output.nbytes(), cudaMemcpyDeviceToHost);
  cudaMemcpy(gpu.state.data(), d.state.data, h.state.nbytes(), cudaMemcpyDeviceToHost);
  if (h.with_intermediate) cudaMemcpy(gpu.intermediate.data(), d.intermediate_states->data, h.intermediate.nbytes(), cudaMemcpyDeviceToHost);
  for (void* p : buffers) cudaFree(p);

  ref::gdn_decode(h.args());
  const double e_out = rel_l2(gpu.output, h.output), e_state = rel_l2(gpu.state, h.state);
  const double e_inter = h.with_intermediate ? rel_l2(gpu.intermediate, h.intermediate) : 0.0;
  const double bytes = (h.verify_only ? 1.0 : 2.0) * h.state.nbytes() + h.q.nbytes() * 2 + h.v.nbytes() * 2 +
                       (h.with_intermediate ? h.intermediate.nbytes() : 0);
  ok = ok && e_out < 4e-3 && e_state < 1e-5 && e_inter < 1e-5;
  std::printf("gdn_decode: %-44s %.3f ms (%.2f TB/s), rel. L2 error vs fp64 reference: output %.1e, state %.1e",
              label, ms, bytes / (ms * 1e-3) / 1e12, e_out, e_state);
  if (h.with_intermediate) std::printf(", intermediate %.1e", e_inter);
  std::printf(" [%s]\n", ok ? "ok" : "FAILED");
  (void)T;
  return ok;
}

bool run_on_cpu() {
  // MTP (T = 3, intermediate states) vs a T = 1 step on token 0, through the public CPU path.
  const std::int64_t B = 4, H = 2, HV = 4;
  const auto t0 = std::chrono::steady_clock::now();
  HostDecode mtp(B, 3, H, HV, true, 2);
  HostDecode step(B, 1, H, HV, false, 3);
  step.state = mtp.state;
  step.A_log = mtp.A_log;
  step.dt_bias = mtp.dt_bias;
  for (std::int64_t i = 0; i < B; ++i) {
    for (std::int64_t e = 0; e < H * D; ++e) {
      step.q.set(i * H * D + e, mtp.q.get(i * 3 * H * D + e));
      step.k.set(i * H * D + e, mtp.k.get(i * 3 * H * D + e));
    }
    for (std::int64_t e = 0; e < HV * D; ++e) step.v.set(i * HV * D + e, mtp.v.get(i * 3 * HV * D + e));
    for (std::int64_t h = 0; h < HV; ++h) {
      step.a.set(i * HV + h, mtp.a.get(i * 3 * HV + h));
      step.b.set(i * HV + h, mtp.b.get(i * 3 * HV + h));
    }
  }
  gdn::decode(mtp.args());
  gdn::decode(step.args());
  double worst = 0;
  for (std::int64_t i = 0; i < B; ++i)
    for (std::int64_t h = 0; h < HV; ++h)
      for (std::int64_t e = 0; e < D * D; ++e) {
        const std::int64_t slot = static_cast<std::int64_t>(step.indices.get(i));
        const double s = step.state.get((slot * HV + h) * D * D + e);
        const double m = mtp.intermediate.get(((i * 3 + 0) * HV + h) * D * D + e);
        worst = std::max(worst, std::fabs(s - m));
      }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const bool ok = worst < 1e-6;
  std::printf("gdn_decode: CPU reference B=%lld, heads %lld/%lld, MTP T=3 vs T=1 step: max |diff| %.1e in %.0f ms [%s]\n",
              static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(HV), worst, ms,
              ok ? "ok" : "FAILED");
  return ok;
}

}  // namespace

bool demo_gdn_decode(bool on_gpu) {
  if (!on_gpu) return run_on_cpu();
  HostDecode step(256, 1, 16, 32, false, 1);
  bool ok = run_on_gpu("decode B=256 T=1 heads 16/32 fp32 state", step, 1);
  HostDecode mtp(64, 4, 16, 32, true, 2);
  mtp.verify_only = true;
  ok = run_on_gpu("MTP verify B=64 T=4 heads 16/32 (+intermediates)", mtp, 4) && ok;
  return ok;
}

}  // namespace fastinfer::cli
