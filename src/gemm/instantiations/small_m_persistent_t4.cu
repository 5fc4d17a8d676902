// Persistent small-M kernels with 32-token tiles (T = 4): the (W, S) shapes of
// kPersistentShapes (small_m_persistent.h), each about 20 s of nvcc.
#include "gemm/kernels/small_m_persistent_launch.cuh"

namespace fastinfer::gemm::detail {

bool launch_small_m_persistent_t4(const SmallMPersistentParams& p, const PersistentShape& shape, int ctas, int device,
                                  bool enable_pdl, cudaStream_t stream) {
  return launch_persistent_tiles<4>(p, shape, ctas, device, enable_pdl, stream);
}

int blocks_small_m_persistent_t4(const PersistentShape& shape, int device) { return persistent_blocks_tiles<4>(shape, device); }

bool compiled_small_m_persistent_t4(const PersistentShape& shape) { return persistent_shape_compiled(shape); }

}  // namespace fastinfer::gemm::detail
