#include <gtest/gtest.h>

#include "fastinfer/dlpack.h"
#include "fastinfer/error.h"

namespace fastinfer {
namespace {

TEST(DLPack, RoundTripKeepsEverything) {
  float storage[64];
  TensorView v = TensorView::strided(storage, DType::kFloat32, {2, 3, 4}, {16, 4, 1});
  DLTensor dl = to_dlpack(v);
  EXPECT_EQ(dl.ndim, 3);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  TensorView back = from_dlpack(dl);
  EXPECT_EQ(back.data, v.data);
  EXPECT_EQ(back.dtype, v.dtype);
  EXPECT_EQ(back.shape, v.shape);
  EXPECT_EQ(back.strides, v.strides);
  EXPECT_EQ(back.device, v.device);
}

TEST(DLPack, EveryDtypeAndCudaDevice) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt32, DType::kInt64,
                  DType::kUInt8}) {
    TensorView v = TensorView::contiguous(reinterpret_cast<void*>(0x100), t, {5}, Device::cuda(1));
    TensorView back = from_dlpack(to_dlpack(v));
    EXPECT_EQ(back.dtype, t) << dtype_name(t);
    EXPECT_EQ(back.device, Device::cuda(1));
  }
}

TEST(DLPack, NullStridesMeanRowMajorAndByteOffsetIsApplied) {
  std::int64_t shape[2] = {3, 5};
  alignas(8) char storage[64];
  DLTensor dl{};
  dl.data = storage;
  dl.device = {kDLCPU, 0};
  dl.ndim = 2;
  dl.dtype = {kDLBfloat, 16, 1};
  dl.shape = shape;
  dl.strides = nullptr;
  dl.byte_offset = 4;
  TensorView v = from_dlpack(dl);
  EXPECT_EQ(v.stride(0), 5);
  EXPECT_EQ(v.stride(1), 1);
  EXPECT_EQ(v.data, storage + 4);
  EXPECT_EQ(v.dtype, DType::kBFloat16);
}

TEST(DLPack, UnsupportedInputsAreTypeErrors) {
  std::int64_t shape[1] = {4};
  DLTensor dl{};
  dl.ndim = 1;
  dl.shape = shape;
  dl.device = {kDLCPU, 0};
  dl.dtype = {kDLComplex, 64, 1};
  try {
    from_dlpack(dl);
    FAIL() << "complex dtype accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kType);
    EXPECT_NE(std::string(e.what()).find("from_dlpack: dtype must be"), std::string::npos) << e.what();
  }
  dl.dtype = {kDLFloat, 32, 1};
  dl.device = {kDLVulkan, 0};
  EXPECT_THROW(from_dlpack(dl), Error);
  dl.device = {kDLCPU, 0};
  dl.byte_offset = 2;
  EXPECT_THROW(from_dlpack(dl), Error);
}

}  // namespace
}  // namespace fastinfer
