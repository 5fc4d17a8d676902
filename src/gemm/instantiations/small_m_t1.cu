// Small-M kernels with 8-token tiles (T = 1). Shapes: the (R, W) pairs compiled, each with the
// deep and the lean ring (each instantiation about 20 s of nvcc).
#include "gemm/kernels/small_m_launch.cuh"

namespace fastinfer::gemm::detail {

namespace {
template <int R, int W>
void launch_ring(const SmallMParams& p, const SmallMShape& s, int device, bool enable_pdl, cudaStream_t stream) {
  if (s.lean_ring) launch_small_m_instance<R, 1, W, true>(p, s.cluster, device, enable_pdl, stream);
  else launch_small_m_instance<R, 1, W, false>(p, s.cluster, device, enable_pdl, stream);
}
template <int R, int W>
int blocks_ring(const SmallMShape& s, int device) {
  return s.lean_ring ? small_m_blocks_per_sm_instance<R, 1, W, true>(device) : small_m_blocks_per_sm_instance<R, 1, W, false>(device);
}
}  // namespace

int blocks_small_m_t1(const SmallMShape& s, int device) {
  if (s.rows_tiles == 2 && s.warps == 4) return blocks_ring<2, 4>(s, device);
  if (s.rows_tiles == 2 && s.warps == 8) return blocks_ring<2, 8>(s, device);
  if (s.rows_tiles == 4 && s.warps == 4) return blocks_ring<4, 4>(s, device);
  if (s.rows_tiles == 4 && s.warps == 8) return blocks_ring<4, 8>(s, device);
  return 0;
}

bool launch_small_m_t1(const SmallMParams& p, const SmallMShape& s, int device, bool enable_pdl, cudaStream_t stream) {
  if (s.rows_tiles == 2 && s.warps == 4) {
    launch_ring<2, 4>(p, s, device, enable_pdl, stream);
    return true;
  }
  if (s.rows_tiles == 2 && s.warps == 8) {
    launch_ring<2, 8>(p, s, device, enable_pdl, stream);
    return true;
  }
  if (s.rows_tiles == 4 && s.warps == 4) {
    launch_ring<4, 4>(p, s, device, enable_pdl, stream);
    return true;
  }
  if (s.rows_tiles == 4 && s.warps == 8) {
    launch_ring<4, 8>(p, s, device, enable_pdl, stream);
    return true;
  }
  return false;
}

bool compiled_small_m_t1(int rows_tiles, int warps, bool /*lean_ring: both compiled*/) {
  return (rows_tiles == 2 && warps == 4) ||
         (rows_tiles == 2 && warps == 8) ||
         (rows_tiles == 4 && warps == 4) ||
         (rows_tiles == 4 && warps == 8);
}

}  // namespace fastinfer::gemm::detail
