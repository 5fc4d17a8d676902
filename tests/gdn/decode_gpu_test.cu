// gdn::decode on the GPU against the fp64 CPU reference: batch 1..512, T 1..4, GVA 16/32, 16/64
// and equal heads, fp32 and bf16 pools, padding, in-place and out-of-place slots,
// disable_state_update, intermediate states, fp16 activations, extreme gates, strided inputs,
// every tactic (the pipelined ones also on batches much larger than the resident CTAs), CUDA-graph
// capture. Outputs and intermediates are poisoned with NaN and unused pool slots with NaN; slots
// nobody writes must come back bit-identical.
#include "decode_gpu_util.h"

namespace fastinfer {
namespace {

using namespace decode_gpu_test;

struct GpuCase {
  const char* name;
  DecodeShape shape;
  float scale = 1.0f;
  bool l2norm = true;
  bool disable_update = false;
};


std::vector<GpuCase> gpu_cases() {
  const DType f32 = DType::kFloat32, bf16 = DType::kBFloat16;
  std::vector<GpuCase> c;
  c.push_back({"B1_T1_16x32_f32", shape(1, 1, 16, 32, f32)});
  { GpuCase x{"B1_T4_16x64_bf16_outofplace_inter", shape(1, 4, 16, 64, bf16)};
    x.shape.out_of_place = true; x.shape.with_intermediate = true; c.push_back(x); }
  { GpuCase x{"B7_T2_16x16_f32_padded_interbf16", shape(7, 2, 16, 16, f32)};
    x.shape.padded = 2; x.shape.with_intermediate = true; x.shape.intermediate = bf16; c.push_back(x); }
  { GpuCase x{"B7_T4_32x32_bf16_verify_inter", shape(7, 4, 32, 32, bf16)};
    x.disable_update = true; x.shape.with_intermediate = true; c.push_back(x); }
  { GpuCase x{"B7_T1_16x32_bf16_defaultscale", shape(7, 1, 16, 32, bf16)}; x.scale = 0.0f; c.push_back(x); }
  { GpuCase x{"B32_T1_16x64_bf16_outofplace_padded", shape(32, 1, 16, 64, bf16)};
    x.shape.out_of_place = true; x.shape.padded = 3; c.push_back(x); }
  { GpuCase x{"B32_T2_16x32_f32_fp16act", shape(32, 2, 16, 32, f32)};
    x.shape.act = DType::kFloat16; x.shape.gate = DType::kFloat16; c.push_back(x); }
  { GpuCase x{"B32_T4_16x32_f32_outofplace_inter", shape(32, 4, 16, 32, f32)};
    x.shape.out_of_place = true; x.shape.with_intermediate = true; c.push_back(x); }
  { GpuCase x{"B32_T2_16x64_bf16_bf16gates", shape(32, 2, 16, 64, bf16)};
    x.shape.gate = bf16; x.shape.head_gate = bf16; c.push_back(x); }
  { GpuCase x{"B512_T1_16x32_f32_padded", shape(512, 1, 16, 32, f32)}; x.shape.padded = 5; c.push_back(x); }
  { GpuCase x{"B512_T4_16x32_bf16", shape(512, 4, 16, 32, bf16)}; c.push_back(x); }
  // One token on a bf16 pool from 32 states per SM: the heuristic's 16-warp pipelined tactic.
  { GpuCase x{"B512_T1_16x32_bf16_outofplace", shape(512, 1, 16, 32, bf16)}; x.shape.out_of_place = true; c.push_back(x); }
  { GpuCase x{"B512_T2_16x32_bf16_verify", shape(512, 2, 16, 32, bf16)}; x.disable_update = true; c.push_back(x); }
  return c;
}

class GdnDecodeGpu : public testing::GpuTest, public ::testing::WithParamInterface<GpuCase> {};

TEST_P(GdnDecodeGpu, MatchesFp64Reference) {
  const GpuCase& c = GetParam();
  DecodeProblem p = make_decode_problem(c.shape, 1234 + c.shape.batch * 7 + c.shape.tokens);
  p.scale = c.scale;
  p.use_qk_l2norm = c.l2norm;
  p.disable_state_update = c.disable_update;
  check_against_reference(std::move(p));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GdnDecodeGpu, ::testing::ValuesIn(gpu_cases()),
                         [](const ::testing::TestParamInfo<GpuCase>& info) { return std::string(info.param.name); });

using GdnDecodeGpuExtra = testing::GpuTest;

TEST_F(GdnDecodeGpuExtra, ExtremeGatesWithoutNormalisation) {
  // alpha near 0 and near 1, beta near 0 and near 1, softplus on both sides of its threshold;
  // q/k unnormalised (k scaled to keep the recurrence bounded).
  DecodeShape s = shape(7, 4, 16, 32, DType::kFloat32);
  s.with_intermediate = true;
  DecodeProblem p = make_decode_problem(s, 77);
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> pick(0, 3);
  const double a_values[4] = {-30.0, -1.0, 19.5, 35.0}, b_values[4] = {-12.0, 0.0, 3.0, 12.0};
  for (std::int64_t i = 0; i < p.a.numel(); ++i) {
    p.a.set(i, a_values[pick(rng)]);
    p.b.set(i, b_values[pick(rng)]);
  }
  for (std::int64_t h = 0; h < 32; ++h) p.A_log.set(h, h % 2 ? -8.0 : 1.5);  // exp(A_log) tiny / large
  for (std::int64_t i = 0; i < p.k.numel(); ++i) p.k.set(i, p.k.get(i) * 0.12);
  p.use_qk_l2norm = false;
  p.scale = 0.3f;
  check_against_reference(std::move(p));
}

TEST_F(GdnDecodeGpuExtra, StridedActivationsAndGates) {
  // q, k, v as head slices of one fused [B, T, 2H + HV, 128] tensor; a, b as [T, B, HV] transposed.
  DecodeShape s = shape(9, 2, 4, 8, DType::kBFloat16);
  DecodeProblem p = make_decode_problem(s, 78);
  const std::int64_t B = 9, T = 2, H = 4, HV = 8, W = 2 * H + HV;
  ref::HostTensor fused(DType::kBFloat16, {B, T, W, D});
  ref::HostTensor gates(DType::kFloat32, {2, T, B, HV});
  for (std::int64_t i = 0; i < B; ++i)
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t e = 0; e < H * D; ++e) {
        fused.set((i * T + t) * W * D + e, p.q.get((i * T + t) * H * D + e));
        fused.set((i * T + t) * W * D + H * D + e, p.k.get((i * T + t) * H * D + e));
      }
      for (std::int64_t e = 0; e < HV * D; ++e) fused.set((i * T + t) * W * D + 2 * H * D + e, p.v.get((i * T + t) * HV * D + e));
      for (std::int64_t h = 0; h < HV; ++h) {
        gates.set(((0 * T + t) * B + i) * HV + h, p.a.get((i * T + t) * HV + h));
        gates.set(((1 * T + t) * B + i) * HV + h, p.b.get((i * T + t) * HV + h));
      }
    }
  DeviceTensor dfused(fused), dgates(gates);
  DeviceProblem dev(p);
  gdn::DecodeArgs args = dev.args;
  auto* f = static_cast<std::uint16_t*>(dfused.ptr);
  const Device gpu = Device::cuda(0);
  args.q = TensorView::strided(f, DType::kBFloat16, {B, T, H, D}, {T * W * D, W * D, D, 1}, gpu);
  args.k = TensorView::strided(f + H * D, DType::kBFloat16, {B, T, H, D}, {T * W * D, W * D, D, 1}, gpu);
  args.v = TensorView::strided(f + 2 * H * D, DType::kBFloat16, {B, T, HV, D}, {T * W * D, W * D, D, 1}, gpu);
  auto* g = static_cast<float*>(dgates.ptr);
  args.a = TensorView::strided(g, DType::kFloat32, {B, T, HV}, {HV, B * HV, 1}, gpu);
  args.b = TensorView::strided(g + T * B * HV, DType::kFloat32, {B, T, HV}, {HV, B * HV, 1}, gpu);
  gdn::decode(args);
  CUDA_OK(cudaDeviceSynchronize());
  DecodeProblem got = p;
  dev.download_into(got);
  DecodeProblem cpu = p;
  gdn::decode(cpu.args());
  expect_close("output", got.output, cpu.output, 0, cpu.output.numel(), tolerance_for(DType::kBFloat16));
  expect_close("state", got.state, cpu.state, 0, cpu.state.numel(), tolerance_for(DType::kBFloat16));
}


TEST_F(GdnDecodeGpuExtra, EveryTacticMatchesReference) {
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
      const gdn::DecodeConfig config{DType::kBFloat16, state, t};
      ASSERT_TRUE(gdn::DecodeRunner::can_implement(config));
      SCOPED_TRACE(tactic_name(state, t));
      DecodeShape s = shape(5, 3, 2, 4, state);
      s.padded = 1; s.out_of_place = true; s.with_intermediate = true;
      check_against_reference(make_decode_problem(s, 900 + t.lanes_per_row * 100 + t.rows_per_thread * 10 + t.warps + t.ctas_per_sm * 7),
                              gdn::decode_runner(config).get());
      if (HasFatalFailure() || HasFailure()) return;
    }
}

// Both decay paths of token_step (lazy: the default; eager: what it falls back to for tiny decays)
// on MTP windows with the kernels' two families.
TEST_F(GdnDecodeGpuExtra, LazyAndEagerDecayMatchReference) {
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (const gdn::DecodeTactic& t : {gdn::DecodeTactic{8, 4, 4, 0}, gdn::DecodeTactic{8, 4, 8, 1}})
      for (bool lazy : {true, false}) {
        SCOPED_TRACE(tactic_name(state, t) + (lazy ? " lazy" : " eager"));
        DecodeShape s = shape(20, 4, 8, 16, state);
        s.with_intermediate = true; s.padded = 2; s.out_of_place = true;
        check_against_reference(make_decode_problem(s, 3100 + lazy), gdn::decode_runner({DType::kBFloat16, state, t}).get(), lazy);
        if (HasFatalFailure() || HasFailure()) return;
      }
}

// The small-batch register variant (every slot-independent load before the slot, per-warp token
// normalisation, no CTA barrier): every window it holds (1..4 tokens) and the fallback beyond it,
// B = 1 with GVA 16/32, a padded out-of-place batch, verification with intermediate states, fp16
// activations and gates, decays that underflow, no normalisation with eager decay.
TEST_F(GdnDecodeGpuExtra, SmallBatchTacticsOnEveryWindow) {
  int tested = 0;
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
      if (!t.small_batch) continue;
      SCOPED_TRACE(tactic_name(state, t));
      const std::uint64_t seed = 5000 + t.lanes_per_row * 100 + t.rows_per_thread * 10 + t.warps + (state == DType::kFloat32);
      const auto runner = gdn::decode_runner({DType::kBFloat16, state, t});
      for (int T : {1, 2, 4, 5}) {  // 5: beyond the registers' window, the register kernel
        SCOPED_TRACE("T " + std::to_string(T));
        check_against_reference(make_decode_problem(shape(1, T, 16, 32, state), seed + T), runner.get());
        DecodeShape s = shape(6, T, 4, 8, state);
        s.padded = 2; s.out_of_place = true;
        check_against_reference(make_decode_problem(s, seed + 10 + T), runner.get());
      }
      {  // verification only with bf16 intermediate states, T = 4
        DecodeShape s = shape(3, 4, 2, 4, state);
        s.with_intermediate = true; s.intermediate = DType::kBFloat16; s.padded = 1;
        DecodeProblem p = make_decode_problem(s, seed + 20);
        p.disable_state_update = true;
        check_against_reference(std::move(p), runner.get());
      }
      {  // fp16 activations and gates, fp32 intermediate states, T = 3, equal heads
        DecodeShape s = shape(4, 3, 4, 4, state);
        s.act = DType::kFloat16; s.gate = DType::kFloat16; s.with_intermediate = true;
        check_against_reference(make_decode_problem(s, seed + 21),
                                gdn::decode_runner({DType::kFloat16, state, t}).get());
      }
      {  // T = 3, gates whose decay products underflow and betas at 0 and 1, out of place, padding
        DecodeShape s = shape(5, 3, 4, 8, state);
        s.out_of_place = true; s.padded = 1;
        DecodeProblem p = make_decode_problem(s, seed + 23);
        std::mt19937_64 rng(seed);
        std::uniform_int_distribution<int> pick(0, 3);
        const double a_values[4] = {-30.0, -1.0, 19.5, 35.0}, b_values[4] = {-12.0, 0.0, 3.0, 12.0};
        for (std::int64_t i = 0; i < p.a.numel(); ++i) p.a.set(i, a_values[pick(rng)]), p.b.set(i, b_values[pick(rng)]);
        for (std::int64_t h = 0; h < 8; ++h) p.A_log.set(h, h % 2 ? -8.0 : 1.5);
        check_against_reference(std::move(p), runner.get());
      }
      {  // no normalisation, explicit scale, eager decay
        DecodeShape s = shape(2, 4, 2, 4, state);
        DecodeProblem p = make_decode_problem(s, seed + 22);
        p.use_qk_l2norm = false; p.scale = 0.05f;
        for (std::int64_t i = 0; i < p.q.numel(); ++i) p.q.set(i, p.q.get(i) * 0.2), p.k.set(i, p.k.get(i) * 0.2);
        check_against_reference(std::move(p), runner.get(), /*lazy_decay=*/false);
      }
      ++tested;
      if (HasFatalFailure() || HasFailure()) return;
    }
  EXPECT_GT(tested, 0) << "no small-batch tactic instantiated";
}

// The pipelined kernel on batches with many more tiles than resident CTAs (every stage of the ring
// reused many times, both barrier phases), padded sequences at random positions (negative
// indices), in-place and out-of-place pools, verification only, fp16 activations, and the longest
// staged MTP window (8 tokens) next to one that falls back to the register kernel (9).
// One test per pool dtype and quarter of its pipelined tactics (`quarter`: every fourth one; the
// slowest tests of the suite: eight processes can run them side by side).
void pipelined_tactics_on_large_batches(DType state, int quarter) {
  int tested = 0, pipelined = 0;
  for (const gdn::DecodeTactic& t : gdn::decode_tactics(DType::kBFloat16, state)) {
    {
      if (!t.pipelined() || pipelined++ % 4 != quarter) continue;
      SCOPED_TRACE(tactic_name(state, t));
      const std::uint64_t seed = 2000 + t.rows_per_thread * 10 + t.warps + t.ctas_per_sm * 7 + (state == DType::kFloat32);
      {  // in place, padding, T = 2: 48 x 32 states, >= 11 tiles per resident CTA
        DecodeShape s = shape(48, 2, 16, 32, state);
        s.padded = 9;
        check_against_reference(make_decode_problem(s, seed), gdn::decode_runner({DType::kBFloat16, state, t}).get());
      }
      {  // out of place, T = 1, equal heads
        DecodeShape s = shape(80, 1, 16, 16, state);
        s.out_of_place = true; s.padded = 3;
        check_against_reference(make_decode_problem(s, seed + 1), gdn::decode_runner({DType::kBFloat16, state, t}).get());
      }
      {  // verification only with intermediate states, T = 4
        DecodeShape s = shape(9, 4, 4, 8, state);
        s.with_intermediate = true; s.intermediate = DType::kBFloat16; s.padded = 2;
        DecodeProblem p = make_decode_problem(s, seed + 2);
        p.disable_state_update = true;
        check_against_reference(std::move(p), gdn::decode_runner({DType::kBFloat16, state, t}).get());
      }
      {  // fp16 activations and gates, out of place, T = 8 (the longest staged window)
        DecodeShape s = shape(24, 8, 8, 16, state);
        s.act = DType::kFloat16; s.gate = DType::kFloat16; s.out_of_place = true; s.padded = 2;
        check_against_reference(make_decode_problem(s, seed + 3), gdn::decode_runner({DType::kFloat16, state, t}).get());
      }
      {  // T = 9: runs on the register kernel
        DecodeShape s = shape(6, 9, 2, 4, state);
        s.with_intermediate = true; s.padded = 1;
        check_against_reference(make_decode_problem(s, seed + 4), gdn::decode_runner({DType::kBFloat16, state, t}).get());
      }
      ++tested;
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(tested, 0) << "no pipelined tactic instantiated";
}

TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesF32Quarter0) { pipelined_tactics_on_large_batches(DType::kFloat32, 0); }
TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesF32Quarter1) { pipelined_tactics_on_large_batches(DType::kFloat32, 1); }
TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesF32Quarter2) { pipelined_tactics_on_large_batches(DType::kFloat32, 2); }
TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesF32Quarter3) { pipelined_tactics_on_large_batches(DType::kFloat32, 3); }
TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesBf16Quarter0) { pipelined_tactics_on_large_batches(DType::kBFloat16, 0); }
TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesBf16Quarter1) { pipelined_tactics_on_large_batches(DType::kBFloat16, 1); }
TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesBf16Quarter2) { pipelined_tactics_on_large_batches(DType::kBFloat16, 2); }
TEST_F(GdnDecodeGpuExtra, PipelinedTacticsOnLargeBatchesBf16Quarter3) { pipelined_tactics_on_large_batches(DType::kBFloat16, 3); }

// The tensor-core kernel (bf16 pools): gates that underflow the decay products and saturate beta,
// every window length it stages (1..8, fp32 intermediate states), and bit-identical repeats. One
// test per activation dtype, and one for the repeats (session 9: the suite's slowest test split).
void chunked_kernel_gates_and_windows(DType act) {
  gdn::DecodeTactic state_major{4, 2, 4, 3, true};
  state_major.state_major = true;
  for (const gdn::DecodeTactic& chunked : {gdn::DecodeTactic{4, 2, 8, 1, true}, gdn::DecodeTactic{4, 2, 4, 2, true},
                                           gdn::DecodeTactic{4, 2, 4, 3, true}, state_major}) {
    const gdn::DecodeConfig config{act, DType::kBFloat16, chunked};
    ASSERT_TRUE(gdn::DecodeRunner::can_implement(config));
    for (int T : {1, 2, 3, 4, 5, 6, 7, 8}) {
      SCOPED_TRACE("T " + std::to_string(T) + (act == DType::kFloat16 ? " fp16" : " bf16") + " warps " +
                   std::to_string(chunked.warps) + " ctas/SM " + std::to_string(chunked.ctas_per_sm) +
                   (chunked.state_major ? " state-major" : ""));
      DecodeShape s = shape(6, T, 4, 8, DType::kBFloat16);
      s.act = act;
      s.with_intermediate = T % 2 == 1; s.padded = 1; s.out_of_place = T % 3 == 0;
      DecodeProblem p = make_decode_problem(s, 4000 + T);
      if (T >= 4) {  // strong and weak gates: alpha down to 0, beta at 0 and 1
        std::mt19937_64 rng(T);
        std::uniform_int_distribution<int> pick(0, 3);
        const double a_values[4] = {-30.0, -1.0, 19.5, 35.0}, b_values[4] = {-12.0, 0.0, 3.0, 12.0};
        for (std::int64_t i = 0; i < p.a.numel(); ++i) p.a.set(i, a_values[pick(rng)]), p.b.set(i, b_values[pick(rng)]);
        for (std::int64_t h = 0; h < 8; ++h) p.A_log.set(h, h % 2 ? -8.0 : 1.5);
      }
      check_against_reference(p, gdn::decode_runner(config).get());
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
    }
  }
}

TEST_F(GdnDecodeGpuExtra, ChunkedKernelGatesAndWindowsBf16) { chunked_kernel_gates_and_windows(DType::kBFloat16); }
TEST_F(GdnDecodeGpuExtra, ChunkedKernelGatesAndWindowsFp16) { chunked_kernel_gates_and_windows(DType::kFloat16); }

// The same call twice (out of place, so the input stays) gives the same bytes. `variant`: CTAs per
// SM, 4 = three CTAs per SM, state-major. One test per variant (each builds a 330 MB pool).
void chunked_kernel_is_deterministic(int variant) {
  {
    const int ctas_per_sm = std::min(variant, 3);
    SCOPED_TRACE("ctas/SM " + std::to_string(ctas_per_sm) + " variant " + std::to_string(variant));
    DecodeShape s = shape(300, 4, 16, 32, DType::kBFloat16);
    s.out_of_place = true; s.padded = 7;
    const DecodeProblem p = make_decode_problem(s, 4100);
    DeviceProblem dev(p);
    gdn::DecodeTactic tactic{4, 2, 4, ctas_per_sm, true};
    tactic.state_major = variant == 4;
    auto runner = gdn::decode_runner({DType::kBFloat16, DType::kBFloat16, tactic});
    DecodeProblem first = p, second = p;
    runner->run(gdn::make_decode_params(dev.args), nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    dev.download_into(first);
    CUDA_OK(cudaMemset(dev.output.ptr, 0xff, p.output.nbytes()));
    runner->run(gdn::make_decode_params(dev.args), nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    dev.download_into(second);
    EXPECT_TRUE(same_bytes(first.output, second.output, 0, p.output.numel())) << "outputs differ between runs";
    EXPECT_TRUE(same_bytes(first.state, second.state, 0, p.state.numel())) << "states differ between runs";
  }
}

TEST_F(GdnDecodeGpuExtra, ChunkedKernelDeterminismTwoCtas) { chunked_kernel_is_deterministic(2); }
TEST_F(GdnDecodeGpuExtra, ChunkedKernelDeterminismThreeCtas) { chunked_kernel_is_deterministic(3); }
TEST_F(GdnDecodeGpuExtra, ChunkedKernelDeterminismStateMajor) { chunked_kernel_is_deterministic(4); }

// Tune mode on live inputs: every tactic is profiled on a scratch copy of the call's states, so the
// live pool advances exactly once (what the reference computes); the winner is kept for the
// batch's bucket and served to the next call of the bucket without profiling; every tactic id put
// into the cache by hand runs and is right.
TEST_F(GdnDecodeGpuExtra, TuneModeProfilesOnAScratchPoolAndKeepsTheWinner) {
  DecodeShape s = shape(40, 4, 8, 16, DType::kBFloat16);
  s.padded = 3;
  tune::Tuner& tuner = tune::Tuner::global();
  const std::uint64_t before = tuner.profile_count();
  {
    tune::Scope scope({.tune_mode = true});
    check_against_reference(make_decode_problem(s, 5100));
    if (HasFailure()) return;
  }
  EXPECT_GT(tuner.profile_count(), before);
  const auto runner = gdn::detail::decode_op_runner(0, DType::kBFloat16, DType::kBFloat16, 4, 8, 16);
  const tune::Choice tuned = tuner.choose(runner->tune_key(), 40);
  EXPECT_EQ(tuned.source, tune::Source::kMemory);
  std::printf("[ tuned    ] B=40 T=4 8x16 bf16 pool: %s\n", runner->tactic_name(tuned.tactic).c_str());
  const std::uint64_t after = tuner.profile_count();
  {
    tune::Scope scope({.tune_mode = true});
    DecodeShape o = s;
    o.out_of_place = true; o.with_intermediate = true;
    check_against_reference(make_decode_problem(o, 5101));
  }
  EXPECT_EQ(tuner.profile_count(), after) << "a tuned bucket is not profiled again";
  for (int id = 0; id < runner->tactic_count(); ++id) {
    SCOPED_TRACE(runner->tactic_name(id));
    tuner.insert(runner->tune_key(), runner->tune_key().mapper().bucket(40), id);
    check_against_reference(make_decode_problem(s, 5200 + id));
    if (HasFailure()) return;
  }
}

TEST_F(GdnDecodeGpuExtra, GraphCaptureOnAStream) {
  DecodeShape s = shape(16, 2, 16, 32, DType::kFloat32);
  DecodeProblem p = make_decode_problem(s, 79);
  DeviceProblem dev(p);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  dev.args.disable_state_update = true;  // replayable: the pool stays as uploaded
  gdn::decode(dev.args, stream);         // warm-up (runner built, device facts cached)
  CUDA_OK(cudaMemsetAsync(dev.output.ptr, 0xff, p.output.nbytes(), stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  gdn::decode(dev.args, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  DecodeProblem got = p;
  dev.output.download(got.output);
  DecodeProblem cpu = p;
  cpu.disable_state_update = true;
  gdn::decode(cpu.args());
  expect_close("output", got.output, cpu.output, 0, cpu.output.numel(), tolerance_for(DType::kBFloat16));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace fastinfer
