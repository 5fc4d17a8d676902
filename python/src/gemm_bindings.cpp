// nvfp4_quantize / nvfp4_dequantize / prepare_bf16_fp4_weights / mm_bf16_fp4 (FlashInfer's names
// and argument conventions). The public functions are these, with no Python wrapper in front
// (host cost: a wrapper's call and keyword handling cost ~1 us). Prepared weights are an opaque,
// immutable Python object that owns its device memory.
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

// Dimension d of a view, or 1 where the view has too few dimensions (the op then names the bad
// shape; the allocation only has to succeed).
std::int64_t dim_or_one(const TensorView& v, int d) { return v.ndim > d ? v.shape[d] : 1; }

nb::object quantize(nb::handle w, nb::handle global_scale, nb::handle swizzled, nb::handle packed, nb::handle scales,
                    nb::handle stream) {
  ArrayArgs arrays;  // before the GIL release: destroyed with the GIL held
  const TensorView wv = arrays.view(w, "w");
  const bool swz = truthy(swizzled);
  const std::int64_t n = dim_or_one(wv, 0), k = dim_or_one(wv, 1);
  nb::object p = nb::borrow(packed), sc = nb::borrow(scales);
  if (p.is_none()) p = empty_like(w, {n, k / 2}, dtype_named(w, "uint8"));
  if (sc.is_none()) sc = empty_like(w, {nvfp4::scale_bytes(n, k, to_layout(swz))}, dtype_named(w, "uint8"));
  const TensorView pv = arrays.view(p, "packed"), sv = arrays.view(sc, "scales");
  const float g = to_float(global_scale, 0.0f);
  const Stream s = resolve_stream(stream, w, wv);
  launch([&] { nvfp4::quantize(wv, g, pv, sv, to_layout(swz), s); });
  return nb::make_tuple(p, sc);
}

nb::object dequantize(nb::handle packed, nb::handle scales, nb::handle global_scale, nb::handle swizzled,
                      nb::handle out, nb::handle dtype, nb::handle stream) {
  ArrayArgs arrays;
  const TensorView pv = arrays.view(packed, "packed"), sv = arrays.view(scales, "scales");
  nb::object o = nb::borrow(out);
  if (o.is_none()) {
    o = empty_like(packed, {dim_or_one(pv, 0), 2 * dim_or_one(pv, 1)},
                   dtype.is_none() ? dtype_named(packed, "float32") : nb::borrow(dtype));
  }
  const TensorView ov = arrays.view(o, "out");
  const float g = to_float(global_scale, 0.0f);
  const Stream s = resolve_stream(stream, packed, pv);
  launch([&] { nvfp4::dequantize(pv, sv, to_layout(truthy(swizzled)), g, ov, s); });
  return o;
}

std::shared_ptr<const gemm::Bf16Fp4Weights> prepare(nb::handle b, nb::handle b_descale, nb::handle alpha,
                                                    nb::handle swizzled, nb::handle stream) {
  ArrayArgs arrays;
  const TensorView bv = arrays.view(b, "b"), dv = arrays.view(b_descale, "b_descale");
  return gemm::prepare_bf16_fp4_weights(bv, dv, to_layout(truthy(swizzled)), to_float(alpha, 1.0f),
                                        resolve_stream(stream, b, bv));
}

nb::object mm(nb::handle a, const gemm::Bf16Fp4Weights& weights, nb::handle out, nb::handle out_dtype,
              nb::handle enable_pdl, nb::handle stream) {
  ArrayArgs arrays;
  const TensorView av = arrays.view(a, "a");
  nb::object o = nb::borrow(out);
  if (o.is_none()) o = empty_like(a, {dim_or_one(av, 0), weights.n()}, out_dtype);
  const TensorView ov = arrays.view(o, "out");
  const bool pdl = truthy(enable_pdl);
  const Stream s = resolve_stream(stream, a, av);
  launch([&] { gemm::mm_bf16_fp4(av, weights, ov, s, pdl); });
  return o;
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
  m.def("nvfp4_quantize", &quantize, nb::arg("w"), nb::arg("global_scale"), nb::arg("swizzled").none() = true,
        nb::arg("packed").none() = nb::none(), nb::arg("scales").none() = nb::none(),
        nb::arg("stream").none() = nb::none(),
        "NVFP4 quantization (FlashInfer's nvfp4 format) of w [N, K]: returns (packed [N, K/2] uint8, e4m3\n"
        "scales as uint8), allocated when not given.");
  m.def("nvfp4_dequantize", &dequantize, nb::arg("packed"), nb::arg("scales"), nb::arg("global_scale"),
        nb::arg("swizzled").none() = true, nb::arg("out").none() = nb::none(), nb::arg("dtype").none() = nb::none(),
        nb::arg("stream").none() = nb::none(),
        "out [N, K] = e2m1(packed) * float(scale) / global_scale (dtype: float32 unless given).");
  m.def("prepare_bf16_fp4_weights", &prepare, nb::arg("b"), nb::arg("b_descale"), nb::arg("alpha"),
        nb::arg("swizzled").none() = true, nb::arg("stream").none() = nb::none(),
        "One-time repack of NVFP4 weights b [N, K/2] uint8 with e4m3 scales for mm_bf16_fp4.");
  m.def("mm_bf16_fp4", &mm, nb::arg("a"), nb::arg("weights"), nb::arg("out").none() = nb::none(),
        nb::arg("out_dtype").none() = nb::none(), nb::arg("enable_pdl").none() = false,
        nb::arg("stream").none() = nb::none(),
        "out [M, N] = alpha * (a [M, K] bf16 @ dequant(W)^T), W prepared by prepare_bf16_fp4_weights.");
}

}  // namespace fastinfer::python
