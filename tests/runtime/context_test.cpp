#include <gtest/gtest.h>

#include "fastinfer/context.h"
#include "fastinfer/error.h"

namespace fastinfer {
namespace {

TensorView on(Device d) { return TensorView::contiguous(reinterpret_cast<void*>(0x100), DType::kFloat32, {4}, d); }

TEST(ExecContext, ResolvesTheCommonDeviceAndStream) {
  TensorView a = on(Device::cuda(1)), b = on(Device::cuda(1));
  auto* stream = reinterpret_cast<Stream>(0x1234);
  ExecContext ctx = resolve_context("op", {{"a", &a}, {"b", &b}, {"c", nullptr}}, stream);
  EXPECT_EQ(ctx.device, Device::cuda(1));
  EXPECT_EQ(ctx.stream, stream);
}

TEST(ExecContext, CpuTensorsIgnoreTheStream) {
  TensorView a = on(Device::cpu());
  ExecContext ctx = resolve_context("op", {{"a", &a}}, reinterpret_cast<Stream>(0x1234));
  EXPECT_TRUE(ctx.device.is_cpu());
  EXPECT_EQ(ctx.stream, nullptr);
}

TEST(ExecContext, MismatchNamesBothTensors) {
  TensorView q = on(Device::cuda(0)), k = on(Device::cuda(1)), v = on(Device::cpu());
  try {
    resolve_context("gdn::prefill", {{"q", &q}, {"out", nullptr}, {"k", &k}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "gdn::prefill: k must be on the same device as q (cuda:0), got cuda:1");
  }
  try {
    resolve_context("gdn::prefill", {{"q", &q}, {"v", &v}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "gdn::prefill: v must be on the same device as q (cuda:0), got cpu");
  }
}

TEST(ExecContext, RejectsNegativeSizesAndMisalignedData) {
  TensorView a = on(Device::cpu());
  a.shape[0] = -1;
  try {
    resolve_context("gemm::mm_bf16_fp4", {{"a", &a}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "gemm::mm_bf16_fp4: a must have non-negative sizes, got shape [-1]");
  }
  TensorView idx = TensorView::contiguous(reinterpret_cast<void*>(0x102), DType::kInt32, {4}, Device::cpu());
  try {
    resolve_context("gdn::prefill", {{"state_indices", &idx}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "gdn::prefill: state_indices must be 4-byte aligned, got address 0x102");
  }
}

TEST(ExecContext, OnlyAbsentTensorsResolveToCpu) {
  ExecContext ctx = resolve_context("op", {{"a", nullptr}});
  EXPECT_TRUE(ctx.device.is_cpu());
}

}  // namespace
}  // namespace fastinfer

#include "fastinfer/device.h"

namespace fastinfer {
namespace {

TEST(DeviceInfo, CountNeverThrowsAndOutOfRangeOrdinalIsAnError) {
  const int n = cuda_device_count();
  EXPECT_GE(n, 0);
  EXPECT_EQ(cuda_device_count(), n);
  try {
    device_info(n);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "device_info: device must be a CUDA ordinal in [0, " + std::to_string(n) +
                                         "), got " + std::to_string(n));
  }
}

}  // namespace
}  // namespace fastinfer
