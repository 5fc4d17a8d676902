#pragma once
// Shared by the decode GPU test files (decode_gpu_test.cu, decode_pipelined_gpu_test.cu): device
// copies of a DecodeProblem, the tolerances and comparisons against the fp64 reference, and the
// one-call check every test builds on.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "decode_problem.h"
#include "fastinfer/gdn.h"
#include "gdn/decode_params.h"
#include "gdn/decode_runner.h"
#include "gdn/decode_tunable.h"
#include "fastinfer/tune.h"
#include "ref/gdn_decode_ref.h"
#include "support/gpu_test.h"

namespace fastinfer::decode_gpu_test {

using testing::DecodeProblem;
using testing::DecodeShape;
using testing::make_decode_problem;
constexpr std::int64_t D = 128;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// A device copy of a host tensor (same shape, contiguous).
struct DeviceTensor {
  void* ptr = nullptr;
  TensorView view;
  DeviceTensor() = default;
  explicit DeviceTensor(const ref::HostTensor& h) {
    view = h.view();
    if (h.nbytes() == 0) return;
    EXPECT_EQ(cudaMalloc(&ptr, h.nbytes()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, h.data(), h.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    // The copy may still run on the legacy stream; tests on non-blocking streams must not race it.
    EXPECT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
    view.data = ptr;
    view.device = Device::cuda(0);
  }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() {
    if (ptr) cudaFree(ptr);
  }
  void download(ref::HostTensor& h) const {
    if (h.nbytes()) EXPECT_EQ(cudaMemcpy(h.data(), ptr, h.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  }
};

// Every tensor of a problem on the device, and the matching DecodeArgs.
struct DeviceProblem {
  DeviceTensor q, k, v, A_log, a, dt_bias, b, state, initial_indices, output_indices, output, intermediate;
  gdn::DecodeArgs args;
  explicit DeviceProblem(const DecodeProblem& p)
      : q(p.q), k(p.k), v(p.v), A_log(p.A_log), a(p.a), dt_bias(p.dt_bias), b(p.b), state(p.state),
        initial_indices(p.initial_indices), output_indices(p.output_indices), output(p.output),
        intermediate(p.intermediate) {
    args = p.args();
    args.q = q.view; args.k = k.view; args.v = v.view;
    args.A_log = A_log.view; args.a = a.view; args.dt_bias = dt_bias.view; args.b = b.view;
    args.state = state.view;
    args.initial_state_indices = initial_indices.view;
    if (args.output_state_indices) args.output_state_indices = output_indices.view;
    args.output = output.view;
    if (args.intermediate_states) args.intermediate_states = intermediate.view;
  }
  void download_into(DecodeProblem& p) const {
    output.download(p.output);
    state.download(p.state);
    if (p.shape.with_intermediate) intermediate.download(p.intermediate);
  }
};

struct Tolerance {
  double atol, rtol, rel_l2;
};
inline Tolerance tolerance_for(DType t) {
  if (t == DType::kFloat32) return {1e-4, 1e-4, 1e-5};
  if (t == DType::kFloat16) return {2e-3, 2e-3, 1e-3};
  return {0.016, 5e-3, 4e-3};  // bf16: FlashInfer's decode tolerances, plus a relative L2 bound
}

// |gpu - ref| <= atol + rtol |ref| element-wise and ||gpu - ref|| <= rel_l2 ||ref|| over [begin, end).
inline void expect_close(const char* what, const ref::HostTensor& gpu, const ref::HostTensor& ref, std::int64_t begin,
                  std::int64_t end, Tolerance tol) {
  double err2 = 0, ref2 = 0;
  std::int64_t bad = 0, first_bad = -1;
  for (std::int64_t i = begin; i < end; ++i) {
    const double g = gpu.get(i), r = ref.get(i);
    const double d = std::fabs(g - r);
    if (!(d <= tol.atol + tol.rtol * std::fabs(r))) {
      if (bad++ == 0) first_bad = i;
    }
    err2 += (g - r) * (g - r);
    ref2 += r * r;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " elements out of tolerance, first at " << first_bad << " (gpu "
                    << gpu.get(first_bad < 0 ? 0 : first_bad) << ", ref " << ref.get(first_bad < 0 ? 0 : first_bad) << ")";
  EXPECT_LE(std::sqrt(err2), tol.rel_l2 * std::sqrt(ref2) + 1e-30) << what << ": relative L2 error "
                                                                      << std::sqrt(err2 / std::max(ref2, 1e-300));
}

inline bool same_bytes(const ref::HostTensor& x, const ref::HostTensor& y, std::int64_t begin, std::int64_t count) {
  const std::size_t es = dtype_size(x.view().dtype);
  return std::memcmp(static_cast<const char*>(x.data()) + begin * es, static_cast<const char*>(y.data()) + begin * es,
                     count * es) == 0;
}

// Poisons the pool slots no sequence reads or writes (NaN) so that a stray write shows.
inline void poison_spare_slots(DecodeProblem& p) {
  const std::int64_t slots = p.state.view().size(0), per_slot = p.shape.heads_v * D * D;
  for (std::int64_t s = 0; s < slots; ++s) {
    bool used = false;
    for (int i = 0; i < p.shape.batch; ++i) used = used || p.slot_in(i) == s || p.slot_out(i) == s;
    if (!used)
      for (std::int64_t e = 0; e < per_slot; ++e) p.state.set(s * per_slot + e, NAN);
  }
}

// Runs `p` on the GPU (through gdn::decode, or through `runner` when given) and on the CPU
// reference and compares outputs, pool slots and intermediate states.
// `lazy_decay` false (runner only) checks the eager decay path of token_step.
// `adjust` changes the runner's parameters before the launch (fields the benchmark sweeps).
inline void check_against_reference(DecodeProblem p, const gdn::DecodeRunner* runner = nullptr, bool lazy_decay = true,
                             const std::function<void(gdn::DecodeParams&)>& adjust = {}) {
  poison_spare_slots(p);
  const DecodeProblem original = p;
  DeviceProblem dev(p);
  if (runner) {
    gdn::DecodeParams params = gdn::make_decode_params(dev.args);
    params.lazy_decay = lazy_decay;
    if (adjust) adjust(params);
    runner->run(params, nullptr);
  } else {
    gdn::decode(dev.args);
  }
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  DecodeProblem gpu = p;
  dev.download_into(gpu);

  DecodeProblem cpu = p;
  gdn::decode(cpu.args());  // the CPU path: slot checks + fp64 reference

  expect_close("output", gpu.output, cpu.output, 0, cpu.output.numel(), tolerance_for(p.shape.act));
  const std::int64_t per_slot = p.shape.heads_v * D * D;
  for (std::int64_t s = 0; s < p.state.view().size(0); ++s) {
    if (same_bytes(cpu.state, original.state, s * per_slot, per_slot)) {
      ASSERT_TRUE(same_bytes(gpu.state, original.state, s * per_slot, per_slot)) << "slot " << s << " must be untouched";
    } else {
      expect_close(("state slot " + std::to_string(s)).c_str(), gpu.state, cpu.state, s * per_slot, (s + 1) * per_slot,
                   tolerance_for(p.shape.state));
    }
  }
  if (p.shape.with_intermediate) {
    const std::int64_t per_seq = std::int64_t{p.shape.tokens} * per_slot;
    for (int i = 0; i < p.shape.batch; ++i) {
      if (p.slot_in(i) < 0) {
        ASSERT_TRUE(same_bytes(gpu.intermediate, original.intermediate, i * per_seq, per_seq)) << "padded sequence " << i;
      } else {
        expect_close("intermediate", gpu.intermediate, cpu.intermediate, i * per_seq, (i + 1) * per_seq,
                     tolerance_for(p.shape.intermediate));
      }
    }
  }
}


inline DecodeShape shape(int B, int T, int H, int HV, DType state) {
  DecodeShape s;
  s.batch = B; s.tokens = T; s.heads_qk = H; s.heads_v = HV; s.state = state;
  return s;
}

inline std::string tactic_name(DType state, const gdn::DecodeTactic& t) {
  return "state " + std::string(dtype_name(state)) + " lanes " + std::to_string(t.lanes_per_row) + " rows " +
         std::to_string(t.rows_per_thread) + " warps " + std::to_string(t.warps) + " ctas/SM " + std::to_string(t.ctas_per_sm) +
         (t.chunked ? " chunked" : "") + (t.small_batch ? " small_batch" : "") + (t.state_major ? " state_major" : "") +
         (t.dynamic_items ? " dynamic_items" : "") + (t.claimed_tail ? " claimed_tail" : "");
}

using GdnDecodeGpuExtra = testing::GpuTest;

}  // namespace fastinfer::decode_gpu_test
