#pragma once
// Counting the nodes of a captured CUDA graph: how many kernels one captured op call launches
// (used by the graph tests and the host-overhead benchmark). Not on any hot path.

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "runtime/cuda_check.h"

namespace fastinfer {

struct GraphNodeCounts {
  int kernels = 0;
  int all = 0;
};

inline GraphNodeCounts count_graph_nodes(cudaGraph_t graph) {
  std::size_t n = 0;
  FASTINFER_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  FASTINFER_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  GraphNodeCounts counts{0, static_cast<int>(n)};
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    FASTINFER_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    counts.kernels += type == cudaGraphNodeTypeKernel;
  }
  return counts;
}

}  // namespace fastinfer
