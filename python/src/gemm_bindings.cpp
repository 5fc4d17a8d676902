// Bindings of the NVFP4 quantizer and mm_bf16_fp4. Prepared weights are an opaque, immutable
// Python object that owns its device memory.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>

#include "bindings.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
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
      [](const Array& w, float global_scale, const Array& packed, const Array& scales, bool swizzled,
         std::uintptr_t stream) {
        const TensorView wv = to_view(w), pv = to_view(packed), sv = to_view(scales);
        nb::gil_scoped_release release;
        nvfp4::quantize(wv, global_scale, pv, sv, to_layout(swizzled), to_stream(stream));
      },
      nb::arg("w"), nb::arg("global_scale"), nb::arg("packed"), nb::arg("scales"), nb::arg("swizzled"),
      nb::arg("stream"));
  m.def(
      "nvfp4_dequantize",
      [](const Array& packed, const Array& scales, bool swizzled, float global_scale, const Array& out,
         std::uintptr_t stream) {
        const TensorView pv = to_view(packed), sv = to_view(scales), ov = to_view(out);
        nb::gil_scoped_release release;
        nvfp4::dequantize(pv, sv, to_layout(swizzled), global_scale, ov, to_stream(stream));
      },
      nb::arg("packed"), nb::arg("scales"), nb::arg("swizzled"), nb::arg("global_scale"), nb::arg("out"),
      nb::arg("stream"));
  m.def(
      "prepare_bf16_fp4_weights",
      [](const Array& b, const Array& b_descale, bool swizzled, float alpha, std::uintptr_t stream) {
        return gemm::prepare_bf16_fp4_weights(to_view(b), to_view(b_descale), to_layout(swizzled), alpha,
                                              to_stream(stream));
      },
      nb::arg("b"), nb::arg("b_descale"), nb::arg("swizzled"), nb::arg("alpha"), nb::arg("stream"));
  m.def(
      "mm_bf16_fp4",
      [](const Array& a, const gemm::Bf16Fp4Weights& weights, const Array& out, bool enable_pdl,
         std::uintptr_t stream) {
        const TensorView av = to_view(a), ov = to_view(out);
        nb::gil_scoped_release release;
        gemm::mm_bf16_fp4(av, weights, ov, to_stream(stream), enable_pdl);
      },
      nb::arg("a"), nb::arg("weights"), nb::arg("out"), nb::arg("enable_pdl"), nb::arg("stream"));
}

}  // namespace fastinfer::python
