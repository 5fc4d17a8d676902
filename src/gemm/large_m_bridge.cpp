#include "gemm/large_m_bridge.h"

#include "runtime/check.h"

namespace fastinfer::gemm::detail {

#if defined(FASTINFER_WITH_LARGE_M)
std::span<const LargeMConfig> large_configs() { return large_m_configs(); }
bool large_can_implement(const LargeMParams& p, const LargeMConfig& c) { return can_implement(p, c); }
std::size_t large_workspace_bytes(const LargeMParams& p, const LargeMConfig& c) { return workspace_bytes(p, c); }
void large_run(const LargeMParams& p, const LargeMConfig& c, void* workspace, Stream stream) {
  run_large_m(p, c, workspace, stream);
}
#else
std::span<const LargeMConfig> large_configs() { return {}; }
bool large_can_implement(const LargeMParams&, const LargeMConfig&) { return false; }
std::size_t large_workspace_bytes(const LargeMParams&, const LargeMConfig&) { return 0; }
void large_run(const LargeMParams&, const LargeMConfig&, void*, Stream) {
  check::fail("gemm::mm_bf16_fp4", "tactic", "be compiled in", "a large-M tactic in a build without it",
              Error::Kind::kRuntime);
}
#endif

}  // namespace fastinfer::gemm::detail
