// GPU tests of CP stages 1-3: each stage against its CPU reference fed with the GPU's previous
// stage, stages 1-3 end to end against the token-serial fp64 recurrence (chunk-entry and final
// states), two concurrent streams against sequential runs, and a replayed CUDA graph with new
// input values against eager runs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gdn/cp.h"
#include "gdn/cp_problem.h"
#include "ref/gdn_cp_ref.h"
#include "runtime/cuda_check.h"
#include "support/gpu_test.h"

namespace fastinfer {
namespace {

using namespace cp_test;
using gdn::detail::CpOptions;
using gdn::detail::CpStageView;

// A device copy of a host tensor.
struct DeviceTensor {
  void* ptr = nullptr;
  TensorView view;
  DeviceTensor() = default;
  explicit DeviceTensor(const TensorView& host) : view(host) {
    const std::size_t bytes = static_cast<std::size_t>(host.numel()) * host.element_size();
    FASTINFER_CUDA_CHECK(cudaMalloc(&ptr, bytes));
    FASTINFER_CUDA_CHECK(cudaMemcpy(ptr, host.data, bytes, cudaMemcpyHostToDevice));
    // A pageable cudaMemcpy (and cudaMemset) may still run on the legacy stream when it returns;
    // the tests' non-blocking streams do not wait for it.
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    view.data = ptr;
    view.device = Device::cuda(0);
  }
  void upload(const TensorView& host) {
    FASTINFER_CUDA_CHECK(cudaMemcpy(ptr, host.data, static_cast<std::size_t>(host.numel()) * host.element_size(),
                                    cudaMemcpyHostToDevice));
    FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  }
  ~DeviceTensor() { if (ptr) cudaFree(ptr); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
};

// The problem's arguments on the device.
struct DeviceProblem {
  DeviceTensor q, k, v, alpha, beta, cu, state, indices;
  gdn::PrefillArgs args;
  explicit DeviceProblem(const Problem& p)
      : q(p.q), k(p.k), v(p.v), alpha(p.alpha), beta(p.beta), cu(p.cu) {
    args = p.args;
    args.q = q.view;
    args.k = k.view;
    args.v = v.view;
    args.alpha = alpha.view;
    args.beta = beta.view;
    args.cu_seqlens = cu.view;
    args.output = q.view;  // unused by stages 1-3
    if (p.args.initial_state) {
      new (&state) DeviceTensor(*p.args.initial_state);
      args.initial_state = state.view;
    }
    if (p.args.state_indices) {
      new (&indices) DeviceTensor(*p.args.state_indices);
      args.state_indices = indices.view;
    }
  }
};

std::vector<double> download(const float* d, std::size_t count) {
  std::vector<float> f(count);
  FASTINFER_CUDA_CHECK(cudaMemcpy(f.data(), d, count * sizeof(float), cudaMemcpyDeviceToHost));
  return std::vector<double>(f.begin(), f.end());
}

// Only rows that belong to a sequence are compared (the rest of a workspace is undefined).
double rel_l2_rows(const std::vector<double>& got, const std::vector<double>& want, const Problem& p,
                   std::int64_t rows_per_seq, std::int64_t row_tokens, std::int64_t row_elems) {
  std::vector<double> g, w;
  for (std::size_t n = 0; n < p.lengths.size(); ++n)
    for (std::int64_t r = 0; r * row_tokens < p.lengths[n]; ++r) {
      const std::size_t base = (n * rows_per_seq + r) * p.hsab * row_elems;
      for (std::int64_t i = 0; i < p.hsab * row_elems; ++i) {
        EXPECT_TRUE(std::isfinite(got[base + i])) << "row " << r << " of sequence " << n << " not written";
        g.push_back(got[base + i]);
        w.push_back(want[base + i]);
      }
    }
  return rel_l2(g, w);
}

struct StageRun {
  CpStageView view;
  std::vector<double> inverse, m, b, states, finals;
};

// Runs stages 1-3 twice, the second time over NaN-poisoned intermediates, and downloads them.
StageRun run_stages(const Problem& p, DeviceProblem& d, const CpOptions& options, cudaStream_t stream = nullptr) {
  const std::size_t state_elems = static_cast<std::size_t>(p.lengths.size() * p.hsab * D * D);
  float* finals = nullptr;
  FASTINFER_CUDA_CHECK(cudaMalloc(&finals, state_elems * sizeof(float)));
  const ExecContext ctx{Device::cuda(0), stream};
  StageRun run;
  run.view = gdn::detail::run_cp_stages(d.args, ctx, options, finals);
  const auto& plan = run.view.plan;
  const std::size_t inv = static_cast<std::size_t>(plan.num_seqs * plan.blocks_per_seq() * p.hsab * 64 * 64);
  const std::size_t maps = static_cast<std::size_t>(plan.map_rows() * p.hsab * D * D);
  const std::size_t states = static_cast<std::size_t>(plan.segments() * p.hsab * D * D);
  FASTINFER_CUDA_CHECK(cudaMemsetAsync(const_cast<float*>(run.view.block_inverse), 0xff, inv * 4, stream));
  for (const float* s : {run.view.map_m, run.view.map_b})
    FASTINFER_CUDA_CHECK(cudaMemsetAsync(const_cast<float*>(s), 0xff, maps * 4, stream));
  FASTINFER_CUDA_CHECK(cudaMemsetAsync(const_cast<float*>(run.view.chunk_states), 0xff, states * 4, stream));
  FASTINFER_CUDA_CHECK(cudaMemsetAsync(finals, 0xff, state_elems * 4, stream));
  run.view = gdn::detail::run_cp_stages(d.args, ctx, options, finals);
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
  run.inverse = download(run.view.block_inverse, inv);
  // Tinv is lower triangular; with CpOptions::lower_inverse_blocks stage 1 writes only the 16x16
  // blocks on or below the diagonal, so the others are set to their value, zero, here (a stage-2
  // kernel that read anything else there would show in the map checks, whose reference is fed this).
  for (std::size_t e = 0; e < inv; ++e)
    if ((e % 64) / 16 > ((e / 64) % 64) / 16) run.inverse[e] = 0.0;
  run.m = download(run.view.map_m, maps);
  run.b = download(run.view.map_b, maps);
  run.states = download(run.view.chunk_states, states);
  run.finals = download(finals, state_elems);
  FASTINFER_CUDA_CHECK(cudaFree(finals));
  return run;
}

class GdnCpGpu : public testing::GpuTest {};

void check_each_stage_and_end_to_end(Problem& p, const CpOptions& options) {
  DeviceProblem d(p);
  const StageRun run = run_stages(p, d, options);
  const auto& plan = run.view.plan;
  const ref::CpLayout layout{plan.chunk_len, plan.chunks_per_seq};
  // Stages 2-3 work on map pieces (map_splits per chunk): the references run on the piece layout,
  // which has the same 64-token blocks, and every map_splits-th piece state is a chunk state.
  const ref::CpLayout pieces{plan.map_len(), plan.maps_per_seq()};
  std::printf("  plan: chunk_len %lld, chunks_per_seq %lld, map_splits %lld\n", static_cast<long long>(plan.chunk_len),
              static_cast<long long>(plan.chunks_per_seq), static_cast<long long>(plan.map_splits));
  EXPECT_EQ(pieces.blocks_per_seq(), layout.blocks_per_seq());
  EXPECT_EQ(plan.map_splits, options.map_splits > 0 ? options.map_splits : 1);

  // Stage 1 vs its reference (the reference normalises k in fp64 without rounding to bf16).
  const auto want_inverse = ref::gdn_cp_block_inverse_ref(p.args, layout);
  const double e1 = rel_l2_rows(run.inverse, want_inverse, p, plan.blocks_per_seq(), 64, 64 * 64);
  // Stage 2 fed with the GPU's inverses; only chunks that are not the last of their sequence... all
  // chunks are composed here because final_states is requested.
  std::vector<double> want_m, want_b;
  ref::gdn_cp_chunk_maps_ref(p.args, pieces, run.inverse, want_m, want_b);
  const double e2m = rel_l2_rows(run.m, want_m, p, pieces.chunks_per_seq, pieces.chunk_len, D * D);
  const double e2b = rel_l2_rows(run.b, want_b, p, pieces.chunks_per_seq, pieces.chunk_len, D * D);
  // Stage 3 fed with the GPU's maps.
  std::vector<double> want_piece_states, want_finals;
  ref::gdn_cp_fixup_ref(p.args, pieces, run.m, run.b, want_piece_states, want_finals);
  std::vector<double> want_states(run.states.size());
  const std::size_t state_block = static_cast<std::size_t>(p.hsab * D * D);
  for (std::int64_t row = 0; row < plan.segments(); ++row)  // chunk row n * chunks + c = piece row (...) * splits
    std::copy_n(want_piece_states.begin() + row * plan.map_splits * state_block, state_block,
                want_states.begin() + row * state_block);
  const double e3 = rel_l2_rows(run.states, want_states, p, plan.chunks_per_seq, plan.chunk_len, D * D);
  // Final states of non-empty sequences (an empty sequence's state is left untouched).
  auto non_empty = [&](const std::vector<double>& x) {
    std::vector<double> out;
    for (std::size_t n = 0; n < p.lengths.size(); ++n)
      if (p.lengths[n] > 0) out.insert(out.end(), x.begin() + n * p.hsab * D * D, x.begin() + (n + 1) * p.hsab * D * D);
    return out;
  };
  const double e3f = rel_l2(non_empty(run.finals), non_empty(want_finals));
  // End to end vs the token-serial fp64 recurrence.
  std::vector<double> serial_chunk, serial_final;
  serial_states(p, plan.chunk_len, plan.chunks_per_seq, serial_chunk, serial_final);
  const double ee = rel_l2_rows(run.states, serial_chunk, p, plan.chunks_per_seq, plan.chunk_len, D * D);
  const double eef = rel_l2(non_empty(run.finals), non_empty(serial_final));
  std::printf("  rel L2: inverse %.2e  M %.2e  B %.2e  fixup %.2e/%.2e  end-to-end states %.2e final %.2e\n", e1,
              e2m, e2b, e3, e3f, ee, eef);
  EXPECT_LT(e1, 1e-2);
  EXPECT_LT(e2m, 1e-2);
  EXPECT_LT(e2b, 1e-2);
  EXPECT_LT(e3, 1e-5);
  EXPECT_LT(e3f, 1e-5);
  EXPECT_LT(ee, 2e-2);
  EXPECT_LT(eef, 2e-2);
}

TEST_F(GdnCpGpu, StagesRaggedGvaPackedStateGatesNearOne) {
  Problem p({1, 63, 64, 65, 0, 700, 1500}, 2, 2, 4, 0.99, 1.0, 11);
  p.packed_initial_state(12);
  check_each_stage_and_end_to_end(p, {.max_seqlen = 1500, .chunk_len = 256});
}

TEST_F(GdnCpGpu, StagesFp16GqaPoolStateSmallGates) {
  Problem p({300, 1000, 129}, 4, 1, 1, 0.02, 0.1, 21, DType::kFloat16);
  p.pool_initial_state(22);
  check_each_stage_and_end_to_end(p, {.max_seqlen = 1000, .chunk_len = 128});
}

// Stages 2-3 on map pieces (CpOptions::map_splits): a chunk of 12 blocks in 3 pieces, ragged
// lengths ending inside pieces, and a chunk of 16 blocks in 4 pieces with a pool state.
TEST_F(GdnCpGpu, StagesOnMapPiecesRagged) {
  Problem p({1, 65, 700, 1500, 0, 833}, 2, 2, 4, 0.99, 1.0, 15);
  p.packed_initial_state(16);
  check_each_stage_and_end_to_end(p, {.max_seqlen = 1500, .chunk_len = 768, .map_splits = 3});
  Problem q({3000, 1025}, 4, 1, 1, 0.9995, 1.0, 17, DType::kFloat16);
  q.pool_initial_state(18);
  check_each_stage_and_end_to_end(q, {.max_seqlen = 3000, .chunk_len = 1024, .map_splits = 4});
}

// The bf16 hi + lo stage 2 (CpOptions::fp16_operands = false; the default is fp16) on the ragged case
// with map pieces and on the fp16 small-gate case.
TEST_F(GdnCpGpu, HiLoChunkMapsPassTheStageChecks) {
  Problem p({1, 65, 700, 1500, 0, 833}, 2, 2, 4, 0.99, 1.0, 15);
  p.packed_initial_state(16);
  check_each_stage_and_end_to_end(p, {.max_seqlen = 1500, .chunk_len = 768, .fp16_operands = false, .map_splits = 3});
  Problem q({300, 1000, 129}, 4, 1, 1, 0.02, 0.1, 21, DType::kFloat16);
  q.pool_initial_state(22);
  check_each_stage_and_end_to_end(q, {.max_seqlen = 1000, .chunk_len = 128, .fp16_operands = false});
}

// Stage 2 on wgmma (CpOptions::wgmma_maps, the default) and on mma.sync (opt-out): the stage checks
// for both kernels with and without prefetch, and the maps of the two against each other: same
// operands, same roundings, the same k16 steps in the same order; on the H200 the two kernels'
// maps came out bit-identical (cp7 batches 1-2: rel L2 0), so anything above fp32 noise is a bug.
TEST_F(GdnCpGpu, BothChunkMapKernelsPassTheStageChecks) {
  for (const bool wgmma : {false, true}) {
    Problem p({1, 65, 700, 1500, 0, 833}, 2, 2, 4, 0.99, 1.0, 15);
    p.packed_initial_state(16);
    check_each_stage_and_end_to_end(p, {.max_seqlen = 1500, .chunk_len = 768, .wgmma_maps = wgmma, .map_splits = 3});
    Problem q({300, 1000, 129}, 4, 1, 1, 0.02, 0.1, 21, DType::kFloat16);
    q.pool_initial_state(22);
    check_each_stage_and_end_to_end(q, {.max_seqlen = 1000, .chunk_len = 128, .prefetch_blocks = false, .wgmma_maps = wgmma});
  }
}

TEST_F(GdnCpGpu, WgmmaChunkMapsAgreeWithMmaSync) {
  for (int variant = 0; variant < 2; ++variant) {
    Problem p({3000, 77, 0, 1100}, 2, 2, 4, variant ? 0.9995 : 0.99, 1.0, 81 + variant,
              variant ? DType::kFloat16 : DType::kBFloat16);
    DeviceProblem d(p);
    const CpOptions base{.max_seqlen = 3000, .chunk_len = 1024, .wgmma_maps = false};
    CpOptions wg = base;
    wg.wgmma_maps = true;
    const auto mma = run_stages(p, d, base);
    const auto wgmma = run_stages(p, d, wg);
    const auto& plan = mma.view.plan;
    const double em = rel_l2_rows(wgmma.m, mma.m, p, plan.maps_per_seq(), plan.map_len(), D * D);
    const double eb = rel_l2_rows(wgmma.b, mma.b, p, plan.maps_per_seq(), plan.map_len(), D * D);
    std::printf("  variant %d: wgmma vs mma.sync maps rel L2: M %.2e  B %.2e\n", variant, em, eb);
    EXPECT_LT(em, 1e-5) << variant;
    EXPECT_LT(eb, 1e-5) << variant;
  }
}

// Stage 3 with 8, 16 and 32 rows per CTA (CpOptions::fixup_rows): every element is the same fmaf
// chain, so the chunk-entry and final states agree bit for bit; map pieces, a pool state with a
// negative slot case covered by the problem's ragged lengths, and the stage checks for each.
TEST_F(GdnCpGpu, FixupRowGroupsGiveTheSameBits) {
  Problem p({1, 65, 700, 1500, 0, 833}, 2, 2, 4, 0.99, 1.0, 91);
  p.pool_initial_state(92);
  DeviceProblem d(p);
  const auto rows8 = run_stages(p, d, {.max_seqlen = 1500, .chunk_len = 256, .map_splits = 2, .fixup_rows = 8});
  const auto rows16 = run_stages(p, d, {.max_seqlen = 1500, .chunk_len = 256, .map_splits = 2, .fixup_rows = 16});
  const auto rows32 = run_stages(p, d, {.max_seqlen = 1500, .chunk_len = 256, .map_splits = 2, .fixup_rows = 32});
  auto same_bits = [](const std::vector<double>& x, const std::vector<double>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
  };
  EXPECT_TRUE(same_bits(rows16.states, rows32.states));
  EXPECT_TRUE(same_bits(rows16.finals, rows32.finals));
  EXPECT_TRUE(same_bits(rows8.states, rows32.states));
  EXPECT_TRUE(same_bits(rows8.finals, rows32.finals));
  for (int rows : {8, 16, 32}) {
    Problem q({300, 1000, 129}, 4, 1, 1, 0.02, 0.1, 93, DType::kFloat16);
    q.packed_initial_state(94);
    check_each_stage_and_end_to_end(q, {.max_seqlen = 1000, .chunk_len = 128, .fixup_rows = rows});
  }
}

TEST_F(GdnCpGpu, LongSequencesGatesVeryNearOneChunkRule) {
  Problem p({9999, 65530}, 1, 1, 1, 0.9995, 1.0, 31);
  check_each_stage_and_end_to_end(p, {.max_seqlen = 65530});
}

TEST_F(GdnCpGpu, ConcurrentStreamsEqualSequentialRuns) {
  Problem p1({3000, 500}, 2, 2, 2, 0.99, 1.0, 41), p2({2000, 2500}, 2, 2, 2, 0.9, 1.0, 42);
  DeviceProblem d1(p1), d2(p2);
  const CpOptions options{.max_seqlen = 3000, .chunk_len = 512};
  const std::size_t elems = 2 * 2 * D * D;
  float *f1, *f2;
  FASTINFER_CUDA_CHECK(cudaMalloc(&f1, elems * 4));
  FASTINFER_CUDA_CHECK(cudaMalloc(&f2, elems * 4));
  cudaStream_t s1, s2;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  gdn::detail::run_cp_stages(d1.args, {Device::cuda(0), s1}, options, f1);
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s1));
  gdn::detail::run_cp_stages(d2.args, {Device::cuda(0), s1}, options, f2);
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s1));
  const auto seq1 = download(f1, elems), seq2 = download(f2, elems);
  FASTINFER_CUDA_CHECK(cudaMemset(f1, 0xff, elems * 4));
  FASTINFER_CUDA_CHECK(cudaMemset(f2, 0xff, elems * 4));
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  for (int rep = 0; rep < 3; ++rep) {  // interleaved launches on two streams
    gdn::detail::run_cp_stages(d1.args, {Device::cuda(0), s1}, options, f1);
    gdn::detail::run_cp_stages(d2.args, {Device::cuda(0), s2}, options, f2);
  }
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(download(f1, elems), seq1);
  EXPECT_EQ(download(f2, elems), seq2);
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(s1));
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(s2));
  FASTINFER_CUDA_CHECK(cudaFree(f1));
  FASTINFER_CUDA_CHECK(cudaFree(f2));
}

TEST_F(GdnCpGpu, GraphReplayWithNewInputsEqualsEager) {
  Problem p({1200, 700}, 2, 2, 2, 0.99, 1.0, 51), fresh({1200, 700}, 2, 2, 2, 0.95, 1.0, 52);
  DeviceProblem d(p);
  const CpOptions options{.max_seqlen = 1200, .chunk_len = 256};
  const std::size_t elems = 2 * 2 * D * D;
  float* f;
  FASTINFER_CUDA_CHECK(cudaMalloc(&f, elems * 4));
  cudaStream_t s;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const ExecContext ctx{Device::cuda(0), s};
  gdn::detail::run_cp_stages(d.args, ctx, options, f);  // warm-up: workspace and kernel attributes
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  gdn::detail::run_cp_stages(d.args, ctx, options, f);
  FASTINFER_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  FASTINFER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  // New values in the same buffers, then replay.
  d.k.upload(fresh.k);
  d.v.upload(fresh.v);
  d.alpha.upload(fresh.alpha);
  d.beta.upload(fresh.beta);
  FASTINFER_CUDA_CHECK(cudaMemset(f, 0xff, elems * 4));
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  FASTINFER_CUDA_CHECK(cudaGraphLaunch(exec, s));
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));
  const auto replayed = download(f, elems);
  FASTINFER_CUDA_CHECK(cudaMemset(f, 0xff, elems * 4));
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  gdn::detail::run_cp_stages(d.args, ctx, options, f);
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));
  EXPECT_EQ(replayed, download(f, elems));
  std::vector<double> serial_chunk, serial_final;
  serial_states(fresh, 256, 5, serial_chunk, serial_final);
  EXPECT_LT(rel_l2(replayed, serial_final), 2e-2);
  FASTINFER_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FASTINFER_CUDA_CHECK(cudaGraphDestroy(graph));
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(s));
  FASTINFER_CUDA_CHECK(cudaFree(f));
}

TEST_F(GdnCpGpu, ProgrammaticLaunchOffGivesTheSameResults) {
  Problem p({2000}, 1, 1, 2, 0.99, 1.0, 61);
  DeviceProblem d(p);
  const auto with = run_stages(p, d, {.max_seqlen = 2000, .chunk_len = 512, .programmatic_launch = true});
  const auto without = run_stages(p, d, {.max_seqlen = 2000, .chunk_len = 512, .programmatic_launch = false});
  EXPECT_EQ(with.finals, without.finals);
}

// Stage 2 with the next block prefetched (cp.async behind the current block) computes exactly the
// same maps: ragged lengths (partial last blocks), no alpha / pool state and the plain variant.
TEST_F(GdnCpGpu, PrefetchingChunkMapsGiveTheSameBits) {
  for (int variant = 0; variant < 4; ++variant) {  // 0, 1: the wgmma kernel, 2, 3: mma.sync
    Problem p({2000, 77, 0, 1100}, 2, 2, 4, 0.99, 1.0, 71 + variant, variant % 2 ? DType::kFloat16 : DType::kBFloat16);
    if (variant % 2) p.pool_initial_state(73), p.args.alpha.reset();
    DeviceProblem d(p);
    const bool wgmma = variant < 2;
    const auto plain = run_stages(p, d, {.max_seqlen = 2000, .chunk_len = 320, .prefetch_blocks = false, .wgmma_maps = wgmma});
    const auto prefetched = run_stages(p, d, {.max_seqlen = 2000, .chunk_len = 320, .prefetch_blocks = true, .wgmma_maps = wgmma});
    // Bit comparison: rows no stage writes (chunks past a sequence's end, the empty sequence's
    // final state) hold the same NaN poison in both runs, which == would call different.
    auto same_bits = [](const std::vector<double>& x, const std::vector<double>& y) {
      return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
    };
    EXPECT_TRUE(same_bits(plain.m, prefetched.m)) << variant;
    EXPECT_TRUE(same_bits(plain.b, prefetched.b)) << variant;
    EXPECT_TRUE(same_bits(plain.finals, prefetched.finals)) << variant;
    double norm = 0;
    for (double x : prefetched.m) norm += std::isfinite(x) ? x * x : 0;
    EXPECT_GT(norm, 1.0);
  }
}

// Stage 2 on stage 1's ready tiles (CpOptions::ready_tiles, the default) against the wgmma kernel
// building its operands from Tinv: the same operands, so the same maps bit for bit. Ragged lengths
// (partial blocks), map pieces, state heads sharing a k head in stage-1 CTAs of 1, 2 and 4 heads,
// no alpha / pool state, with and without prefetch, both input types; and the stage checks on the ready tiles without final states' pieces (run_stages asks for
// final states, so every chunk is mapped there).
TEST_F(GdnCpGpu, ReadyTileChunkMapsGiveTheSameBits) {
  auto same_bits = [](const std::vector<double>& x, const std::vector<double>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
  };
  // {Hq, Hk, Hv}: stage 1 with two heads per CTA, four, and one (Hsab 6 = 3 Hk: the CTA of each
  // k head's first state head writes its K tile).
  const std::int64_t heads[3][3] = {{2, 2, 4}, {4, 1, 1}, {2, 2, 6}};
  for (int variant = 0; variant < 6; ++variant) {
    const bool fp16 = variant % 2 == 1;
    const std::int64_t* hs = heads[variant / 2];
    Problem p({2000, 77, 0, 1100, 640}, hs[0], hs[1], hs[2], 0.99, 1.0, 191 + variant, fp16 ? DType::kFloat16 : DType::kBFloat16);
    if (fp16) p.pool_initial_state(195), p.args.alpha.reset();
    DeviceProblem d(p);
    for (const bool prefetch : {false, true}) {
      const CpOptions built{.max_seqlen = 2000, .chunk_len = 640, .prefetch_blocks = prefetch, .ready_tiles = 0, .map_splits = 2};
      const auto want = run_stages(p, d, built);
      CpOptions ready = built;
      ready.ready_tiles = 1;
      const auto got = run_stages(p, d, ready);
      EXPECT_TRUE(same_bits(want.m, got.m)) << variant << " prefetch " << prefetch;
      EXPECT_TRUE(same_bits(want.b, got.b)) << variant << " prefetch " << prefetch;
      EXPECT_TRUE(same_bits(want.finals, got.finals)) << variant << " prefetch " << prefetch;
      double norm = 0;
      for (double x : got.b) norm += std::isfinite(x) ? x * x : 0;
      EXPECT_GT(norm, 1.0);
    }
  }
  Problem q({1, 65, 700, 1500, 0, 833}, 2, 2, 4, 0.99, 1.0, 199);
  q.packed_initial_state(200);
  check_each_stage_and_end_to_end(q, {.max_seqlen = 1500, .chunk_len = 768, .ready_tiles = 1, .map_splits = 3});
}

// Without final states (the pipeline) stage 1 leaves the Tinv of each sequence's last chunk
// unwritten (stage 2 reads none of it) and writes every other block's exactly as with them (the
// 16x16 blocks on or below the diagonal, CpOptions::lower_inverse_blocks).
TEST_F(GdnCpGpu, WithoutFinalStatesStageOneSkipsOnlyTheLastChunksInverses) {
  Problem p({1500, 77, 0, 700, 256}, 2, 2, 4, 0.99, 1.0, 181);
  DeviceProblem d(p);
  // Without the ready tiles: with them stage 1 writes no Tinv at all without final states.
  const CpOptions options{.max_seqlen = 1500, .chunk_len = 256, .ready_tiles = 0};
  const auto full = run_stages(p, d, options);  // with final states: every block
  const auto& plan = full.view.plan;
  const std::size_t inv = static_cast<std::size_t>(plan.num_seqs * plan.blocks_per_seq() * p.hsab * 64 * 64);
  FASTINFER_CUDA_CHECK(cudaMemset(const_cast<float*>(full.view.block_inverse), 0xff, inv * 4));
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  const auto view = gdn::detail::run_cp_stages(d.args, {Device::cuda(0), nullptr}, options, nullptr);
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  ASSERT_EQ(view.block_inverse, full.view.block_inverse);
  const auto skipped = download(view.block_inverse, inv);
  int written = 0, left = 0, bad = 0;
  for (std::size_t n = 0; n < p.lengths.size(); ++n)
    for (std::int64_t b = 0; b < plan.blocks_per_seq(); ++b) {
      const std::int64_t start = b * 64, len = p.lengths[n];
      if (start >= len) continue;  // no block: stage 1 writes nothing in either run
      const bool last_chunk = (start / plan.chunk_len + 1) * plan.chunk_len >= len;
      for (std::int64_t h = 0; h < p.hsab; ++h) {
        const std::size_t at = ((n * plan.blocks_per_seq() + b) * p.hsab + h) * 64 * 64;
        for (std::size_t e = at; e < at + 64 * 64; ++e) {
          if ((e % 64) / 16 > ((e / 64) % 64) / 16) continue;  // above the diagonal blocks: not written
          const bool ok = last_chunk ? std::isnan(skipped[e])
                                     : std::memcmp(&skipped[e], &full.inverse[e], sizeof(double)) == 0;
          bad += ok ? 0 : 1;
        }
        (last_chunk ? left : written) += 1;
      }
    }
  std::printf("  blocks x heads written %d, left unwritten %d, wrong elements %d\n", written, left, bad);
  EXPECT_EQ(bad, 0);
  EXPECT_GT(written, 0);
  EXPECT_GT(left, 0);
}

}  // namespace
}  // namespace fastinfer
