// GPU tests of gdn::prefill_distributed (issue 10) over 2 devices of this process: one NCCL
// communicator per device (ncclCommInitAll), one host thread per rank. Each case cuts a random
// batch into rank slices and compares the ranks' outputs and final states with the single-GPU
// gdn::prefill of the whole batch (device 0) within the CP tolerances (docs/GDN_CP.md).
#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <thread>

#include "dist/nccl_backend.h"
#include "dist/rank_pipeline.h"
#include "dist/split_problem.h"  // tests/dist
#include "fastinfer/device.h"
#include "fastinfer/gdn_distributed.h"
#include "runtime/cuda_check.h"
#include "support/gpu_test.h"

namespace fastinfer {
namespace {

using dist_test::Problem;
using dist_test::RankSlice;
using ref::HostTensor;
constexpr std::int64_t DD = 128 * 128;

// cudaMemset and pageable cudaMemcpy may still be running on the legacy stream when they return,
// and the ops run on non-blocking streams, which do not wait for it.
void wait_for_legacy_stream() { FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy)); }

// A device copy of a host tensor on `device`, or an uninitialised one poisoned with NaN.
struct DeviceCopy {
  void* ptr = nullptr;
  TensorView view;
  DeviceCopy() = default;
  DeviceCopy(const TensorView& host, int device, bool upload = true) : view(host) {
    const std::size_t bytes = static_cast<std::size_t>(std::max<std::int64_t>(host.numel(), 1)) * host.element_size();
    FASTINFER_CUDA_CHECK(cudaSetDevice(device));
    FASTINFER_CUDA_CHECK(cudaMalloc(&ptr, bytes));
    if (upload) FASTINFER_CUDA_CHECK(cudaMemcpy(ptr, host.data, bytes, cudaMemcpyHostToDevice));
    else FASTINFER_CUDA_CHECK(cudaMemset(ptr, 0xFF, bytes));  // NaN in every float format
    wait_for_legacy_stream();
    view.data = ptr;
    view.device = Device::cuda(device);
  }
  DeviceCopy(DeviceCopy&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)), view(o.view) {}
  DeviceCopy& operator=(DeviceCopy&& o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(view, o.view);
    return *this;
  }
  DeviceCopy(const DeviceCopy&) = delete;
  ~DeviceCopy() { if (ptr) cudaFree(ptr); }
  std::vector<double> download() const {
    HostTensor h(view.dtype, {view.numel()});
    FASTINFER_CUDA_CHECK(cudaMemcpy(h.data(), ptr, h.nbytes(), cudaMemcpyDeviceToHost));
    std::vector<double> out(static_cast<std::size_t>(view.numel()));
    for (std::int64_t i = 0; i < view.numel(); ++i) out[i] = h.get(i);
    return out;
  }
};

// One rank's arguments on its device.
struct RankRun {
  DeviceCopy q, k, v, alpha, beta, cu, out, init, indices, out_state;
  gdn::PrefillArgs args;
};

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  return std::sqrt(num / std::max(den, 1e-300));
}

// Single GPU: output and final states (pool: slot indices apply to output_state too). The
// reference is the plain (non-CP) kernel, the most tested path; the single-GPU CP result is
// printed against it as a diagnostic (it is issue 6's, not checked here).
void single_gpu_reference(const Problem& p, std::vector<double>& want_out, std::vector<double>& want_fin) {
  const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size()), T = p.q.view().size(0);
  const bool pool = p.args.state_indices.has_value();
  const std::int64_t slots = p.args.initial_state ? p.args.initial_state->size(0) : n_seqs;
  HostTensor out_shape(p.q.view().dtype, {T, p.hsab, 128}), state_shape(DType::kFloat32, {slots, p.hsab, 128, 128});
  {
    DeviceCopy q(p.q, 0), k(p.k, 0), v(p.v, 0), al(p.alpha, 0), be(p.beta, 0), cu(p.cu, 0);
    DeviceCopy out(out_shape, 0, false), fin(state_shape, 0, false);
    DeviceCopy init, idx;
    gdn::PrefillArgs a = p.args;
    a.q = q.view, a.k = k.view, a.v = v.view, a.alpha = al.view, a.beta = be.view, a.cu_seqlens = cu.view;
    a.output = out.view;
    a.output_state = fin.view;
    if (p.args.initial_state) init = DeviceCopy(*p.args.initial_state, 0), a.initial_state = init.view;
    if (pool) idx = DeviceCopy(*p.args.state_indices, 0), a.state_indices = idx.view;
    FASTINFER_CUDA_CHECK(cudaSetDevice(0));
    a.use_cp = gdn::UseCp::kOff;
    gdn::prefill(a);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    want_out = out.download(), want_fin = fin.download();
    if (p.args.use_cp != gdn::UseCp::kOff) {
      a.use_cp = gdn::UseCp::kOn;
      gdn::prefill(a);
      FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<double> cp_out = out.download(), cp_fin = fin.download();
      std::vector<double> cf, wf;  // written slots only
      for (std::size_t i = 0; i < want_fin.size(); ++i)
        if (!std::isnan(want_fin[i])) cf.push_back(cp_fin[i]), wf.push_back(want_fin[i]);
      std::printf("  [diagnostic] single-GPU CP vs non-CP: outputs rel L2 %.3g, final states rel L2 %.3g\n",
                  rel_l2(cp_out, want_out), rel_l2(cf, wf));
    }
  }
}

class GdnDistributedGpu : public testing::GpuTest {
 protected:
  void SetUp() override {
    testing::GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!dist::built_with_nccl()) GTEST_SKIP() << "fastinfer built without NCCL";
    if (cuda_device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices, found " << cuda_device_count();
  }

  // Runs the whole batch on device 0 and the cut batch on devices 0 and 1, then compares.
  // The initial state (if any) and the pool layout come from the problem; rank 0 gets them.
  void run_and_compare(const Problem& p, const std::vector<std::vector<std::int64_t>>& cuts, double tol) {
    const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size()), T = p.q.view().size(0);
    const bool pool = p.args.state_indices.has_value();
    const std::int64_t slots = p.args.initial_state ? p.args.initial_state->size(0) : n_seqs;

    HostTensor state_shape(DType::kFloat32, {slots, p.hsab, 128, 128});
    std::vector<double> want_out, want_fin;
    single_gpu_reference(p, want_out, want_fin);

    // Two ranks, one thread each.
    const std::vector<RankSlice> slices = dist_test::split(p, cuts);
    dist::detail::LocalCommunicators comms({0, 1});
    std::vector<RankRun> runs(2);
    std::exception_ptr errors[2];
    auto rank_main = [&](int r) {
      try {
        const RankSlice& s = slices[r];
        RankRun& run = runs[r];
        run.q = DeviceCopy(s.q, r), run.k = DeviceCopy(s.k, r), run.v = DeviceCopy(s.v, r);
        run.alpha = DeviceCopy(s.alpha, r), run.beta = DeviceCopy(s.beta, r), run.cu = DeviceCopy(s.cu, r);
        run.out = DeviceCopy(s.out, r, false);
        run.args = s.args;
        run.args.q = run.q.view, run.args.k = run.k.view, run.args.v = run.v.view;
        run.args.alpha = run.alpha.view, run.args.beta = run.beta.view, run.args.cu_seqlens = run.cu.view;
        run.args.output = run.out.view;
        if (r == 0) {
          run.out_state = DeviceCopy(state_shape, r, false);
          if (p.args.initial_state) run.init = DeviceCopy(*p.args.initial_state, r), run.args.initial_state = run.init.view;
          if (pool) run.indices = DeviceCopy(*p.args.state_indices, r), run.args.state_indices = run.indices.view;
        } else {
          run.out_state = DeviceCopy(HostTensor(DType::kFloat32, {n_seqs, p.hsab, 128, 128}), r, false);
        }
        run.args.output_state = run.out_state.view;
        std::int64_t longest = 0;
        for (auto l : s.lengths) longest = std::max(longest, l);
        cudaStream_t stream;
        FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        gdn::prefill_distributed(run.args, comms[r], {.max_slice_len = longest}, stream);
        FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
      } catch (...) {
        errors[r] = std::current_exception();
      }
    };
    std::thread t0(rank_main, 0), t1(rank_main, 1);
    t0.join();
    t1.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);

    // Outputs: every local row against the single-GPU row of the same global token.
    const std::int64_t row = p.hsab * 128;
    for (int r = 0; r < 2; ++r) {
      const std::vector<double> got = runs[r].out.download();
      std::vector<double> want(got.size());
      for (std::size_t i = 0; i < slices[r].global_rows.size(); ++i)
        std::copy_n(want_out.begin() + slices[r].global_rows[i] * row, row, want.begin() + static_cast<std::int64_t>(i) * row);
      std::size_t unwritten = 0;
      for (double x : got) unwritten += std::isnan(x) ? 1 : 0;
      EXPECT_EQ(unwritten, 0u) << "rank " << r << " left output elements unwritten (NaN poison)";
      const double e = rel_l2(got, want);
      std::printf("  rank %d outputs: %zu rows, rel L2 %.3g vs single-GPU non-CP\n", r, slices[r].global_rows.size(), e);
      EXPECT_LT(e, tol) << "rank " << r << " outputs";
    }
    // Final states: on the rank holding the sequence's last token.
    const std::vector<double> fin0 = runs[0].out_state.download(), fin1 = runs[1].out_state.download();
    for (std::int64_t n = 0; n < n_seqs; ++n) {
      const std::int64_t slot = pool ? static_cast<std::int64_t>(ref::load(*p.args.state_indices, n)) : n;
      if (p.lengths[n] == 0 || slot < 0) continue;  // the single-GPU call writes no state there
      const bool on_rank1 = slices[1].lengths[n] > 0;
      const std::vector<double>& got_all = on_rank1 ? fin1 : fin0;
      const std::int64_t got_row = on_rank1 ? n : slot;
      std::vector<double> got(got_all.begin() + got_row * p.hsab * DD, got_all.begin() + (got_row + 1) * p.hsab * DD);
      std::vector<double> want(want_fin.begin() + slot * p.hsab * DD, want_fin.begin() + (slot + 1) * p.hsab * DD);
      const double e = rel_l2(got, want);
      std::printf("  sequence %lld final state (rank %d): rel L2 %.3g\n", static_cast<long long>(n), on_rank1 ? 1 : 0, e);
      EXPECT_LT(e, tol) << "final state of sequence " << n;
    }
  }
};

// Varlen GVA batch: sequence 0 and 4 split, 2 wholly on rank 1 (its initial state comes from
// rank 0's pool), 3 wholly on rank 0, 1 empty; bf16 pool with a negative slot on rank 0.
TEST_F(GdnDistributedGpu, VarlenPoolOnRankZeroOnlySomeSequencesSplit) {
  Problem p({5000, 0, 3000, 1000, 2000}, 2, 2, 4, 0.99, 1.0, 101);
  p.pool_initial_state(102);
  run_and_compare(p, {{2100, 0, 0, 1000, 700}}, 2e-2);
}

// The same batch with use_cp = Off: ranks < R-1 compute maps, the local prefill is the plain one.
TEST_F(GdnDistributedGpu, VarlenUseCpOffPlainLocalPrefill) {
  Problem p({5000, 0, 3000, 1000, 2000}, 2, 2, 4, 0.99, 1.0, 107);
  p.pool_initial_state(108);
  p.args.use_cp = gdn::UseCp::kOff;
  run_and_compare(p, {{2100, 0, 0, 1000, 700}}, 2e-2);
}

// One sequence of 2 x 131072 tokens, gates very near 1, packed fp32 initial state.
TEST_F(GdnDistributedGpu, TwoTimes131072GatesNearOne) {
  Problem p({262144}, 2, 2, 2, 0.9995, 1.0, 103);
  p.packed_initial_state(104);
  run_and_compare(p, {{131072}}, 2e-2);
}

// Gates very near 1 and short slices with a bf16 pool on rank 0: rank 1's outputs and final
// states depend on the folded entering state (sequence 0's slot is -1: it starts at zero).
TEST_F(GdnDistributedGpu, EnteringStateDominatesShortSlices) {
  Problem p({600, 129}, 2, 2, 4, 0.9995, 1.0, 109);
  p.pool_initial_state(110);
  run_and_compare(p, {{300, 1}}, 2e-2);
}

// Ragged cut inside a 64-token block, GQA, no initial state, several heads.
TEST_F(GdnDistributedGpu, RaggedCutGqaNoInitialState) {
  Problem p({9999, 65}, 8, 4, 4, 0.9, 1.0, 105);
  run_and_compare(p, {{4097, 1}}, 2e-2);
}


// Several ranks simulated on ONE device (no NCCL): every rank runs detail::begin_rank on its own
// stream, the exchange is a device copy of every contribution into every rank's recv slots, then
// detail::finish_rank. This is exactly prefill_distributed around its all-gather, so it checks the
// slice maps, the fold over several ranks (rank 2 folds rank 1's map), the resumed CP prefill and
// the Off path on a one-GPU machine. Compared with the single-GPU non-CP prefill of the batch.
class GdnDistributedSimulatedGpu : public testing::GpuTest {
 protected:
  void run_simulated(const Problem& p, const std::vector<std::vector<std::int64_t>>& cuts, double tol) {
    const int world = static_cast<int>(cuts.size()) + 1;
    const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size());
    const bool pool = p.args.state_indices.has_value();
    const std::int64_t slots = p.args.initial_state ? p.args.initial_state->size(0) : n_seqs;
    std::vector<double> want_out, want_fin;
    single_gpu_reference(p, want_out, want_fin);

    const std::vector<RankSlice> slices = dist_test::split(p, cuts);
    std::vector<RankRun> runs(static_cast<std::size_t>(world));
    std::vector<cudaStream_t> streams(static_cast<std::size_t>(world));
    std::vector<gdn::detail::RankStage> stages(static_cast<std::size_t>(world));
    FASTINFER_CUDA_CHECK(cudaSetDevice(0));
    for (int r = 0; r < world; ++r) {
      const RankSlice& s = slices[r];
      RankRun& run = runs[r];
      run.q = DeviceCopy(s.q, 0), run.k = DeviceCopy(s.k, 0), run.v = DeviceCopy(s.v, 0);
      run.alpha = DeviceCopy(s.alpha, 0), run.beta = DeviceCopy(s.beta, 0), run.cu = DeviceCopy(s.cu, 0);
      run.out = DeviceCopy(s.out, 0, false);
      run.args = s.args;
      run.args.q = run.q.view, run.args.k = run.k.view, run.args.v = run.v.view;
      run.args.alpha = run.alpha.view, run.args.beta = run.beta.view, run.args.cu_seqlens = run.cu.view;
      run.args.output = run.out.view;
      if (r == 0) {
        run.out_state = DeviceCopy(HostTensor(DType::kFloat32, {slots, p.hsab, 128, 128}), 0, false);
        if (p.args.initial_state) run.init = DeviceCopy(*p.args.initial_state, 0), run.args.initial_state = run.init.view;
        if (pool) run.indices = DeviceCopy(*p.args.state_indices, 0), run.args.state_indices = run.indices.view;
      } else {
        run.out_state = DeviceCopy(HostTensor(DType::kFloat32, {n_seqs, p.hsab, 128, 128}), 0, false);
      }
      run.args.output_state = run.out_state.view;
      std::int64_t longest = 0;
      for (auto l : s.lengths) longest = std::max(longest, l);
      FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
      const gdn::PrefillShape shape = gdn::validate_prefill(run.args);
      stages[r] = gdn::detail::begin_rank(run.args, shape, r, world, {.max_slice_len = longest},
                                          ExecContext{Device::cuda(0), streams[r]});
    }
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < world; ++r)
      for (int j = 0; j < world; ++j)
        FASTINFER_CUDA_CHECK(cudaMemcpy(stages[r].recv + j * stages[r].contribution, stages[j].send,
                                        static_cast<std::size_t>(stages[j].contribution) * 4, cudaMemcpyDeviceToDevice));
    // A device-to-device cudaMemcpy does not wait for the copy, and the ranks' non-blocking
    // streams do not order behind the legacy stream: without this the ranks could read a
    // half-copied exchange (the flaky ThreeRanksVarlenPoolUseCpOff failure on the H200).
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < world; ++r) gdn::detail::finish_rank(runs[r].args, stages[r]);
    FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
    // Streams are not destroyed: the workspace pool keys blocks by stream handle, and a later
    // stream could reuse a destroyed one's handle.

    const std::int64_t row = p.hsab * 128;
    for (int r = 0; r < world; ++r) {
      const std::vector<double> got = runs[r].out.download();
      std::vector<double> want(got.size());
      for (std::size_t i = 0; i < slices[r].global_rows.size(); ++i)
        std::copy_n(want_out.begin() + slices[r].global_rows[i] * row, row, want.begin() + static_cast<std::int64_t>(i) * row);
      std::size_t unwritten = 0;
      for (std::size_t i = 0; i < slices[r].global_rows.size() * static_cast<std::size_t>(row); ++i) unwritten += std::isnan(got[i]) ? 1 : 0;
      EXPECT_EQ(unwritten, 0u) << "rank " << r << " left output elements unwritten (NaN poison)";
      const double e = rel_l2(got, want);
      std::printf("  simulated rank %d/%d outputs: %zu rows, rel L2 %.3g vs single-GPU non-CP\n", r, world,
                  slices[r].global_rows.size(), e);
      EXPECT_LT(e, tol) << "rank " << r << " outputs";
    }
    std::vector<std::vector<double>> fins;
    for (int r = 0; r < world; ++r) fins.push_back(runs[r].out_state.download());
    for (std::int64_t n = 0; n < n_seqs; ++n) {
      const std::int64_t slot = pool ? static_cast<std::int64_t>(ref::load(*p.args.state_indices, n)) : n;
      if (p.lengths[n] == 0 || slot < 0) continue;  // the single-GPU call writes no state there
      int last = 0;
      for (int r = 0; r < world; ++r)
        if (slices[r].lengths[n] > 0) last = r;
      const std::int64_t got_row = last == 0 ? slot : n;
      std::vector<double> got(fins[last].begin() + got_row * p.hsab * DD, fins[last].begin() + (got_row + 1) * p.hsab * DD);
      std::vector<double> want(want_fin.begin() + slot * p.hsab * DD, want_fin.begin() + (slot + 1) * p.hsab * DD);
      const double e = rel_l2(got, want);
      std::printf("  sequence %lld final state (rank %d): rel L2 %.3g\n", static_cast<long long>(n), last, e);
      EXPECT_LT(e, tol) << "final state of sequence " << n;
    }
  }
};

// Three simulated ranks: sequence 0 split over all three, 1 empty, 2 over ranks 0 and 2 with an
// empty slice on rank 1, 3 wholly on rank 0, 4 wholly on rank 2; bf16 pool on rank 0; GVA.
TEST_F(GdnDistributedSimulatedGpu, ThreeRanksVarlenPoolCpPath) {
  Problem p({5000, 0, 3000, 1000, 2000}, 2, 2, 4, 0.99, 1.0, 301);
  p.pool_initial_state(302);
  run_simulated(p, {{1700, 0, 1200, 1000, 0}, {3900, 0, 1200, 1000, 0}}, 2e-2);
}

TEST_F(GdnDistributedSimulatedGpu, ThreeRanksVarlenPoolUseCpOff) {
  Problem p({5000, 0, 3000, 1000, 2000}, 2, 2, 4, 0.99, 1.0, 303);
  p.pool_initial_state(304);
  p.args.use_cp = gdn::UseCp::kOff;
  run_simulated(p, {{1700, 0, 1200, 1000, 0}, {3900, 0, 1200, 1000, 0}}, 2e-2);
}

// Two simulated ranks, one sequence of 2 x 131072 tokens, gates very near 1, packed fp32 state.
TEST_F(GdnDistributedSimulatedGpu, TwoRanks2x131072GatesNearOne) {
  Problem p({262144}, 2, 2, 2, 0.9995, 1.0, 305);
  p.packed_initial_state(306);
  run_simulated(p, {{131072}}, 2e-2);
}

// Four simulated ranks with ragged cuts inside 64-token blocks, GQA, no initial state.
TEST_F(GdnDistributedSimulatedGpu, FourRanksRaggedCutsGqa) {
  Problem p({9999, 65}, 8, 4, 4, 0.9, 1.0, 307);
  run_simulated(p, {{2001, 1}, {4097, 30}, {7777, 64}}, 2e-2);
}

// Gates very near 1, short slices, bf16 pool: every slice's outputs and the final states depend
// on the state entering the slice (the CPU test ZeroEnteringStateMovesOutputsBeyondTheGpuTolerance
// shows a zero entering state, the resumed fix-up bug of commit d158c41, is > 0.1 off here).
TEST_F(GdnDistributedSimulatedGpu, ThreeRanksEnteringStateDominatesPool) {
  run_simulated(dist_test::entering_state_dominates_problem(), dist_test::kEnteringStateDominatesCuts, 2e-2);
}

// The same problem with use_cp On: every rank, the last one included, resumes from its maps.
TEST_F(GdnDistributedSimulatedGpu, ThreeRanksEnteringStateDominatesUseCpOn) {
  Problem p = dist_test::entering_state_dominates_problem();
  p.args.use_cp = gdn::UseCp::kOn;
  run_simulated(p, dist_test::kEnteringStateDominatesCuts, 2e-2);
}

void upload(const DeviceCopy& d, const TensorView& host) {
  FASTINFER_CUDA_CHECK(cudaMemcpy(d.ptr, host.data, static_cast<std::size_t>(host.numel()) * host.element_size(),
                                  cudaMemcpyHostToDevice));
  wait_for_legacy_stream();
}

// A CUDA graph captured on each rank after a warm-up call (NCCL all-gather included), replayed
// with new input values, equals an eager call on those values bit for bit, and differs from the
// eager result on the old values (the replay really reads the new inputs).
TEST_F(GdnDistributedGpu, GraphReplayWithNewInputsEqualsEager) {
  Problem a({3000, 700}, 2, 2, 4, 0.99, 1.0, 201), b({3000, 700}, 2, 2, 4, 0.99, 1.0, 202);
  a.packed_initial_state(203);
  b.packed_initial_state(204);
  const std::vector<std::vector<std::int64_t>> cuts = {{1500, 700}};
  const std::vector<RankSlice> sa = dist_test::split(a, cuts), sb = dist_test::split(b, cuts);
  dist::detail::LocalCommunicators comms({0, 1});
  std::vector<double> eager_a[2], graph_b[2], eager_b[2];
  std::exception_ptr errors[2];
  auto rank_main = [&](int r) {
    try {
      RankRun run;
      const RankSlice& s = sa[r];
      run.q = DeviceCopy(s.q, r), run.k = DeviceCopy(s.k, r), run.v = DeviceCopy(s.v, r);
      run.alpha = DeviceCopy(s.alpha, r), run.beta = DeviceCopy(s.beta, r), run.cu = DeviceCopy(s.cu, r);
      run.out = DeviceCopy(s.out, r, false);
      run.out_state = DeviceCopy(HostTensor(DType::kFloat32, {2, a.hsab, 128, 128}), r, false);
      run.args = s.args;
      run.args.q = run.q.view, run.args.k = run.k.view, run.args.v = run.v.view;
      run.args.alpha = run.alpha.view, run.args.beta = run.beta.view, run.args.cu_seqlens = run.cu.view;
      run.args.output = run.out.view;
      run.args.output_state = run.out_state.view;
      if (r == 0) run.init = DeviceCopy(*a.args.initial_state, r), run.args.initial_state = run.init.view;
      auto result = [&] {
        std::vector<double> o = run.out.download(), st = run.out_state.download();
        o.insert(o.end(), st.begin(), st.end());
        return o;
      };
      auto poison = [&] {
        FASTINFER_CUDA_CHECK(cudaMemset(run.out.ptr, 0xFF, static_cast<std::size_t>(run.out.view.numel()) * 2));
        FASTINFER_CUDA_CHECK(cudaMemset(run.out_state.ptr, 0xFF, static_cast<std::size_t>(run.out_state.view.numel()) * 4));
        wait_for_legacy_stream();
      };
      cudaStream_t stream;
      FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      gdn::prefill_distributed(run.args, comms[r], {}, stream);  // warm-up: workspaces, runners
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
      eager_a[r] = result();

      cudaGraph_t graph;
      cudaGraphExec_t exec;
      FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      gdn::prefill_distributed(run.args, comms[r], {}, stream);
      FASTINFER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      FASTINFER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

      const RankSlice& nb = sb[r];
      upload(run.q, nb.q), upload(run.k, nb.k), upload(run.v, nb.v), upload(run.alpha, nb.alpha), upload(run.beta, nb.beta);
      if (r == 0) upload(run.init, *b.args.initial_state);
      poison();
      FASTINFER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
      graph_b[r] = result();
      poison();
      gdn::prefill_distributed(run.args, comms[r], {}, stream);
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
      eager_b[r] = result();
      FASTINFER_CUDA_CHECK(cudaGraphExecDestroy(exec));
      FASTINFER_CUDA_CHECK(cudaGraphDestroy(graph));
    } catch (...) {
      errors[r] = std::current_exception();
    }
  };
  std::thread t0(rank_main, 0), t1(rank_main, 1);
  t0.join();
  t1.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(graph_b[r].size(), eager_b[r].size());
    std::size_t differ = 0, changed = 0;
    for (std::size_t i = 0; i < eager_b[r].size(); ++i) {
      // Both runs start from the same NaN poison: an element only the eager run writes differs;
      // rows no run writes (another rank's final states) stay NaN in both.
      const bool both_nan = std::isnan(graph_b[r][i]) && std::isnan(eager_b[r][i]);
      if (!both_nan && graph_b[r][i] != eager_b[r][i]) ++differ;
      if (graph_b[r][i] != eager_a[r][i]) ++changed;
    }
    EXPECT_EQ(differ, 0u) << "rank " << r << ": replay vs eager on the new inputs";
    EXPECT_GT(changed, eager_b[r].size() / 2) << "rank " << r << ": the replay did not read the new inputs";
  }
}

}  // namespace
}  // namespace fastinfer
