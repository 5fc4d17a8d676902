#pragma once
// The bf16 tensor-core GEMM of the dequant_gemm tactic: out[M,N] = alpha * a[M,K] @ w[N,K]^T, fp32
// accumulate. Plain declarations (no CUDA or CuTe headers); the CUTLASS kernels are defined in
// bf16_gemm_sm90.cuh and instantiated one tile shape and output type per file in instantiations/.
#include <cstddef>

#include "fastinfer/context.h"

namespace fastinfer::gemm::detail {

struct Bf16GemmArgs {
  const void* a;  // [M, K] bf16, row stride lda
  const void* w;  // [N, K] bf16, row stride ldw
  void* out;      // [M, N] bf16 or fp16 (fixed by the instantiation), row stride ldo
  int m, n, k;
  long long lda, ldw, ldo;
  float alpha;
  int device;  // for device_info(): SM count of the persistent grid
  bool enable_pdl;
};

// The tile shapes compiled (the mainloop schedule is part of the shape's name).
enum class Bf16GemmTile {
  kCoop128x256x64Cluster2x1,    // cooperative (2 consumer warpgroups split M), for large M
  kCoop128x128x64Cluster1x2,    // cooperative, more tiles for mid M
  kPingpong64x256x64Cluster1x1,  // pingpong (consumers alternate tiles), small M tiles
};

// One instantiation: its launch function and its own scratch (the tile scheduler's).
struct Bf16GemmKernel {
  std::size_t (*workspace_bytes)(const Bf16GemmArgs&);
  // True when the kernel's alignment and shape rules accept `args` (no CUDA call).
  bool (*can_implement)(const Bf16GemmArgs&);
  void (*run)(const Bf16GemmArgs&, void* workspace, Stream stream);
};

// Defined in the instantiation files; bf16 and fp16 outputs.
template <Bf16GemmTile Tile, bool OutFp16>
const Bf16GemmKernel& bf16_gemm_sm90();

}  // namespace fastinfer::gemm::detail
