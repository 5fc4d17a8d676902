#pragma once
// DLPack 1.3's C exchange API (the function table an array type publishes as the type attribute
// `__dlpack_c_exchange_api__`, a PyCapsule named "dlpack_exchange_api"), declared here because
// the dlpack.h that the build uses predates it. Layout as in dlpack.h 1.3 (major version 1).
#include <Python.h>
#include <dlpack/dlpack.h>

#include <cstdint>

namespace fastinfer::python {

struct DlpackApiVersion {
  std::uint32_t major;
  std::uint32_t minor;
};

struct DlpackExchangeApiHeader {
  DlpackApiVersion version;
  DlpackExchangeApiHeader* prev_api;  // an older version of the table, or null
};

struct DlpackExchangeApi {
  DlpackExchangeApiHeader header;
  void* managed_tensor_allocator;               // unused here
  void* managed_tensor_from_py_object_no_sync;  // unused here
  void* managed_tensor_to_py_object_no_sync;    // unused here
  // Fills `out` with views of the object's own shape/strides (valid while the object lives and
  // is unchanged); 0 on success, -1 with a Python exception set. Optional (may be null).
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  // The framework's current stream on a device (torch: torch.cuda.current_stream); 0 / -1.
  int (*current_work_stream)(DLDeviceType device_type, std::int32_t device_id, void** out_stream);
};

// The table of `type`, or null when it publishes none (or one of another major version).
// Looked up once per type and cached; the GIL must be held.
const DlpackExchangeApi* exchange_api_of(PyTypeObject* type);

}  // namespace fastinfer::python
