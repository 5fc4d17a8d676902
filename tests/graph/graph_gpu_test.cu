// CUDA-graph capture of every public op (issue 9): after one eager warm-up call, the call is
// captured on a non-blocking stream, then the graph is replayed many times with fresh input
// values written into the captured buffers (prefill: new cu_seqlens values too; decode: new slot
// indices). Each replay must be byte-identical to an eager call on the same inputs, and two
// consecutive replays must differ (the graph reads the buffers live, not a frozen copy).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/graph_nodes.h"
#include "stress/gpu_ops.h"
#include "support/gpu_test.h"

namespace fastinfer::testing {
namespace {

// FASTINFER_GRAPH_REPLAYS overrides (sanitizer runs use a few).
int replays() {
  const char* env = std::getenv("FASTINFER_GRAPH_REPLAYS");
  return env ? std::max(2, std::atoi(env)) : 25;
}

using Bytes = std::vector<std::vector<unsigned char>>;

Bytes download_all(const OpInstance& inst, cudaStream_t s) {
  Bytes r;
  for (const DeviceBuffer* b : inst.results()) {
    r.emplace_back(b->bytes());
    b->download(r.back().data(), s);
  }
  return r;
}

void capture_and_replay(GpuOpProblem& problem) {
  SCOPED_TRACE(problem.name());
  cudaStream_t s;
  FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto inst = problem.make_instance();
  inst->prepare(s);
  inst->call(s);  // warm-up: runner built, workspace grown
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(s));

  cudaGraph_t graph;
  FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    inst->call(s);
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    throw;
  }
  FASTINFER_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  const int kernels = count_graph_nodes(graph).kernels;
  EXPECT_GE(kernels, 1) << "the capture recorded no kernel";
  cudaGraphExec_t exec;
  FASTINFER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  Bytes previous;
  int identical = 0, changed = 0;
  const int count = replays();
  for (int r = 0; r < count; ++r) {
    problem.refill(9000 + r);
    inst->prepare(s);
    FASTINFER_CUDA_CHECK(cudaGraphLaunch(exec, s));
    const Bytes replayed = download_all(*inst, s);
    inst->prepare(s);
    inst->call(s);
    const Bytes eager = download_all(*inst, s);
    ASSERT_EQ(replayed.size(), eager.size());
    for (std::size_t i = 0; i < eager.size(); ++i) {
      const bool same = replayed[i] == eager[i];
      EXPECT_TRUE(same) << "replay " << r << ": result " << i << " differs from the eager call";
      identical += same;
    }
    if (!previous.empty()) {
      const bool differs = previous[0] != replayed[0];
      EXPECT_TRUE(differs) << "replay " << r << ": the first result did not change with new inputs";
      changed += differs;
    }
    previous = replayed;
  }
  std::printf("graph: %-60s %d kernel node(s), %d replays: %d/%zu results identical to eager, %d changed\n",
              problem.name().c_str(), kernels, count, identical, count * previous.size(), changed);
  FASTINFER_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FASTINFER_CUDA_CHECK(cudaGraphDestroy(graph));
  FASTINFER_CUDA_CHECK(cudaStreamDestroy(s));
}

// One test per problem of make_all_problems (so sanitizer runs can pick a few by name).
class GraphGpu : public GpuTest, public ::testing::WithParamInterface<int> {};

TEST_P(GraphGpu, CapturedAndReplayedWithNewInputs) {
  auto problems = make_all_problems(777);
  ASSERT_LT(GetParam(), static_cast<int>(problems.size()));
  capture_and_replay(*problems[GetParam()]);
}

std::string problem_label(const ::testing::TestParamInfo<int>& info) { return kProblemLabels[info.param]; }

INSTANTIATE_TEST_SUITE_P(EveryOp, GraphGpu, ::testing::Range(0, kProblemCount), problem_label);

}  // namespace
}  // namespace fastinfer::testing
