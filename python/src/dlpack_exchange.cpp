#include "dlpack_exchange.h"

#include <array>

namespace fastinfer::python {

namespace {

const DlpackExchangeApi* read_api(PyObject* attr) {
  void* p = nullptr;
  if (PyCapsule_CheckExact(attr)) {
    p = PyCapsule_GetPointer(attr, PyCapsule_GetName(attr));
  } else if (PyLong_Check(attr)) {  // early drafts of the protocol published an int
    p = PyLong_AsVoidPtr(attr);
  }
  if (!p) {
    PyErr_Clear();
    return nullptr;
  }
  // Newer major versions chain their predecessors; this file knows major version 1.
  for (auto* h = static_cast<DlpackExchangeApiHeader*>(p); h; h = h->prev_api) {
    if (h->version.major == 1) return reinterpret_cast<const DlpackExchangeApi*>(h);
  }
  return nullptr;
}

const DlpackExchangeApi* look_up(PyTypeObject* type) {
  // The attribute's final name, then the name of the protocol's drafts.
  for (const char* name : {"__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"}) {
    PyObject* attr = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), name);
    if (!attr) {
      PyErr_Clear();
      continue;
    }
    const DlpackExchangeApi* api = read_api(attr);
    Py_DECREF(attr);
    if (api) return api;
  }
  return nullptr;
}

struct CacheEntry {
  PyTypeObject* type = nullptr;
  const DlpackExchangeApi* api = nullptr;
};

}  // namespace

const DlpackExchangeApi* exchange_api_of(PyTypeObject* type) {
  // A handful of array types per process (torch.Tensor, nn.Parameter, numpy.ndarray): a short
  // array scanned linearly. Cached types are kept alive so that their address stays theirs.
  static std::array<CacheEntry, 8> cache;
  for (const CacheEntry& e : cache) {
    if (e.type == type) return e.api;
    if (!e.type) break;
  }
  const DlpackExchangeApi* api = look_up(type);
  for (CacheEntry& e : cache) {
    if (!e.type) {
      Py_INCREF(reinterpret_cast<PyObject*>(type));
      e = {type, api};
      break;
    }
  }
  return api;  // a full cache only costs a look-up per call for the ninth type
}

}  // namespace fastinfer::python
