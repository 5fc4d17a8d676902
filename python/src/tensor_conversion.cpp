#include "tensor_conversion.h"

#include <dlpack/dlpack.h>

#include <string>

#include "dlpack_exchange.h"
#include "fastinfer/dlpack.h"
#include "fastinfer/error.h"

namespace nb = nanobind;

namespace fastinfer::python {

namespace {

bool g_fast_import = true;

TensorView from_ndarray(const Array& a) {
  // nanobind exposes the DLPack fields; reuse the one DLTensor -> TensorView conversion.
  std::int64_t shape[kMaxDims], strides[kMaxDims];
  const int ndim = static_cast<int>(a.ndim());
  for (int d = 0; d < ndim && d < kMaxDims; ++d) {
    shape[d] = static_cast<std::int64_t>(a.shape(d));
    strides[d] = static_cast<std::int64_t>(a.stride(d));
  }
  DLTensor t{};
  t.data = const_cast<void*>(a.data());
  t.device = {static_cast<DLDeviceType>(a.device_type()), a.device_id()};
  t.ndim = ndim;
  const nb::dlpack::dtype dt = a.dtype();
  t.dtype = {dt.code, dt.bits, dt.lanes};
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return from_dlpack(t);
}

[[noreturn]] void throw_not_an_array(nb::handle obj, const char* name) {
  throw Error(Error::Kind::kType, std::string("fastinfer: ") + name +
                                      " must be an array (torch tensor, numpy array or DLPack-capable object), got " +
                                      nb::type_name(obj.type()).c_str());
}

// torch builds that predate the exchange API: torch's own C accessor of the current stream.
Stream torch_current_stream(int device_index) {
  static nb::object get_raw_stream = [] {
    nb::object c = nb::module_::import_("torch").attr("_C");
    return nb::getattr(c, "_cuda_getCurrentRawStream", nb::none());
  }();
  if (get_raw_stream.is_none()) return nullptr;
  return reinterpret_cast<Stream>(nb::cast<std::uintptr_t>(get_raw_stream(device_index)));
}

}  // namespace

TensorView ArrayArgs::view(nb::handle obj, const char* name) {
  if (g_fast_import) {
    if (const DlpackExchangeApi* api = exchange_api_of(Py_TYPE(obj.ptr()));
        api && api->dltensor_from_py_object_no_sync) {
      DLTensor t{};
      if (api->dltensor_from_py_object_no_sync(obj.ptr(), &t) != 0) throw nb::python_error();
      return from_dlpack(t);
    }
  }
  if (n_held_ == kMaxHeld) throw Error(Error::Kind::kRuntime, "fastinfer: too many array arguments");
  std::optional<Array>& a = held_[n_held_];
  a.emplace();
  if (!nb::try_cast<Array>(obj, *a, /*convert=*/false)) throw_not_an_array(obj, name);
  ++n_held_;
  return from_ndarray(*a);
}

std::optional<TensorView> ArrayArgs::optional_view(nb::handle obj, const char* name) {
  if (obj.is_none()) return std::nullopt;
  return view(obj, name);
}

Stream resolve_stream(nb::handle stream, nb::handle like, const TensorView& like_view) {
  if (!stream.is_none()) {
    nb::handle handle = stream;
    nb::object attr;
    if (!PyLong_Check(stream.ptr())) {
      attr = nb::getattr(stream, "cuda_stream", nb::none());
      if (attr.is_none() || !PyLong_Check(attr.ptr()))
        throw Error(Error::Kind::kType, "fastinfer: stream must be an int handle, an object with .cuda_stream, or None");
      handle = attr;
    }
    void* p = PyLong_AsVoidPtr(handle.ptr());
    if (!p && PyErr_Occurred()) throw nb::python_error();
    return static_cast<Stream>(p);
  }
  if (!like_view.device.is_cuda()) return nullptr;
  const DlpackExchangeApi* api = exchange_api_of(Py_TYPE(like.ptr()));
  if (api && api->current_work_stream) {
    void* s = nullptr;
    if (api->current_work_stream(kDLCUDA, like_view.device.index, &s) != 0) throw nb::python_error();
    return static_cast<Stream>(s);
  }
  const std::string module = nb::cast<std::string>(nb::getattr(like.type(), "__module__", nb::str("")));
  if (module.rfind("torch", 0) == 0) return torch_current_stream(like_view.device.index);
  return nullptr;  // a framework with no current stream known here: the legacy default stream
}

void set_fast_import(bool on) { g_fast_import = on; }

bool fast_import_available(nb::handle obj) {
  const DlpackExchangeApi* api = exchange_api_of(Py_TYPE(obj.ptr()));
  return api && api->dltensor_from_py_object_no_sync;
}

}  // namespace fastinfer::python
