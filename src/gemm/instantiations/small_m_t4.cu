// Small-M kernels with 32-token tiles (T = 4). Shapes: the (R, W) pairs compiled (each about 20 s of nvcc).
#include "gemm/kernels/small_m_launch.cuh"

namespace fastinfer::gemm::detail {

bool launch_small_m_t4(const SmallMParams& p, const SmallMShape& s, int device, bool enable_pdl, cudaStream_t stream) {
  if (s.lean_ring) return false;  // deep ring only at T = 4
  if (s.rows_tiles == 2 && s.warps == 4) {
    launch_small_m_instance<2, 4, 4>(p, s.cluster, device, enable_pdl, stream);
    return true;
  }
  if (s.rows_tiles == 2 && s.warps == 8) {
    launch_small_m_instance<2, 4, 8>(p, s.cluster, device, enable_pdl, stream);
    return true;
  }
  if (s.rows_tiles == 4 && s.warps == 4) {
    launch_small_m_instance<4, 4, 4>(p, s.cluster, device, enable_pdl, stream);
    return true;
  }
  return false;
}

int blocks_small_m_t4(const SmallMShape& s, int device) {
  if (s.lean_ring) return 0;
  if (s.rows_tiles == 2 && s.warps == 4) return small_m_blocks_per_sm_instance<2, 4, 4>(device);
  if (s.rows_tiles == 2 && s.warps == 8) return small_m_blocks_per_sm_instance<2, 4, 8>(device);
  if (s.rows_tiles == 4 && s.warps == 4) return small_m_blocks_per_sm_instance<4, 4, 4>(device);
  return 0;
}

bool compiled_small_m_t4(int rows_tiles, int warps, bool lean_ring) {
  return !lean_ring && ((rows_tiles == 2 && warps == 4) ||
         (rows_tiles == 2 && warps == 8) ||
         (rows_tiles == 4 && warps == 4));
}

}  // namespace fastinfer::gemm::detail
