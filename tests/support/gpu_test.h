#pragma once
// Base fixture for GPU tests: skips with a visible message when the machine has no CUDA device.
#include <gtest/gtest.h>

#include "fastinfer/device.h"

namespace fastinfer::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

}  // namespace fastinfer::testing
