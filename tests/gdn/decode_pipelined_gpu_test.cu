// gdn::decode on the GPU, the resident (pipelined and tensor-core) kernels' work order: static
// shares of the dynamic order, every dynamic tactic on a small batch (racecheck-sized), the filled
// ring at start, programmatic-launch chains, and the per-stream work counter across graph replays
// and eager calls. Same conventions as decode_gpu_test.cu (NaN-poisoned outputs and spare slots).
#include "decode_gpu_util.h"

namespace fastinfer {
namespace {

using namespace decode_gpu_test;

// The dynamic resident kernels with the static shares the gdn_decode_tail benchmark sweeps (session
// 8: DecodeParams::static_steps, the claimed-tail tactics' launch field): none but the prefetched
// items, most of the even share, more than it (every item static), with padding and out of place;
// the tensor-core kernel's state-major order claims whole states (both tiles back to back). One
// test per pool dtype.
void static_shares_match_reference(DType state) {
  int tested = 0;
  for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
    if (!t.dynamic_items) continue;
    const auto runner = gdn::decode_runner({DType::kBFloat16, state, t});
    for (int steps : {1, 4, 40}) {
      SCOPED_TRACE(tactic_name(state, t) + " static steps " + std::to_string(steps));
      DecodeShape s = shape(24, 2, 16, 32, state);  // 768 tiles: ~6 per resident CTA (~2 with 3 CTAs per SM)
      s.out_of_place = true; s.padded = 3;
      check_against_reference(make_decode_problem(s, 6300 + steps + t.warps + 17 * t.chunked), runner.get(), true,
                              [&](gdn::DecodeParams& x) { x.static_steps = steps; });
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
    }
    ++tested;
  }
  EXPECT_GT(tested, 0) << "no dynamic work-order tactic instantiated";
}

TEST_F(GdnDecodeGpuExtra, StaticSharesMatchReferenceF32) { static_shares_match_reference(DType::kFloat32); }
TEST_F(GdnDecodeGpuExtra, StaticSharesMatchReferenceBf16) { static_shares_match_reference(DType::kBFloat16); }

// Every dynamic tactic once, as launched, on the smallest batch whose CTAs still claim items (640
// states: ~5 tiles per pipelined CTA, ~1.6 states per tensor-core CTA): short enough to run under
// compute-sanitizer --tool racecheck.
TEST_F(GdnDecodeGpuExtra, DynamicTacticsOnASmallBatch) {
  int tested = 0;
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
      if (!t.dynamic_items) continue;
      SCOPED_TRACE(tactic_name(state, t));
      DecodeShape s = shape(40, 1, 8, 16, state);
      s.padded = 2;
      check_against_reference(make_decode_problem(s, 6500 + t.warps + 17 * t.chunked), gdn::decode_runner({DType::kBFloat16, state, t}).get());
      ++tested;
      if (HasFatalFailure() || HasFailure()) return;
    }
  EXPECT_GT(tested, 0) << "no dynamic work-order tactic instantiated";
}

// The same with three draft tokens (session 9): the producer publishes every token's gates, so
// racecheck also sees the stage hand-off of T > 1 (the racecheck job runs both tests).
TEST_F(GdnDecodeGpuExtra, DynamicTacticsOnASmallBatchMtp) {
  int tested = 0;
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
      if (!t.dynamic_items) continue;
      SCOPED_TRACE(tactic_name(state, t));
      DecodeShape s = shape(40, 3, 8, 16, state);
      s.padded = 2; s.out_of_place = true;
      check_against_reference(make_decode_problem(s, 6700 + t.warps + 17 * t.chunked), gdn::decode_runner({DType::kBFloat16, state, t}).get());
      ++tested;
      if (HasFatalFailure() || HasFailure()) return;
    }
  EXPECT_GT(tested, 0) << "no dynamic work-order tactic instantiated";
}

// The pipelined kernels with the ring filled at the start (session 9, DecodeParams::fill_ring_at_start:
// the first kStages items' metadata loaded at entry), with and without PDL: fewer items than
// resident CTAs (the start ends early), a few items per CTA (the start hands over to the
// two-ahead ring; the dynamic orders claim after it), padding and out of place.
TEST_F(GdnDecodeGpuExtra, FilledRingAtStartMatchesReference) {
  int tested = 0;
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
      if (!t.pipelined() || t.chunked) continue;
      const auto runner = gdn::decode_runner({DType::kBFloat16, state, t});
      for (int B : {2, 40}) {
        SCOPED_TRACE(tactic_name(state, t) + " B " + std::to_string(B));
        DecodeShape s = shape(B, B == 2 ? 1 : 3, 8, 16, state);
        s.padded = B == 2 ? 1 : 3; s.out_of_place = B > 2;
        check_against_reference(make_decode_problem(s, 7100 + B + t.warps + 5 * t.dynamic_items), runner.get(), true,
                                [&](gdn::DecodeParams& x) { x.fill_ring_at_start = true; x.programmatic_launch = B > 2; });
        if (HasFatalFailure() || HasFailure()) return;
      }
      ++tested;
    }
  EXPECT_GT(tested, 0) << "no pipelined tactic instantiated";
}

// The ring filled at the start on a batch small enough for racecheck (static and claimed-tail
// order, both pools; 640 states: ~5 items per CTA, so the start hands over to the ring and every
// stage is reused).
TEST_F(GdnDecodeGpuExtra, FilledRingOnASmallBatch) {
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (bool tail : {false, true}) {
      gdn::DecodeTactic t{8, 4, 8, 1};
      t.dynamic_items = t.claimed_tail = tail;
      SCOPED_TRACE(tactic_name(state, t));
      DecodeShape s = shape(40, 2, 8, 16, state);
      s.padded = 2;
      check_against_reference(make_decode_problem(s, 7300 + tail), gdn::decode_runner({DType::kBFloat16, state, t}).get(), true,
                              [](gdn::DecodeParams& x) { x.fill_ring_at_start = true; });
      if (HasFatalFailure() || HasFailure()) return;
    }
}

// Programmatic dependent launch (session 9, DecodeParams::programmatic_launch) of every resident
// tactic: in-place calls back to back on a non-blocking stream, each reading the pool the previous
// one wrote (two eager launches, then a CUDA graph of two captured launches), against the
// reference run four times. A kernel that read its inputs before the previous grid's writes were
// visible, or a claim counter not yet reset, would show as a mismatch or NaN.
TEST_F(GdnDecodeGpuExtra, ProgrammaticLaunchChainsInPlaceCalls) {
  int tested = 0;
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
      if (!t.pipelined()) continue;
      SCOPED_TRACE(tactic_name(state, t));
      DecodeShape s = shape(40, 2, 8, 16, state);  // 640 states: several items per resident CTA
      s.padded = 2;
      const DecodeProblem p = make_decode_problem(s, 6900 + t.warps + 17 * t.chunked + 3 * t.dynamic_items);
      DeviceProblem dev(p);
      cudaStream_t stream;
      CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      const auto runner = gdn::decode_runner({DType::kBFloat16, state, t});
      gdn::DecodeParams params = gdn::make_decode_params(dev.args);
      params.programmatic_launch = true;
      for (int call = 0; call < 2; ++call) runner->run(params, stream);
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      runner->run(params, stream);
      runner->run(params, stream);
      CUDA_OK(cudaStreamEndCapture(stream, &graph));
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      CUDA_OK(cudaGraphLaunch(exec, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(stream);
      DecodeProblem gpu = p;
      dev.download_into(gpu);
      DecodeProblem cpu = p;
      for (int call = 0; call < 4; ++call) gdn::decode(cpu.args());
      expect_close("output", gpu.output, cpu.output, 0, cpu.output.numel(), tolerance_for(DType::kBFloat16));
      expect_close("state", gpu.state, cpu.state, 0, cpu.state.numel(), tolerance_for(state));
      ++tested;
      if (HasFatalFailure() || HasFailure()) return;
    }
  EXPECT_GT(tested, 0) << "no resident tactic instantiated";
}

// The dynamic work order (tiles claimed from a per-stream counter that every launch leaves zero):
// on a non-blocking stream, the first call (counter created) against the reference, then a CUDA
// graph of the launch replayed three times and eager calls on the same stream in between, each
// bit-identical to the first (out of place and verification only, so every run sees the same
// input). A counter left non-zero would skip tiles (NaN-poisoned outputs stay) or repeat them.
// One test per pool dtype.
void dynamic_work_order_replays_and_repeats(DType state) {
  int tested = 0;
  {
    for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
      if (!t.dynamic_items) continue;
      SCOPED_TRACE(tactic_name(state, t));
      DecodeShape s = shape(40, 2, 16, 32, state);  // 1280 tiles: ~10 per resident CTA
      s.out_of_place = true; s.padded = 5;
      const DecodeProblem p = make_decode_problem(s, 6100 + (state == DType::kFloat32) + 2 * t.warps);
      DeviceProblem dev(p);
      cudaStream_t stream;
      CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      const auto runner = gdn::decode_runner({DType::kBFloat16, state, t});
      const gdn::DecodeParams params = gdn::make_decode_params(dev.args);
      runner->run(params, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      DecodeProblem first = p;
      dev.download_into(first);
      {
        DecodeProblem cpu = p;
        gdn::decode(cpu.args());
        expect_close("output", first.output, cpu.output, 0, cpu.output.numel(), tolerance_for(DType::kBFloat16));
        expect_close("state", first.state, cpu.state, 0, cpu.state.numel(), tolerance_for(state));
      }
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      runner->run(params, stream);
      CUDA_OK(cudaStreamEndCapture(stream, &graph));
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      for (int run = 0; run < 6; ++run) {
        SCOPED_TRACE("run " + std::to_string(run) + (run % 2 ? " eager" : " graph"));
        CUDA_OK(cudaMemsetAsync(dev.output.ptr, 0xff, p.output.nbytes(), stream));  // NaN poison
        if (run % 2) runner->run(params, stream);
        else CUDA_OK(cudaGraphLaunch(exec, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        DecodeProblem again = p;
        dev.download_into(again);
        EXPECT_TRUE(same_bytes(first.output, again.output, 0, p.output.numel())) << "outputs differ";
        EXPECT_TRUE(same_bytes(first.state, again.state, 0, p.state.numel())) << "states differ";
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(stream);
      ++tested;
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(tested, 0) << "no dynamic work-order tactic instantiated";
}

TEST_F(GdnDecodeGpuExtra, DynamicWorkOrderReplaysAndRepeatsF32) { dynamic_work_order_replays_and_repeats(DType::kFloat32); }
TEST_F(GdnDecodeGpuExtra, DynamicWorkOrderReplaysAndRepeatsBf16) { dynamic_work_order_replays_and_repeats(DType::kBFloat16); }

}  // namespace
}  // namespace fastinfer
