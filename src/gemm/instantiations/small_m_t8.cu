// Small-M kernels with 64-token tiles (T = 8). Shapes: the (R, W) pairs compiled (each about 20 s of nvcc).
#include "gemm/kernels/small_m_launch.cuh"

namespace fastinfer::gemm::detail {

bool launch_small_m_t8(const SmallMParams& p, const SmallMShape& s, int device, bool enable_pdl, cudaStream_t stream) {
  if (s.lean_ring) return false;  // deep ring only at T = 8
  if (s.rows_tiles == 2 && s.warps == 4) {
    launch_small_m_instance<2, 8, 4>(p, s.cluster, device, enable_pdl, stream);
    return true;
  }
  return false;
}

int blocks_small_m_t8(const SmallMShape& s, int device) {
  if (s.lean_ring) return 0;
  if (s.rows_tiles == 2 && s.warps == 4) return small_m_blocks_per_sm_instance<2, 8, 4>(device);
  return 0;
}

bool compiled_small_m_t8(int rows_tiles, int warps, bool lean_ring) {
  return !lean_ring && ((rows_tiles == 2 && warps == 4));
}

}  // namespace fastinfer::gemm::detail
