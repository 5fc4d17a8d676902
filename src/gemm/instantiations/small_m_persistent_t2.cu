// Persistent small-M kernels with 16-token tiles (T = 2): the (W, S) shapes of
// kPersistentShapes (small_m_persistent.h), each about 20 s of nvcc.
#include "gemm/kernels/small_m_persistent_launch.cuh"

namespace fastinfer::gemm::detail {

namespace {
// Calls f.template operator()<W, S>() for the compiled shape equal to (warps, stages); false if
// none. Keep in step with kPersistentShapes.
template <class F>
bool with_shape(int warps, int stages, F&& f) {
  if (warps == 4 && stages == 4) return f.template operator()<4, 4>(), true;
  if (warps == 8 && stages == 3) return f.template operator()<8, 3>(), true;
  if (warps == 8 && stages == 2) return f.template operator()<8, 2>(), true;
  return false;
}
}  // namespace

bool launch_small_m_persistent_t2(const SmallMPersistentParams& p, const PersistentShape& shape, int ctas, int device,
                                  bool enable_pdl, cudaStream_t stream) {
  return with_shape(shape.warps, shape.stages, [&]<int W, int S>() {
    launch_persistent_instance<2, W, S>(p, ctas, device, enable_pdl, stream);
  });
}

int blocks_small_m_persistent_t2(const PersistentShape& shape, int device) {
  int blocks = 0;
  with_shape(shape.warps, shape.stages,
             [&]<int W, int S>() { blocks = persistent_blocks_per_sm_instance<2, W, S>(device); });
  return blocks;
}

bool compiled_small_m_persistent_t2(const PersistentShape& shape) {
  for (const auto& c : kPersistentShapes)
    if (c[0] == shape.warps && c[1] == shape.stages) return true;
  return false;
}

}  // namespace fastinfer::gemm::detail
