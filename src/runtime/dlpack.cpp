#include "fastinfer/dlpack.h"

#include "runtime/check.h"

namespace fastinfer {

namespace {

constexpr const char* kOp = "from_dlpack";

DType dtype_from_dlpack(DLDataType t) {
  if (t.lanes != 1) check::fail(kOp, "dtype.lanes", "be 1", std::to_string(t.lanes), Error::Kind::kType);
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 16) return DType::kFloat16;
      if (t.bits == 64) return DType::kFloat64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::kBFloat16;
      break;
    case kDLInt:
      if (t.bits == 32) return DType::kInt32;
      if (t.bits == 64) return DType::kInt64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::kUInt8;
      break;
    default: break;
  }
  check::fail(kOp, "dtype", "be float32/16/64, bfloat16, int32/64 or uint8",
              "code " + std::to_string(t.code) + " with " + std::to_string(t.bits) + " bits", Error::Kind::kType);
}

DLDataType dtype_to_dlpack(DType t) {
  switch (t) {
    case DType::kFloat32: return {kDLFloat, 32, 1};
    case DType::kFloat16: return {kDLFloat, 16, 1};
    case DType::kFloat64: return {kDLFloat, 64, 1};
    case DType::kBFloat16: return {kDLBfloat, 16, 1};
    case DType::kInt32: return {kDLInt, 32, 1};
    case DType::kInt64: return {kDLInt, 64, 1};
    // DLPack 0.6 has no fp8 codes; fp8 tensors travel as raw bytes.
    case DType::kUInt8:
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2: return {kDLUInt, 8, 1};
  }
  return {kDLUInt, 8, 1};
}

}  // namespace

TensorView from_dlpack(const DLTensor& t) {
  TensorView v;
  v.dtype = dtype_from_dlpack(t.dtype);
  if (t.ndim < 0 || t.ndim > kMaxDims) {
    check::fail(kOp, "ndim", "be in [0, " + std::to_string(kMaxDims) + "]", std::to_string(t.ndim));
  }
  if (t.device.device_type == kDLCPU) {
    v.device = Device::cpu();
  } else if (t.device.device_type == kDLCUDA) {
    v.device = Device::cuda(t.device.device_id);
  } else {
    check::fail(kOp, "device", "be CPU or CUDA", "device type " + std::to_string(t.device.device_type),
                Error::Kind::kType);
  }
  const auto elem = static_cast<std::uint64_t>(dtype_size(v.dtype));
  if (t.byte_offset % elem != 0) {
    check::fail(kOp, "byte_offset", "be a multiple of the element size " + std::to_string(elem),
                std::to_string(t.byte_offset));
  }
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.ndim = t.ndim;
  std::int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    v.shape[d] = t.shape[d];
    v.strides[d] = t.strides != nullptr ? t.strides[d] : stride;  // null strides: row-major
    stride *= t.shape[d];
  }
  return v;
}

DLTensor to_dlpack(TensorView& view) {
  DLTensor t{};
  t.data = view.data;
  t.device = view.device.is_cuda() ? DLDevice{kDLCUDA, view.device.index} : DLDevice{kDLCPU, 0};
  t.ndim = view.ndim;
  t.dtype = dtype_to_dlpack(view.dtype);
  t.shape = view.shape.data();
  t.strides = view.strides.data();
  t.byte_offset = 0;
  return t;
}

}  // namespace fastinfer
