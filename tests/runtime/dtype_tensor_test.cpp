#include <gtest/gtest.h>

#include "fastinfer/error.h"
#include "fastinfer/tensor.h"
#include "ref/host_tensor.h"

namespace fastinfer {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kInt64), 8u);
  EXPECT_EQ(dtype_size(DType::kFloat8E4M3), 1u);
  EXPECT_EQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::kFloat8E4M3), "float8_e4m3fn");
  EXPECT_TRUE(is_floating(DType::kFloat16));
  EXPECT_FALSE(is_floating(DType::kInt32));
}

TEST(TensorView, ContiguousStridesAndHelpers) {
  TensorView t = TensorView::contiguous(reinterpret_cast<void*>(0x1000), DType::kBFloat16, {4, 16, 128});
  EXPECT_EQ(t.ndim, 3);
  EXPECT_EQ(t.stride(0), 16 * 128);
  EXPECT_EQ(t.stride(1), 128);
  EXPECT_EQ(t.stride(-1), 1);
  EXPECT_EQ(t.size(-1), 128);
  EXPECT_EQ(t.numel(), 4 * 16 * 128);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.span_bytes(), 4 * 16 * 128 * 2);
  EXPECT_EQ(t.shape_string(), "[4, 16, 128]");
}

TEST(TensorView, PaddedFirstDimensionIsNotContiguousButLastDimIs) {
  TensorView t = TensorView::strided(nullptr, DType::kFloat32, {3, 8}, {10, 1});
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.is_last_dim_contiguous());
  EXPECT_EQ(t.span_bytes(), (2 * 10 + 7 + 1) * 4);
  TensorView u = TensorView::strided(nullptr, DType::kFloat32, {3, 8}, {1, 3});
  EXPECT_FALSE(u.is_last_dim_contiguous());
}

TEST(TensorView, SizeOneDimensionsIgnoreStride) {
  TensorView t = TensorView::strided(nullptr, DType::kFloat32, {1, 8}, {12345, 1});
  EXPECT_TRUE(t.is_contiguous());
}

TEST(TensorView, TooManyDimensionsIsAnError) {
  EXPECT_THROW(TensorView::contiguous(nullptr, DType::kFloat32, {1, 2, 3, 4, 5, 6, 7}), Error);
  EXPECT_THROW(TensorView::strided(nullptr, DType::kFloat32, {1, 2}, {1}), Error);
}

TEST(Device, Strings) {
  EXPECT_EQ(to_string(Device::cpu()), "cpu");
  EXPECT_EQ(to_string(Device::cuda(3)), "cuda:3");
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
}

TEST(HostNumeric, Bf16AndFp16RoundTripAndRounding) {
  // bf16 has 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and rounds to even (1).
  EXPECT_EQ(ref::bf16_to_float(ref::float_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(ref::bf16_to_float(ref::float_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_EQ(ref::fp16_to_float(ref::float_to_fp16(1.0f + 1.0f / 2048)), 1.0f);
  EXPECT_EQ(ref::fp16_to_float(ref::float_to_fp16(1.0f + 3.0f / 2048)), 1.0f + 4.0f / 2048);
  EXPECT_EQ(ref::fp16_to_float(ref::float_to_fp16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(ref::fp16_to_float(ref::float_to_fp16(70000.0f))));
  EXPECT_EQ(ref::fp16_to_float(ref::float_to_fp16(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(ref::fp16_to_float(ref::float_to_fp16(-2.5f)), -2.5f);
  for (std::uint32_t h = 0; h < 0x7c00; h += 7) {  // every 7th finite positive half round-trips
    EXPECT_EQ(ref::float_to_fp16(ref::fp16_to_float(static_cast<std::uint16_t>(h))), h);
  }
}

TEST(HostTensor, IntegerDtypesStoreAndLoad) {
  ref::HostTensor i32(DType::kInt32, {3}), i64(DType::kInt64, {2}), u8(DType::kUInt8, {2});
  i32.set(1, -7);
  i64.set(0, 1ll << 40);
  u8.set(1, 200);
  EXPECT_EQ(i32.get(1), -7);
  EXPECT_EQ(i64.get(0), static_cast<double>(1ll << 40));
  EXPECT_EQ(u8.get(1), 200);
}

TEST(HostTensor, OwnsContiguousStorage) {
  ref::HostTensor t(DType::kBFloat16, {2, 3});
  t.set(4, 1.5);
  EXPECT_EQ(t.get(4), 1.5);
  ref::HostTensor copy = t;
  EXPECT_NE(copy.view().data, t.view().data);
  EXPECT_EQ(copy.get(4), 1.5);
}

}  // namespace
}  // namespace fastinfer
