#include "python_args.h"

#include <nanobind/stl/string.h>

#include <string>

namespace nb = nanobind;

namespace fastinfer::python {

bool truthy(nb::handle obj) {
  const int r = PyObject_IsTrue(obj.ptr());
  if (r < 0) throw nb::python_error();
  return r != 0;
}

float to_float(nb::handle obj, float if_none) {
  if (obj.is_none()) return if_none;
  const double d = PyFloat_AsDouble(obj.ptr());
  if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return static_cast<float>(d);
}

std::int64_t to_int(nb::handle obj) {
  const long long v = PyLong_AsLongLong(obj.ptr());
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

namespace {

bool g_release_gil = true;
int g_launch_repeat = 1;

// fastinfer.ops' allocation helpers, looked up once (the module is imported by then: the package
// imports it right after the extension). Leaked on purpose: no decref after interpreter exit.
nb::handle ops_helper(const char* name) {
  nb::object helper = nb::module_::import_("fastinfer.ops").attr(name);
  return helper.release();
}

}  // namespace

LaunchGilRelease::LaunchGilRelease() {
  if (g_release_gil) state_ = PyEval_SaveThread();
}

LaunchGilRelease::~LaunchGilRelease() {
  if (state_) PyEval_RestoreThread(state_);
}

void set_release_gil(bool on) { g_release_gil = on; }

int launch_repeat() { return g_launch_repeat; }

void set_launch_repeat(int n) {
  if (n < 0)
    throw nb::value_error(("fastinfer._C._set_launch_repeat: n must be at least 0, got " + std::to_string(n)).c_str());
  g_launch_repeat = n;
}

nb::object empty_like(nb::handle like, std::initializer_list<std::int64_t> shape, nb::handle dtype) {
  static const nb::handle empty = ops_helper("_empty");
  nb::list dims;
  for (std::int64_t d : shape) dims.append(d);
  nb::object t = nb::tuple(dims);
  if (dtype.is_none()) return nb::borrow(empty)(like, t);
  return nb::borrow(empty)(like, t, dtype);
}

nb::object dtype_named(nb::handle like, const char* name) {
  static const nb::handle dtype = ops_helper("_dtype");
  return nb::borrow(dtype)(like, name);
}

nb::object arange_int32(nb::handle like, std::int64_t n) {
  static const nb::handle arange = ops_helper("_arange_int32");
  return nb::borrow(arange)(like, n);
}

}  // namespace fastinfer::python
