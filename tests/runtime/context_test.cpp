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
