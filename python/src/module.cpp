// fastinfer._C: the nanobind extension. One file per area registers its functions; this file
// sets up the module, the error translation and the runtime functions.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <Python.h>

#include "bindings.h"
#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "fastinfer/version.h"
#include "fastinfer/workspace.h"
#include "python_args.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {
namespace {

nb::dict tensor_info(nb::handle array) {
  ArrayArgs arrays;
  const TensorView v = arrays.view(array, "array");
  nb::dict d;
  d["data_ptr"] = reinterpret_cast<std::uintptr_t>(v.data);
  d["dtype"] = std::string(dtype_name(v.dtype));
  d["shape"] = std::vector<std::int64_t>(v.shape.begin(), v.shape.begin() + v.ndim);
  d["strides"] = std::vector<std::int64_t>(v.strides.begin(), v.strides.begin() + v.ndim);
  d["device"] = to_string(v.device);
  return d;
}

nb::list devices() {
  nb::list out;
  for (int i = 0; i < cuda_device_count(); ++i) {
    const DeviceInfo& info = device_info(i);
    nb::dict d;
    d["index"] = info.index;
    d["name"] = info.name;
    d["sm_count"] = info.sm_count;
    d["l2_cache_bytes"] = info.l2_cache_bytes;
    d["smem_per_block_optin"] = info.smem_per_block_optin;
    d["compute_capability"] = nb::make_tuple(info.cc_major, info.cc_minor);
    d["total_memory_bytes"] = info.total_memory_bytes;
    out.append(d);
  }
  return out;
}

}  // namespace
}  // namespace fastinfer::python

NB_MODULE(_C, m) {
  using namespace fastinfer;
  m.doc() = "fastinfer C++ extension (use the `fastinfer` package)";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = e.kind() == Error::Kind::kType    ? PyExc_TypeError
                       : e.kind() == Error::Kind::kValue ? PyExc_ValueError
                                                         : PyExc_RuntimeError;
      PyErr_SetString(type, e.what());
    }
  });

  m.def("version", [] { return std::string(version()); });
  m.def("cuda_device_count", &cuda_device_count);
  m.def("devices", &python::devices, "Facts about every CUDA device (read once per device).");
  m.def("tensor_info", &python::tensor_info, nb::arg("array"),
        "How fastinfer sees an array (zero copy): data pointer, dtype, shape, strides, device.");
  m.def("reserve_workspace",
        [](int device, std::uintptr_t stream, const std::string& name, std::size_t bytes) {
          reserve_workspace(device, reinterpret_cast<Stream>(stream), name, bytes);
        },
        nb::arg("device"), nb::arg("stream"), nb::arg("name"), nb::arg("bytes"));
  m.def("release_all_workspaces", &release_all_workspaces);

  // Host-cost probes for python/bench/host_overhead.py (not part of the API).
  m.def("_set_fast_import", &python::set_fast_import, nb::arg("on"),
        "Off: arrays go through nanobind's DLPack import even where the C exchange API exists.");
  m.def("_fast_import_available", &python::fast_import_available, nb::arg("array"),
        "Whether the array's type publishes DLPack's C exchange API (the fast argument path).");
  m.def("_set_release_gil", &python::set_release_gil, nb::arg("on"),
        "Off: the ops keep the GIL while they launch (measures what releasing it costs).");
  m.def("_set_launch_repeat", &python::set_launch_repeat, nb::arg("n"),
        "Each op call runs its C++ call n times (1 = normal; n > 1 times the C++ host cost inside this process; 0 skips it).");
  m.def("_convert", [](nb::args arrays) {
    python::ArrayArgs converter;
    for (nb::handle a : arrays) (void)converter.view(a, "array");
    return arrays.size();
  }, "Converts each argument as an op would and returns their count.");
  m.def("_resolve_stream", [](nb::handle stream, nb::handle like) {
    python::ArrayArgs converter;
    return reinterpret_cast<std::uintptr_t>(python::resolve_stream(stream, like, converter.view(like, "like")));
  }, nb::arg("stream").none(), nb::arg("like"), "The stream an op on `like` would use.");

  python::register_op_bindings(m);
}
