// CPU tests of the multi-GPU GDN prefill (issue 10): argument validation, and the rank
// composition (slice maps from the CP stage references, the affine chain, the fold over ranks)
// against the token-serial fp64 recurrence with simulated ranks.
#include <gtest/gtest.h>

#include "dist/affine_chain.h"
#include "dist/communicator_access.h"
#include "fastinfer/gdn_distributed.h"
#include "ref/gdn_cp_ref.h"
#include "ref/gdn_ref.h"
#include "support/expect_error.h"
#include "dist/split_problem.h"  // tests/dist

namespace fastinfer {
namespace {

using dist::CommunicatorAccess;
using dist_test::Problem;
using dist_test::RankSlice;
using ref::HostTensor;
using testing::expect_error;
constexpr int D = 128;
constexpr std::int64_t DD = D * D;

// What every rank contributes and what the fold gives, computed on the host exactly as the GPU
// pipeline does (same layouts): contributions [world, 2, N, H, 128, 128].
struct SimulatedRanks {
  std::vector<double> contributions;
  std::vector<std::vector<double>> entering;  // [rank][N * H * DD], rank 0's = initial state
  std::vector<double> last_final;             // the last rank's state after its slices
};

std::vector<double> packed_initial_state(const Problem& p) {
  const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size());
  std::vector<double> s(static_cast<std::size_t>(n_seqs * p.hsab * DD), 0.0);
  const auto& a = p.args;
  if (!a.initial_state) return s;
  for (std::int64_t n = 0; n < n_seqs; ++n) {
    const std::int64_t slot = a.state_indices ? static_cast<std::int64_t>(ref::load(*a.state_indices, n)) : n;
    if (slot < 0) continue;
    for (std::int64_t h = 0; h < p.hsab; ++h)
      for (std::int64_t i = 0; i < DD; ++i)
        s[(n * p.hsab + h) * DD + i] = ref::load(*a.initial_state, ref::offset_of(*a.initial_state, slot, h, i / D, i % D));
  }
  return s;
}

// The slice map of one rank from the CP stage references, composed by the host chain.
void slice_map(const Problem& p, const RankSlice& s, bool with_m, const double* init, double* out_m, double* out_b) {
  const int n_seqs = static_cast<int>(p.lengths.size());
  std::int64_t longest = 1;
  for (auto l : s.lengths) longest = std::max(longest, l);
  const ref::CpLayout layout{128, (longest + 127) / 128};
  std::vector<double> m, b;
  if (!s.global_rows.empty()) {
    const std::vector<double> inverse = ref::gdn_cp_block_inverse_ref(s.args, layout);
    ref::gdn_cp_chunk_maps_ref(s.args, layout, inverse, m, b);
  }
  std::vector<int> steps(static_cast<std::size_t>(n_seqs));
  for (int n = 0; n < n_seqs; ++n) steps[n] = static_cast<int>((s.lengths[n] + 127) / 128);
  dist::detail::AffineChainHostArgs chain;
  chain.num_seqs = n_seqs;
  chain.num_heads = static_cast<int>(p.hsab);
  chain.with_m = with_m;
  chain.init = init;
  chain.step_m = m.data();
  chain.step_b = b.data();
  chain.step_stride = p.hsab * DD;
  chain.seq_stride = layout.chunks_per_seq * p.hsab * DD;
  chain.steps = steps.data();
  chain.out_m = out_m;
  chain.out_state = out_b;
  dist::detail::affine_chain_host(chain);
}

SimulatedRanks simulate(const Problem& p, const std::vector<RankSlice>& ranks) {
  const int world = static_cast<int>(ranks.size()), n_seqs = static_cast<int>(p.lengths.size());
  const std::int64_t half = n_seqs * p.hsab * DD, contribution = 2 * half;
  SimulatedRanks sim;
  sim.contributions.assign(static_cast<std::size_t>(world * contribution), 0.0);
  const std::vector<double> init = packed_initial_state(p);
  for (int r = 0; r < world; ++r) {
    double* c = sim.contributions.data() + r * contribution;
    slice_map(p, ranks[r], r > 0, r == 0 ? init.data() : nullptr, c, c + half);
  }
  sim.entering.push_back(init);
  for (int r = 1; r < world; ++r) {
    std::vector<int> steps(static_cast<std::size_t>(n_seqs), r - 1);
    std::vector<double> entering(static_cast<std::size_t>(half));
    dist::detail::AffineChainHostArgs fold;
    fold.num_seqs = n_seqs;
    fold.num_heads = static_cast<int>(p.hsab);
    fold.init = sim.contributions.data() + half;
    fold.step_m = sim.contributions.data() + contribution;
    fold.step_b = sim.contributions.data() + contribution + half;
    fold.seq_stride = p.hsab * DD;
    fold.step_stride = contribution;
    fold.steps = steps.data();
    fold.out_state = entering.data();
    dist::detail::affine_chain_host(fold);
    sim.entering.push_back(std::move(entering));
  }
  // The last rank applies its own map to its entering state.
  sim.last_final.assign(static_cast<std::size_t>(half), 0.0);
  slice_map(p, ranks.back(), false, sim.entering.back().data(), nullptr, sim.last_final.data());
  return sim;
}

double rel_l2(const double* got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  return std::sqrt(num / std::max(den, 1e-300));
}

void expect_rank_states_match_serial(const Problem& p, const std::vector<RankSlice>& ranks) {
  const SimulatedRanks sim = simulate(p, ranks);
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (std::int64_t n = 0; n < static_cast<std::int64_t>(p.lengths.size()); ++n)
      for (std::int64_t h = 0; h < p.hsab; ++h) {
        const auto want = dist_test::serial_state_after(p, n, h, ranks[r].start_in_sequence[n]);
        EXPECT_LT(rel_l2(sim.entering[r].data() + (n * p.hsab + h) * DD, want), 1e-9)
            << "state entering rank " << r << ", sequence " << n << ", head " << h;
        if (r + 1 == ranks.size()) {
          const auto fin = dist_test::serial_state_after(p, n, h, p.lengths[n]);
          EXPECT_LT(rel_l2(sim.last_final.data() + (n * p.hsab + h) * DD, fin), 1e-9)
              << "final state, sequence " << n << ", head " << h;
        }
      }
}

// Three ranks: sequence 0 split over all three (ragged cuts), 1 empty, 2 over ranks 0 and 2 with
// an empty slice on rank 1, 3 wholly on rank 0, 4 wholly on rank 2 (its initial state still comes
// from rank 0).
const std::vector<std::vector<std::int64_t>> kThreeRankCuts = {{100, 0, 250, 64, 0}, {230, 0, 250, 64, 0}};

TEST(GdnDistributedMath, ThreeRanksPackedStateGatesNearOne) {
  Problem p({300, 0, 517, 64, 200}, 2, 2, 2, 0.99, 1.0, 11);
  p.packed_initial_state(12);
  expect_rank_states_match_serial(p, dist_test::split(p, kThreeRankCuts));
}

TEST(GdnDistributedMath, ThreeRanksPoolStateGvaSmallGates) {
  Problem p({300, 0, 517, 64, 200}, 1, 1, 2, 0.02, 0.1, 13);
  p.pool_initial_state(14);
  expect_rank_states_match_serial(p, dist_test::split(p, kThreeRankCuts));
}

// The outputs of one rank's slices by the fp64 oracle from a packed entering state (or zero).
std::vector<double> slice_outputs(const Problem& p, const RankSlice& s, const std::vector<double>* entering) {
  const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size());
  const std::int64_t rows = static_cast<std::int64_t>(s.global_rows.size());
  HostTensor out(DType::kFloat32, {rows, p.hsab, D}), state(DType::kFloat32, {n_seqs, p.hsab, D, D});
  gdn::PrefillArgs a = s.args;
  a.output = out;
  if (entering != nullptr) {
    for (std::size_t i = 0; i < entering->size(); ++i) static_cast<float*>(state.data())[i] = static_cast<float>((*entering)[i]);
    a.initial_state = state.view();
  }
  ref::gdn_prefill_serial_fp64(a);
  std::vector<double> o(static_cast<std::size_t>(out.view().numel()));
  for (std::int64_t i = 0; i < out.view().numel(); ++i) o[i] = out.get(i);
  return o;
}

// Every rank's slices run from a zero state instead of the state entering them (what the resumed
// CP fix-up of commit d158c41 did: it got no pool size and read every initial state as zero)
// move the outputs of every rank, and the final states, far beyond the GPU tests' 2e-2: the
// simulated-rank GPU test of this problem can see that bug.
TEST(GdnDistributedMath, ZeroEnteringStateMovesOutputsBeyondTheGpuTolerance) {
  const Problem p = dist_test::entering_state_dominates_problem();
  const std::vector<RankSlice> ranks = dist_test::split(p, dist_test::kEnteringStateDominatesCuts);
  const SimulatedRanks sim = simulate(p, ranks);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const std::vector<double> right = slice_outputs(p, ranks[r], &sim.entering[r]);
    const std::vector<double> from_zero = slice_outputs(p, ranks[r], nullptr);
    const double moved = rel_l2(from_zero.data(), right);
    std::printf("  rank %zu outputs from a zero state: rel L2 %.3g off\n", r, moved);
    EXPECT_GT(moved, 0.1) << "rank " << r;
  }
  // The final states (all on the last rank, whose slices are 200, 1 and 1 tokens) from zero.
  const std::int64_t n_seqs = static_cast<std::int64_t>(p.lengths.size());
  std::vector<double> from_zero(static_cast<std::size_t>(n_seqs * p.hsab * DD));
  slice_map(p, ranks.back(), false, nullptr, nullptr, from_zero.data());
  for (std::int64_t n = 0; n < n_seqs; ++n)
    for (std::int64_t h = 0; h < p.hsab; ++h) {
      const auto want = dist_test::serial_state_after(p, n, h, p.lengths[n]);
      EXPECT_LT(rel_l2(sim.last_final.data() + (n * p.hsab + h) * DD, want), 1e-9) << "sequence " << n << ", head " << h;
      const double moved = rel_l2(from_zero.data() + (n * p.hsab + h) * DD, want);
      EXPECT_GT(moved, 0.1) << "final state from zero, sequence " << n << ", head " << h;
      if (h == 0) std::printf("  sequence %lld final state from a zero entering state: rel L2 %.3g off\n", static_cast<long long>(n), moved);
    }
}

TEST(GdnDistributedMath, TwoRanksNoInitialStateCutsOnBlockEdges) {
  Problem p({256, 129}, 2, 2, 2, 0.9995, 1.0, 15);
  expect_rank_states_match_serial(p, dist_test::split(p, {{128, 64}}));
}

TEST(GdnDistributedMath, HostChainOfNoStepsIsIdentityAndInitialState) {
  std::vector<double> init(DD), m(DD), s(DD);
  for (std::int64_t i = 0; i < DD; ++i) init[i] = 0.001 * static_cast<double>(i % 97) - 0.03;
  int steps = 0;
  dist::detail::AffineChainHostArgs a;
  a.num_seqs = 1;
  a.num_heads = 1;
  a.with_m = true;
  a.init = init.data();
  a.steps = &steps;
  a.out_m = m.data();
  a.out_state = s.data();
  dist::detail::affine_chain_host(a);
  for (std::int64_t i = 0; i < DD; ++i) {
    EXPECT_EQ(m[i], i / D == i % D ? 1.0 : 0.0);
    EXPECT_EQ(s[i], init[i]);
  }
}

// Validation: fake device views (never dereferenced: every error comes before any device work).
struct FakeDeviceArgs {
  gdn::PrefillArgs args;
  explicit FakeDeviceArgs(Device dev) {
    args.q = TensorView::contiguous(fake(1), DType::kBFloat16, {64, 2, 128}, dev);
    args.k = TensorView::contiguous(fake(2), DType::kBFloat16, {64, 2, 128}, dev);
    args.v = TensorView::contiguous(fake(3), DType::kBFloat16, {64, 2, 128}, dev);
    args.output = TensorView::contiguous(fake(4), DType::kBFloat16, {64, 2, 128}, dev);
    args.cu_seqlens = TensorView::contiguous(fake(5), DType::kInt32, {2}, dev);
  }
  // Distinct, far apart, aligned fake addresses (validation checks overlaps).
  static void* fake(int i) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(i) << 28); }
  TensorView state(Device dev, int i = 6) const {
    return TensorView::contiguous(fake(i), DType::kFloat32, {1, 2, 128, 128}, dev);
  }
};

void* fake_comm() { return FakeDeviceArgs::fake(15); }

TEST(GdnDistributedValidation, RankOutsideTheWorld) {
  FakeDeviceArgs f(Device::cuda(0));
  const auto comm = CommunicatorAccess::make(fake_comm(), 2, 2, 0);
  expect_error([&] { gdn::prefill_distributed(f.args, comm); }, "gdn::prefill_distributed: comm must have a rank in [0, 2)");
}

TEST(GdnDistributedValidation, InitialStateOnlyOnRankZero) {
  FakeDeviceArgs f(Device::cuda(0));
  f.args.initial_state = f.state(Device::cuda(0));
  const auto comm = CommunicatorAccess::make(fake_comm(), 1, 2, 0);
  expect_error([&] { gdn::prefill_distributed(f.args, comm); }, "initial_state must be absent on ranks > 0");
}

TEST(GdnDistributedValidation, NoPoolOnLaterRanks) {
  FakeDeviceArgs f(Device::cuda(0));
  f.args.output_state = f.state(Device::cuda(0));
  f.args.state_indices = TensorView::contiguous(FakeDeviceArgs::fake(7), DType::kInt32, {1}, Device::cuda(0));
  const auto comm = CommunicatorAccess::make(fake_comm(), 1, 2, 0);
  expect_error([&] { gdn::prefill_distributed(f.args, comm); }, "state_indices must be absent on ranks > 0");
}

TEST(GdnDistributedValidation, NoCheckpointsAcrossRanks) {
  FakeDeviceArgs f(Device::cuda(0));
  f.args.checkpoint_every_n_tokens = 64;
  f.args.state_checkpoints = f.state(Device::cuda(0), 8);
  f.args.checkpoint_cu_starts = TensorView::contiguous(FakeDeviceArgs::fake(9), DType::kInt32, {2}, Device::cuda(0));
  const auto comm = CommunicatorAccess::make(fake_comm(), 0, 2, 0);
  expect_error([&] { gdn::prefill_distributed(f.args, comm); }, "checkpoint_every_n_tokens must be 0");
}

TEST(GdnDistributedValidation, TensorsOnTheCommunicatorsDevice) {
  FakeDeviceArgs f(Device::cuda(1));
  const auto comm = CommunicatorAccess::make(fake_comm(), 0, 2, 0);
  expect_error([&] { gdn::prefill_distributed(f.args, comm); }, "q must be on the communicator's device cuda:0, got cuda:1");
}

TEST(GdnDistributedValidation, SeveralRanksNeedCuda) {
  FakeDeviceArgs f(Device::cpu());
  const auto comm = CommunicatorAccess::make(fake_comm(), 0, 2, 0);
  expect_error([&] { gdn::prefill_distributed(f.args, comm); }, "q must be on a CUDA device");
}

TEST(GdnDistributedValidation, NegativeSliceHint) {
  FakeDeviceArgs f(Device::cuda(0));
  const auto comm = CommunicatorAccess::make(fake_comm(), 0, 2, 0);
  expect_error([&] { gdn::prefill_distributed(f.args, comm, {.max_slice_len = -1}); }, "options.max_slice_len must be >= 0");
}

TEST(GdnDistributedValidation, NullNcclHandle) {
  expect_error([] { dist::Communicator::from_nccl(nullptr); }, "nccl_comm must be an ncclComm_t");
}

// World size 1 is gdn::prefill: on CPU tensors the reference runs, bit for bit the same.
TEST(GdnDistributed, WorldOfOneIsThePlainPrefill) {
  Problem p({70, 0, 130}, 2, 2, 2, 0.9, 1.0, 21);
  p.packed_initial_state(22);
  ref::HostTensor out1(DType::kBFloat16, {200, 2, 128}), out2 = out1, st1(DType::kFloat32, {3, 2, 128, 128}), st2 = st1;
  gdn::PrefillArgs a = p.args;
  a.output = out1;
  a.output_state = st1.view();
  gdn::prefill(a);
  a.output = out2;
  a.output_state = st2.view();
  gdn::prefill_distributed(a, CommunicatorAccess::make(nullptr, 0, 1, 0));
  EXPECT_EQ(std::memcmp(out1.data(), out2.data(), out1.nbytes()), 0);
  EXPECT_EQ(std::memcmp(st1.data(), st2.data(), st1.nbytes()), 0);
}

}  // namespace
}  // namespace fastinfer
