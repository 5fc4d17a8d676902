#include <cstdio>

#include "demos.h"

namespace fastinfer::cli {

bool demo_mm_bf16_fp4(bool) {
  std::printf("mm_bf16_fp4: not implemented yet\n");
  return true;
}

}  // namespace fastinfer::cli
