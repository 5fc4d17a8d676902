// Routine "gdn_dist": the multi-GPU GDN prefill (issue 10) on 2 GPUs of this process against the
// single-GPU gdn::prefill, one sequence of 256k or 1M tokens, heads 16/32. Reports the 2-GPU
// wall time (host clock from a barrier to both streams done: the two GPUs have no common clock),
// the 1-GPU time, the speed-up, the parts of the 2-GPU time measured alone (rank 0's chunk maps:
// CP stages 1-2 on its slice; the all-gather; the resumed local prefill: stages 3-4 on those maps;
// a whole 1-GPU prefill of one slice for comparison) and the floor.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "dist/nccl_backend.h"
#include "fastinfer/device.h"
#include "fastinfer/gdn_distributed.h"
#include "gdn/cp.h"
#include "gdn/prefill_validate.h"
#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

struct DistCase {
  int hq, hv;
  std::int64_t len;
};

// Random inputs of `tokens` tokens (one sequence) on the current device.
struct Inputs {
  DeviceBuffer q, k, v, alpha, beta, cu, out, state;
  gdn::PrefillArgs args;
  Inputs(const DistCase& c, std::int64_t tokens, int device, std::uint64_t seed, cudaStream_t stream)
      : q(tokens * c.hq * 256), k(tokens * c.hq * 256), v(tokens * c.hv * 256), alpha(tokens * c.hv * 4),
        beta(tokens * c.hv * 4), cu(8), out(tokens * c.hv * 256), state(c.hv * 128 * 128 * 4) {
    const Device d = Device::cuda(device);
    fill_uniform(q.get(), DType::kBFloat16, tokens * c.hq * 128, -1, 1, seed, stream);
    fill_uniform(k.get(), DType::kBFloat16, tokens * c.hq * 128, -1, 1, seed + 1, stream);
    fill_uniform(v.get(), DType::kBFloat16, tokens * c.hv * 128, -1, 1, seed + 2, stream);
    fill_uniform(alpha.get(), DType::kFloat32, tokens * c.hv, 0.99f, 1.0f, seed + 3, stream);
    fill_uniform(beta.get(), DType::kFloat32, tokens * c.hv, 0.05f, 1.0f, seed + 4, stream);
    const std::int32_t offsets[2] = {0, static_cast<std::int32_t>(tokens)};
    FASTINFER_CUDA_CHECK(cudaMemcpy(cu.get(), offsets, sizeof(offsets), cudaMemcpyHostToDevice));
    args.q = TensorView::contiguous(q.get(), DType::kBFloat16, {tokens, c.hq, 128}, d);
    args.k = TensorView::contiguous(k.get(), DType::kBFloat16, {tokens, c.hq, 128}, d);
    args.v = TensorView::contiguous(v.get(), DType::kBFloat16, {tokens, c.hv, 128}, d);
    args.alpha = TensorView::contiguous(alpha.get(), DType::kFloat32, {tokens, c.hv}, d);
    args.beta = TensorView::contiguous(beta.get(), DType::kFloat32, {tokens, c.hv}, d);
    args.cu_seqlens = TensorView::contiguous(cu.get(), DType::kInt32, {2}, d);
    args.output = TensorView::contiguous(out.get(), DType::kBFloat16, {tokens, c.hv, 128}, d);
    args.output_state = TensorView::contiguous(state.get(), DType::kFloat32, {1, c.hv, 128, 128}, d);
    args.use_qk_l2norm = true;
    args.max_seqlen = tokens;  // the CP plan's hint (one sequence)
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median wall ms over `reps` of fn(rank, stream) run by one thread per rank, started together
// and stopped when every rank's stream has drained (after `warmup` untimed runs).
template <class Fn>
double two_rank_ms(int warmup, int reps, const std::vector<cudaStream_t>& streams, Fn fn) {
  std::vector<double> times;
  for (int it = 0; it < warmup + reps; ++it) {
    std::barrier sync(2);
    std::chrono::steady_clock::time_point start[2], end[2];
    auto body = [&](int r) {
      FASTINFER_CUDA_CHECK(cudaSetDevice(r));
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(streams[r]));
      sync.arrive_and_wait();
      start[r] = std::chrono::steady_clock::now();
      fn(r, streams[r]);
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(streams[r]));
      end[r] = std::chrono::steady_clock::now();
    };
    std::thread t0(body, 0), t1(body, 1);
    t0.join();
    t1.join();
    if (it >= warmup)
      times.push_back(std::chrono::duration<double, std::milli>(std::max(end[0], end[1]) - std::min(start[0], start[1])).count());
  }
  return median(times);
}

nlohmann::json run_gdn_dist(const BenchOptions& options) {
  if (!dist::built_with_nccl() || cuda_device_count() < 2) {
    std::printf("gdn_dist: needs NCCL and 2 GPUs (built_with_nccl=%d, devices=%d): skipped\n",
                dist::built_with_nccl() ? 1 : 0, cuda_device_count());
    return {{"skipped", "needs NCCL and 2 GPUs"}};
  }
  std::vector<DistCase> cases = {{16, 32, 262144}, {16, 32, 1048576}};
  if (options.quick) cases.resize(1);
  dist::detail::LocalCommunicators comms({0, 1});
  std::vector<cudaStream_t> streams(2);
  for (int r = 0; r < 2; ++r) {
    FASTINFER_CUDA_CHECK(cudaSetDevice(r));
    FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
  }
  FASTINFER_CUDA_CHECK(cudaSetDevice(0));
  const Ceilings& ceil = ceilings();
  const int warmup = 1, reps = options.quick ? 2 : 3;

  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-16s %10s %10s %8s %10s %10s %10s %10s %10s %10s\n", "case", "1gpu ms", "2gpu ms", "speedup", "st12 ms",
              "comm ms", "st34 ms", "half ms", "floor2 ms", "cp123 1gpu");
  for (const DistCase& c : cases) {
    const std::string label = std::to_string(c.hq) + "/" + std::to_string(c.hv) + " 1x" + std::to_string(c.len / 1024) + "k";
    if (!options.wants(label)) continue;
    const std::int64_t half = c.len / 2;

    // One GPU, the whole sequence.
    double one_gpu_ms = 0, cp123_ms = 0;
    {
      FASTINFER_CUDA_CHECK(cudaSetDevice(0));
      Inputs whole(c, c.len, 0, 1, streams[0]);
      one_gpu_ms = median_ms([&](int) { gdn::prefill(whole.args, streams[0]); }, warmup, reps, streams[0]);
      const ExecContext ctx{Device::cuda(0), streams[0]};
      gdn::detail::CpOptions cp{.max_seqlen = c.len};
      cp123_ms = median_ms([&](int) { gdn::detail::run_cp_stages(whole.args, ctx, cp); }, warmup, reps, streams[0]);
    }

    // Two GPUs, one half each.
    std::vector<std::unique_ptr<Inputs>> ranks;
    for (int r = 0; r < 2; ++r) {
      FASTINFER_CUDA_CHECK(cudaSetDevice(r));
      ranks.push_back(std::make_unique<Inputs>(c, half, r, 10 + 7 * r, streams[r]));
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(streams[r]));
    }
    const gdn::DistributedPrefillOptions dist_options{.max_slice_len = half};
    const double two_gpu_ms = two_rank_ms(warmup, reps, streams, [&](int r, cudaStream_t s) {
      gdn::prefill_distributed(ranks[r]->args, comms[r], dist_options, s);
    });

    // The parts alone: rank 0's chunk maps (CP stages 1-2 on its half, what begin_rank runs
    // before the chain), the all-gather of the contributions, the resumed local prefill (stages
    // 3-4 on those maps, what finish_rank runs after the fold), one half's whole 1-GPU prefill.
    FASTINFER_CUDA_CHECK(cudaSetDevice(0));
    const ExecContext ctx0{Device::cuda(0), streams[0]};
    gdn::detail::CpOptions cp_half{.max_seqlen = half};
    cp_half.last_stage = 2;
    const double map_ms = median_ms([&](int) { gdn::detail::run_cp_stages(ranks[0]->args, ctx0, cp_half); }, warmup, reps, streams[0]);
    gdn::detail::CpOptions resume = cp_half;
    resume.first_stage = 3;
    const gdn::PrefillShape half_shape = gdn::validate_prefill(ranks[0]->args);
    const double resume_ms =
        median_ms([&](int) { gdn::detail::prefill_cp(ranks[0]->args, half_shape, ctx0, resume); }, warmup, reps, streams[0]);
    const double half_ms = median_ms([&](int) { gdn::prefill(ranks[0]->args, streams[0]); }, warmup, reps, streams[0]);
    const std::size_t floats = 2 * static_cast<std::size_t>(c.hv) * 128 * 128;
    std::vector<DeviceBuffer> send, recv;
    for (int r = 0; r < 2; ++r) {
      FASTINFER_CUDA_CHECK(cudaSetDevice(r));
      send.emplace_back(floats * 4);
      recv.emplace_back(floats * 8);
    }
    const double comm_ms = two_rank_ms(3, 20, streams, [&](int r, cudaStream_t s) {
      dist::detail::all_gather_floats(send[r].as<float>(), recv[r].as<float>(), floats, comms[r].nccl_comm(), s);
    });

    // Floor of the whole prefill on 2 GPUs: nominal flops 4 T Hv 128^2 and q, k, v, out bytes,
    // against one GPU's measured ceilings, halved.
    const double flops = 4.0 * c.len * c.hv * 128 * 128;
    const double bytes = 2.0 * c.len * 128 * (2 * c.hq + 2 * c.hv);
    const double floor2 = floor_ms(bytes, flops) / 2;
    std::printf("%-16s %10.2f %10.2f %8.2f %10.2f %10.3f %10.2f %10.2f %10.3f %10.2f\n", label.c_str(), one_gpu_ms,
                two_gpu_ms, one_gpu_ms / two_gpu_ms, map_ms, comm_ms, resume_ms, half_ms, floor2, cp123_ms);
    rows.push_back({{"case", label}, {"one_gpu_ms", one_gpu_ms}, {"two_gpu_ms", two_gpu_ms},
                    {"speedup", one_gpu_ms / two_gpu_ms}, {"rank0_cp_stages12_ms", map_ms}, {"allgather_ms", comm_ms},
                    {"rank0_resumed_stages34_ms", resume_ms},
                    {"allgather_bytes_per_rank", floats * 4}, {"half_local_prefill_ms", half_ms},
                    {"floor_two_gpu_ms", floor2}, {"cp_stages123_one_gpu_ms", cp123_ms},
                    {"nominal_tflops_two_gpu", flops / (two_gpu_ms * 1e9)}, {"bf16_peak_tflops", ceil.bf16_tflops}});
  }
  for (int r = 0; r < 2; ++r) {
    FASTINFER_CUDA_CHECK(cudaSetDevice(r));
    FASTINFER_CUDA_CHECK(cudaStreamDestroy(streams[r]));
  }
  FASTINFER_CUDA_CHECK(cudaSetDevice(0));
  return {{"note", "1 GPU = gdn::prefill (use_cp Auto); 2 GPUs = prefill_distributed (CP stages 1-2 on every rank, "
                   "chain on rank 0, all-gather, fold on rank 1, CP stages 3-4 resumed on every rank)"},
          {"rows", rows}};
}

const RoutineRegistration registration{{"gdn_dist", "multi-GPU GDN prefill over NCCL (2 GPUs vs 1)", run_gdn_dist}};

}  // namespace
}  // namespace fastinfer::bench
