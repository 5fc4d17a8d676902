#pragma once
// Shared by the GDN decode benchmark files (gdn_decode_bench.cu: the issue table;
// gdn_decode_diag_bench.cu: the scan, profile, tail and back-to-back routines): shapes, problems with
// rotated pool slots, the queued timing and the matched copy. Internal linkage: each file has its own copy.
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
inline double queued_median_ms(const std::function<void(int)>& fn, int warmup, int reps) {
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
inline double anchor_ms(const Shape& s) {
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
inline double matched_copy_ms(const Problem& p, DeviceBuffer& dst) {
  const std::size_t bytes = std::size_t(p.s.batch) * p.s.heads_v * D * D * dtype_size(p.s.state);
  if (dst.bytes() < bytes) dst = DeviceBuffer(bytes);
  return median_ms([&](int i) {
    const char* src = p.state.as<const char>() + std::size_t(i % p.sets) * bytes;
    FASTINFER_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src, bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
}

// L<lanes>R<rows>W<warps>, then P<ctas per SM> for the pipelined kernel, C for the tensor-core one.
inline std::string tactic_label(const gdn::DecodeTactic& t) {
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

}  // namespace
}  // namespace fastinfer::bench
