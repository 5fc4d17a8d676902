#include <cstdio>

#include "demos.h"

namespace fastinfer::cli {

bool demo_gdn_decode(bool) {
  std::printf("gdn_decode: not implemented yet\n");
  return true;
}

}  // namespace fastinfer::cli
