// Picks the instantiation file of a small-M shape by its token-tile count.
#include <cuda_runtime.h>

#include "gemm/small_m_params.h"
#include "gemm/small_m_persistent.h"
#include "runtime/check.h"

namespace fastinfer::gemm::detail {

bool launch_small_m_t1(const SmallMParams&, const SmallMShape&, int, bool, cudaStream_t);
bool launch_small_m_t2(const SmallMParams&, const SmallMShape&, int, bool, cudaStream_t);
bool launch_small_m_t4(const SmallMParams&, const SmallMShape&, int, bool, cudaStream_t);
bool launch_small_m_t8(const SmallMParams&, const SmallMShape&, int, bool, cudaStream_t);
int blocks_small_m_t1(const SmallMShape&, int);
int blocks_small_m_t2(const SmallMShape&, int);
int blocks_small_m_t4(const SmallMShape&, int);
int blocks_small_m_t8(const SmallMShape&, int);
bool compiled_small_m_t1(int, int, bool);
bool compiled_small_m_t2(int, int, bool);
bool compiled_small_m_t4(int, int, bool);
bool compiled_small_m_t8(int, int, bool);
bool launch_small_m_persistent_t1(const SmallMPersistentParams&, const PersistentShape&, int, int, bool, cudaStream_t);
bool launch_small_m_persistent_t2(const SmallMPersistentParams&, const PersistentShape&, int, int, bool, cudaStream_t);
int blocks_small_m_persistent_t1(const PersistentShape&, int);
int blocks_small_m_persistent_t2(const PersistentShape&, int);
bool compiled_small_m_persistent_t1(const PersistentShape&);
bool compiled_small_m_persistent_t2(const PersistentShape&);
bool launch_small_m_persistent_t4(const SmallMPersistentParams&, const PersistentShape&, int, int, bool, cudaStream_t);
int blocks_small_m_persistent_t4(const PersistentShape&, int);
bool compiled_small_m_persistent_t4(const PersistentShape&);

bool small_m_compiled(int rows_tiles, int token_tiles, int warps, bool lean_ring) {
  switch (token_tiles) {
    case 1: return compiled_small_m_t1(rows_tiles, warps, lean_ring);
    case 2: return compiled_small_m_t2(rows_tiles, warps, lean_ring);
    case 4: return compiled_small_m_t4(rows_tiles, warps, lean_ring);
    case 8: return compiled_small_m_t8(rows_tiles, warps, lean_ring);
    default: return false;
  }
}

int small_m_blocks_per_sm(const SmallMShape& shape, int device) {
  switch (shape.token_tiles) {
    case 1: return blocks_small_m_t1(shape, device);
    case 2: return blocks_small_m_t2(shape, device);
    case 4: return blocks_small_m_t4(shape, device);
    case 8: return blocks_small_m_t8(shape, device);
    default: return 0;
  }
}

void launch_small_m(const SmallMParams& p, const SmallMShape& shape, int device, bool enable_pdl, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  bool launched = false;
  switch (shape.token_tiles) {
    case 1: launched = launch_small_m_t1(p, shape, device, enable_pdl, s); break;
    case 2: launched = launch_small_m_t2(p, shape, device, enable_pdl, s); break;
    case 4: launched = launch_small_m_t4(p, shape, device, enable_pdl, s); break;
    case 8: launched = launch_small_m_t8(p, shape, device, enable_pdl, s); break;
    default: break;
  }
  check::require(launched, "gemm::mm_bf16_fp4", "tactic", "name a compiled small-M kernel",
                 "R=" + std::to_string(shape.rows_tiles) + " T=" + std::to_string(shape.token_tiles) +
                     " W=" + std::to_string(shape.warps) + (shape.lean_ring ? " lean" : ""));
}

bool small_m_persistent_compiled(const PersistentShape& shape) {
  switch (shape.token_tiles) {
    case 1: return compiled_small_m_persistent_t1(shape);
    case 2: return compiled_small_m_persistent_t2(shape);
    case 4: return compiled_small_m_persistent_t4(shape);
    default: return false;
  }
}

int small_m_persistent_blocks_per_sm(const PersistentShape& shape, int device) {
  switch (shape.token_tiles) {
    case 1: return blocks_small_m_persistent_t1(shape, device);
    case 2: return blocks_small_m_persistent_t2(shape, device);
    case 4: return blocks_small_m_persistent_t4(shape, device);
    default: return 0;
  }
}

bool launch_small_m_persistent(const SmallMPersistentParams& p, const PersistentShape& shape, int ctas, int device,
                               bool enable_pdl, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (shape.token_tiles) {
    case 1: return launch_small_m_persistent_t1(p, shape, ctas, device, enable_pdl, s);
    case 2: return launch_small_m_persistent_t2(p, shape, ctas, device, enable_pdl, s);
    case 4: return launch_small_m_persistent_t4(p, shape, ctas, device, enable_pdl, s);
    default: return false;
  }
}

}  // namespace fastinfer::gemm::detail
