#pragma once
// `fastinfer check`: small self-tests of every op against the CPU reference backend.
// On a GPU each case runs the CUDA kernel and compares it with the reference; without one it
// cross-checks the CPU path against a second, independent reference (e.g. the fp64 token-serial
// GDN oracle against the fp32 chunked form the kernel mirrors).
#include <functional>
#include <string>
#include <vector>

#include "ref/host_tensor.h"

namespace fastinfer::cli {

struct CheckOutcome {
  bool passed = false;
  std::string detail;  // what was compared and how close, e.g. "output max abs 2.1e-03 (tol 5e-03)"
};

struct SelfCheck {
  std::string name;
  std::function<CheckOutcome()> run;
};

std::vector<SelfCheck> gdn_self_checks(bool on_gpu);
std::vector<SelfCheck> gemm_self_checks(bool on_gpu);

// Elementwise |got - want| <= atol + rtol |want| over all elements, with the largest difference
// and the relative L2 error, for the detail line.
struct Closeness {
  bool ok = true;
  double max_abs = 0;
  double rel_l2 = 0;
};
Closeness compare(const ref::HostTensor& got, const ref::HostTensor& want, double atol, double rtol);

// "<what> max abs 1.2e-03 rel l2 3.4e-04" for a detail line.
std::string describe(const char* what, const Closeness& c);

}  // namespace fastinfer::cli
