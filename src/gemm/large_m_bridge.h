#pragma once
// The large-M path (gemm/large_m.h, owned by the large-M work) as seen by the runner. Builds
// without that path compiled in (FASTINFER_WITH_LARGE_M unset) see no large-M configs.
#include <cstddef>
#include <span>

#include "gemm/large_m.h"

namespace fastinfer::gemm::detail {

std::span<const LargeMConfig> large_configs();
bool large_can_implement(const LargeMParams& p, const LargeMConfig& c);
std::size_t large_workspace_bytes(const LargeMParams& p, const LargeMConfig& c);
void large_run(const LargeMParams& p, const LargeMConfig& c, void* workspace, Stream stream);

}  // namespace fastinfer::gemm::detail
