#include <cstdio>

#include "demos.h"

namespace fastinfer::cli {

bool demo_gdn_prefill(bool) {
  std::printf("gdn_prefill: not implemented yet\n");
  return true;
}

}  // namespace fastinfer::cli
