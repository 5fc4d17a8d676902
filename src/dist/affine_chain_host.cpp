// fp64 host mirror of the affine-chain kernel (affine_chain.h): same steps, same layout.
#include <vector>

#include "dist/affine_chain.h"

namespace fastinfer::dist::detail {

void affine_chain_host(const AffineChainHostArgs& a) {
  constexpr int D = 128;
  std::vector<double> x(2 * D * D), next(2 * D * D);
  const int parts = a.with_m ? 2 : 1;
  for (int n = 0; n < a.num_seqs; ++n) {
    for (int h = 0; h < a.num_heads; ++h) {
      const std::int64_t head = (static_cast<std::int64_t>(n) * a.num_heads + h) * D * D;
      // Part 0 (with_m) is M, starting at I; the last part is the state, starting at S_0.
      for (int i = 0; i < D * D; ++i) {
        if (a.with_m) x[i] = (i / D == i % D) ? 1.0 : 0.0;
        x[(parts - 1) * D * D + i] = a.init ? a.init[head + i] : 0.0;
      }
      for (int s = 0; s < a.steps[n]; ++s) {
        const double* m = a.step_m + n * a.seq_stride + s * a.step_stride + static_cast<std::int64_t>(h) * D * D;
        const double* b = a.step_b + n * a.seq_stride + s * a.step_stride + static_cast<std::int64_t>(h) * D * D;
        for (int row = 0; row < parts * D; ++row) {
          const bool state_row = row >= (parts - 1) * D;
          for (int j = 0; j < D; ++j) {
            double acc = state_row ? b[(row % D) * D + j] : 0.0;
            for (int k = 0; k < D; ++k) acc += x[row * D + k] * m[k * D + j];
            next[row * D + j] = acc;
          }
        }
        x.swap(next);
      }
      for (int i = 0; i < D * D; ++i) {
        if (a.with_m) a.out_m[head + i] = x[i];
        a.out_state[head + i] = x[(parts - 1) * D * D + i];
      }
    }
  }
}

}  // namespace fastinfer::dist::detail
