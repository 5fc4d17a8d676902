#pragma once
// Helpers for the ops whose public Python function is the extension function itself (no Python
// wrapper between the caller and C++: a wrapper with FlashInfer's 16-19 keyword arguments cost
// ~1.3 us per call on the H200 host). Scalars are read as Python would read them, and outputs
// that are not given are allocated by fastinfer/ops.py's helpers (torch.empty / numpy.empty).
#include <nanobind/nanobind.h>

#include <cstdint>
#include <initializer_list>

namespace fastinfer::python {

// bool(obj), float(obj) (None -> `if_none`), int(obj), as the former Python wrappers did.
bool truthy(nanobind::handle obj);
float to_float(nanobind::handle obj, float if_none);
std::int64_t to_int(nanobind::handle obj);

// Releases the GIL around an op's launch (other Python threads run meanwhile), unless the
// host-cost probe _C._set_release_gil(False) turned that off. Declare it after every object that
// needs the GIL to be destroyed.
class LaunchGilRelease {
 public:
  LaunchGilRelease();
  ~LaunchGilRelease();
  LaunchGilRelease(const LaunchGilRelease&) = delete;
  LaunchGilRelease& operator=(const LaunchGilRelease&) = delete;

 private:
  PyThreadState* state_ = nullptr;
};
void set_release_gil(bool on);

// How many times launch() runs an op's C++ call: 1, except under the host-cost probe
// _C._set_launch_repeat(n), which times the C++ call inside the Python process (n > 1) and the
// call without it (n = 0: conversions, allocation and GIL release only); see
// python/bench/host_overhead.py.
int launch_repeat();
void set_launch_repeat(int n);

// Runs an op's C++ call with the GIL released (launch_repeat() times).
template <class Call>
void launch(Call&& call) {
  const int repeat = launch_repeat();
  LaunchGilRelease release;
  for (int i = 0; i < repeat; ++i) call();
}

// An uninitialised array of `shape` with the library and device of `like`; dtype: `dtype` (a
// dtype object of like's library), like's own when None.
nanobind::object empty_like(nanobind::handle like, std::initializer_list<std::int64_t> shape,
                            nanobind::handle dtype = nanobind::none());
// The dtype called `name` ("float32", "uint8", ...) in the library of `like`.
nanobind::object dtype_named(nanobind::handle like, const char* name);
// arange(n) as int32, with the library and device of `like`.
nanobind::object arange_int32(nanobind::handle like, std::int64_t n);

}  // namespace fastinfer::python
