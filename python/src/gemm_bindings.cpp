// Bindings of the NVFP4 quantizer and mm_bf16_fp4. Prepared weights are an opaque, immutable
// Python object that owns its device memory.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>

#include "bindings.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
#include "python_args.h"
#include "tensor_conversion.h"

namespace nb = nanobind;

namespace fastinfer::python {

namespace {
nvfp4::ScaleLayout to_layout(bool swizzled) {
  return swizzled ? nvfp4::ScaleLayout::kSwizzled128x4 : nvfp4::ScaleLayout::kLinear;
}
}  // namespace

void register_gemm_bindings(nb::module_& m) {
  nb::class_<gemm::Bf16Fp4Weights>(m, "Bf16Fp4Weights")
      .def_prop_ro("n", &gemm::Bf16Fp4Weights::n)
      .def_prop_ro("k", &gemm::Bf16Fp4Weights::k)
      .def_prop_ro("alpha", &gemm::Bf16Fp4Weights::alpha)
      .def_prop_ro("device", [](const gemm::Bf16Fp4Weights& w) { return to_string(w.device()); });

  m.def("nvfp4_scale_bytes", [](std::int64_t n, std::int64_t k, bool swizzled) {
    return nvfp4::scale_bytes(n, k, to_layout(swizzled));
  });
  m.def("nvfp4_global_scale_for", &nvfp4::global_scale_for, nb::arg("amax"));
  m.def(
      "nvfp4_quantize",
      [](nb::handle w, float global_scale, nb::handle packed, nb::handle scales, bool swizzled, nb::handle stream) {
        ArrayArgs arrays;  // before the GIL release: destroyed with the GIL held
        const TensorView wv = arrays.view(w, "w"), pv = arrays.view(packed, "packed"),
                         sv = arrays.view(scales, "scales");
        const Stream s = resolve_stream(stream, w, wv);
        launch([&] { nvfp4::quantize(wv, global_scale, pv, sv, to_layout(swizzled), s); });
      },
      nb::arg("w"), nb::arg("global_scale"), nb::arg("packed"), nb::arg("scales"), nb::arg("swizzled"),
      nb::arg("stream").none());
  m.def(
      "nvfp4_dequantize",
      [](nb::handle packed, nb::handle scales, bool swizzled, float global_scale, nb::handle out, nb::handle stream) {
        ArrayArgs arrays;
        const TensorView pv = arrays.view(packed, "packed"), sv = arrays.view(scales, "scales"),
                         ov = arrays.view(out, "out");
        const Stream s = resolve_stream(stream, packed, pv);
        launch([&] { nvfp4::dequantize(pv, sv, to_layout(swizzled), global_scale, ov, s); });
      },
      nb::arg("packed"), nb::arg("scales"), nb::arg("swizzled"), nb::arg("global_scale"), nb::arg("out"),
      nb::arg("stream").none());
  m.def(
      "prepare_bf16_fp4_weights",
      [](nb::handle b, nb::handle b_descale, bool swizzled, float alpha, nb::handle stream) {
        ArrayArgs arrays;
        const TensorView bv = arrays.view(b, "b"), dv = arrays.view(b_descale, "b_descale");
        return gemm::prepare_bf16_fp4_weights(bv, dv, to_layout(swizzled), alpha, resolve_stream(stream, b, bv));
      },
      nb::arg("b"), nb::arg("b_descale"), nb::arg("swizzled"), nb::arg("alpha"), nb::arg("stream").none());
  m.def(
      "mm_bf16_fp4",
      [](nb::handle a, const gemm::Bf16Fp4Weights& weights, nb::handle out, bool enable_pdl, nb::handle stream) {
        ArrayArgs arrays;
        const TensorView av = arrays.view(a, "a"), ov = arrays.view(out, "out");
        const Stream s = resolve_stream(stream, a, av);
        launch([&] { gemm::mm_bf16_fp4(av, weights, ov, s, enable_pdl); });
      },
      nb::arg("a"), nb::arg("weights"), nb::arg("out"), nb::arg("enable_pdl"), nb::arg("stream").none());
}

}  // namespace fastinfer::python
