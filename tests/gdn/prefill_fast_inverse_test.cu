// CPU tests of the prefill kernel's host-testable parts: the producer's triangular inverse
// (src/gdn/kernels/prefill_fast_inverse.cuh), its phases replayed thread by thread on the host
// (the barriers between phases make that exact) against a double-precision forward substitution
// on random strictly lower A0-like tiles; and the chunk table of precomputed inverses
// (prefill_fast_chunk_rows.cuh) against the row rule the kernel reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gdn/kernels/prefill_fast_chunk_rows.cuh"
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

// Every chunk c of every sequence n gets row key(n) + c = cu[n] / 64 + n + c with exactly its
// token bounds; rows between sequences are empty; the offsets are a valid cu_seqlens.
TEST(GdnPrefillChunkRows, EveryChunkHasItsRowAndBounds) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40);
    std::vector<std::int64_t> cu(n + 1, 0);
    for (int i = 0; i < n; ++i) {
      const int kind = static_cast<int>(rng() % 6);
      const std::int64_t len = kind == 0 ? 0 : kind == 1 ? 64 * (1 + rng() % 3) : kind == 2 ? 1 : 1 + rng() % 300;
      cu[i + 1] = cu[i] + len;
    }
    const std::int64_t total = cu[n], rows = total / 64 + n;
    const auto offset = [&](int i) { return cu[i]; };
    std::vector<std::int64_t> offsets(rows + 1);
    for (std::int64_t x = 0; x <= rows; ++x) offsets[x] = gdn::kernels::fast::chunk_row_offset(offset, n, total, x);
    for (std::int64_t x = 0; x < rows; ++x) {
      ASSERT_LE(offsets[x], offsets[x + 1]) << "trial " << trial << " row " << x;
      ASSERT_LE(offsets[x + 1] - offsets[x], 64) << "trial " << trial << " row " << x;
    }
    ASSERT_GE(offsets[0], 0);
    ASSERT_LE(offsets[rows], total);
    std::int64_t covered = 0;
    for (int s = 0; s < n; ++s)
      for (std::int64_t c = 0; cu[s] + 64 * c < cu[s + 1]; ++c) {
        const std::int64_t x = cu[s] / 64 + s + c;
        ASSERT_LT(x, rows) << "trial " << trial;
        EXPECT_EQ(offsets[x], cu[s] + 64 * c) << "trial " << trial << " seq " << s << " chunk " << c;
        EXPECT_EQ(offsets[x + 1], std::min(cu[s] + 64 * (c + 1), cu[s + 1])) << "trial " << trial << " seq " << s;
        covered += offsets[x + 1] - offsets[x];
      }
    EXPECT_EQ(covered, total) << "trial " << trial;  // so every other row is empty
  }
}

}  // namespace
}  // namespace fastinfer::testing
