#include "ref/gemm_ref.h"

#include <vector>

#include "nvfp4/nvfp4_codec.h"
#include "ref/numeric.h"

namespace fastinfer::ref {

void mm_bf16_fp4(const TensorView& a, const TensorView& packed, const TensorView& scales_linear, float alpha,
                 const TensorView& out) {
  namespace codec = nvfp4::codec;
  const std::int64_t m_rows = a.size(0), k = a.size(1), n_rows = out.size(1);
  const auto* q = static_cast<const std::uint8_t*>(packed.data);
  const auto* sf = static_cast<const std::uint8_t*>(scales_linear.data);
  std::vector<double> a_all(static_cast<std::size_t>(m_rows * k));
  for (std::int64_t m = 0; m < m_rows; ++m)
    for (std::int64_t kk = 0; kk < k; ++kk) a_all[m * k + kk] = load(a, offset_of(a, m, kk));
  std::vector<double> w_row(static_cast<std::size_t>(k));
  std::vector<double> acc(static_cast<std::size_t>(m_rows * n_rows), 0.0);
  for (std::int64_t n = 0; n < n_rows; ++n) {
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const std::uint8_t byte = q[n * (k / 2) + kk / 2];
      const std::uint8_t code = (kk % 2 == 0) ? (byte & 0xf) : (byte >> 4);
      w_row[kk] = static_cast<double>(codec::e2m1_to_float(code)) *
                  codec::e4m3_to_float(sf[n * (k / codec::kBlock) + kk / codec::kBlock]);
    }
    for (std::int64_t m = 0; m < m_rows; ++m) {
      double s = 0.0;
      const double* a_row = &a_all[m * k];
      for (std::int64_t kk = 0; kk < k; ++kk) s += a_row[kk] * w_row[kk];
      acc[m * n_rows + n] = s;
    }
  }
  for (std::int64_t m = 0; m < m_rows; ++m)
    for (std::int64_t n = 0; n < n_rows; ++n) store(out, offset_of(out, m, n), acc[m * n_rows + n] * alpha);
}

}  // namespace fastinfer::ref
