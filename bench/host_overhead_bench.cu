// Host cost per call: the raw launch of an empty kernel and of a 4-node CUDA graph, the yardsticks
// every op's host cost is compared with (issue 9). Ops add their rows in their own routines.
#include <cstdio>

#include "harness.h"
#include "routines.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {
namespace {

__global__ void empty_kernel() {}

nlohmann::json run_host_overhead(const BenchOptions& options) {
  const int reps = options.quick ? 500 : 5000;
  cudaStream_t stream;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const double launch_us = host_us_per_call([&] { empty_kernel<<<1, 32, 0, stream>>>(); }, reps);

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 4; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  FASTINFER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FASTINFER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double graph_us = host_us_per_call([&] { FASTINFER_CUDA_CHECK(cudaGraphLaunch(exec, stream)); }, reps);
  const double gpu_empty_ms = median_ms([&](int) { empty_kernel<<<1, 32, 0, stream>>>(); }, 10, 100, stream);

  FASTINFER_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FASTINFER_CUDA_CHECK(cudaGraphDestroy(graph));
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(stream));
  std::printf("%-36s %10s\n", "call", "host us");
  std::printf("%-36s %10.2f\n", "cudaLaunchKernel (empty kernel)", launch_us);
  std::printf("%-36s %10.2f\n", "cudaGraphLaunch (4 empty kernels)", graph_us);
  std::printf("%-36s %10.2f\n", "empty kernel GPU time (us)", gpu_empty_ms * 1e3);
  return {{"raw_launch_us", launch_us}, {"graph4_launch_us", graph_us}, {"empty_kernel_gpu_us", gpu_empty_ms * 1e3}};
}

const RoutineRegistration registration{{"host_overhead", "raw launch and graph launch host cost", run_host_overhead}};

}  // namespace
}  // namespace fastinfer::bench
