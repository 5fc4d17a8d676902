#include "self_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fastinfer::cli {

Closeness compare(const ref::HostTensor& got, const ref::HostTensor& want, double atol, double rtol) {
  Closeness c;
  double err = 0, norm = 0;
  for (std::int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.get(i), w = want.get(i), d = std::fabs(g - w);
    c.ok = c.ok && d <= atol + rtol * std::fabs(w);  // NaN in `got` fails here
    c.max_abs = std::max(c.max_abs, d);
    err += d * d;
    norm += w * w;
  }
  c.rel_l2 = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  return c;
}

std::string describe(const char* what, const Closeness& c) {
  char line[160];
  std::snprintf(line, sizeof line, "%s max abs %.1e rel l2 %.1e", what, c.max_abs, c.rel_l2);
  return line;
}

}  // namespace fastinfer::cli
