// CPU test of the producer's triangular inverse (src/gdn/kernels/prefill_fast_inverse.cuh): its
// phases replayed thread by thread on the host (the barriers between phases make that exact)
// against a double-precision forward substitution, on random strictly lower A0-like tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gdn/kernels/prefill_fast_inverse.cuh"

namespace fastinfer::testing {
namespace {

using gdn::kernels::fast::FastInverse;

template <class Phase>
void for_each_thread(Phase phase) {
  for (int ptid = 0; ptid < FastInverse::kThreads; ++ptid) phase(ptid);
}

TEST(GdnPrefillFastInverse, MatchesForwardSubstitution) {
  constexpr int n = FastInverse::kSize, pitch = FastInverse::kPitch;
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    // A0 = strict_lower(diag(beta) K K^T) of unit-norm keys: entries in [-1, 1], like the kernel's.
    std::uniform_real_distribution<double> u(-1.0, 1.0), b(0.05, 1.0);
    std::vector<std::vector<double>> k(n, std::vector<double>(16));
    for (auto& row : k) {
      double norm = 0;
      for (double& x : row) x = u(rng), norm += x * x;
      for (double& x : row) x /= std::sqrt(norm);
    }
    const int len = trial % 4 == 3 ? 37 : n;  // a short chunk: padded rows are zero
    std::vector<float> a(n * pitch, 0.0f), inverse(n * pitch, NAN), scratch(16 * FastInverse::kScratchPitch, NAN);
    for (int t = 0; t < len; ++t) {
      const double beta = b(rng);
      for (int j = 0; j < t; ++j) {
        double dot = 0;
        for (int d = 0; d < 16; ++d) dot += k[t][d] * k[j][d];
        a[t * pitch + j] = static_cast<float>(beta * dot);
      }
    }
    for_each_thread([&](int p) { FastInverse::diagonal(a.data(), inverse.data(), p); });
    for_each_thread([&](int p) { FastInverse::partial<1>(a.data(), inverse.data(), scratch.data(), p); });
    for_each_thread([&](int p) { FastInverse::apply<1>(inverse.data(), scratch.data(), p); });
    for_each_thread([&](int p) { FastInverse::partial<2>(a.data(), inverse.data(), scratch.data(), p); });
    for_each_thread([&](int p) { FastInverse::apply<2>(inverse.data(), scratch.data(), p); });
    for_each_thread([&](int p) { FastInverse::partial<3>(a.data(), inverse.data(), scratch.data(), p); });
    for_each_thread([&](int p) { FastInverse::apply<3>(inverse.data(), scratch.data(), p); });
    // Reference: column-wise forward substitution in double.
    double max_err = 0, max_ref = 0;
    for (int c = 0; c < n; ++c) {
      std::vector<double> x(n, 0.0);
      for (int i = 0; i < n; ++i) {
        double s = i == c ? 1.0 : 0.0;
        for (int j = 0; j < i; ++j) s -= a[i * pitch + j] * x[j];
        x[i] = s;
      }
      for (int i = c; i < n; ++i) {  // the lower triangle incl. the diagonal is what the kernel reads
        const double got = inverse[i * pitch + c];
        ASSERT_FALSE(std::isnan(got)) << "unwritten T[" << i << "][" << c << "]";
        max_err = std::max(max_err, std::fabs(got - x[i]));
        max_ref = std::max(max_ref, std::fabs(x[i]));
      }
    }
    EXPECT_LE(max_err, 1e-5 * std::max(1.0, max_ref)) << "trial " << trial << " (max |T| " << max_ref << ")";
  }
}

}  // namespace
}  // namespace fastinfer::testing
