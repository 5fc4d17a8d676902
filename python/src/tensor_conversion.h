#pragma once
// Zero-copy conversion of the arrays Python passes (torch, numpy, anything with DLPack or the
// buffer protocol) into TensorViews, and of the `stream` argument into a Stream.
//
// Fast path: an array type that publishes DLPack's C exchange API (torch: the type attribute
// `__dlpack_c_exchange_api__`) is read by one C call per argument, without making a DLPack
// capsule or any other Python object. Every other array goes through nanobind's ndarray import
// (the Python-level `__dlpack__` / buffer protocol, ~2-3 us per torch tensor on the H200 host).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <array>
#include <cstdint>
#include <optional>

#include "fastinfer/context.h"
#include "fastinfer/tensor.h"

namespace fastinfer::python {

using Array = nanobind::ndarray<nanobind::device::none>;  // any device, dtype, shape, strides

// Converts one call's array arguments. Arrays that took the nanobind path are held until the
// converter is destroyed: declare it before any gil_scoped_release so that it is destroyed
// after the GIL is taken back.
class ArrayArgs {
 public:
  // Throws fastinfer::Error (TypeError) for objects that are not arrays and for dtypes or
  // devices fastinfer does not support; `name` (the argument) is only used in that message.
  TensorView view(nanobind::handle obj, const char* name);
  // None -> nullopt.
  std::optional<TensorView> optional_view(nanobind::handle obj, const char* name);

 private:
  static constexpr int kMaxHeld = 16;  // more arrays than any op takes
  std::array<std::optional<Array>, kMaxHeld> held_;  // optional: nothing built for the fast path
  int n_held_ = 0;
};

// The `stream` argument: an int handle (0 = legacy default stream), an object with a
// `cuda_stream` attribute (torch.cuda.Stream), or None: the current stream of the array
// framework of `like` on `like_view`'s device (torch: torch.cuda.current_stream(device)),
// nullptr for CPU arrays and for frameworks with no notion of a current stream.
Stream resolve_stream(nanobind::handle stream, nanobind::handle like, const TensorView& like_view);

// Off: every array takes the nanobind path (host-cost comparisons in python/bench only).
void set_fast_import(bool on);
bool fast_import_available(nanobind::handle obj);

}  // namespace fastinfer::python
