#pragma once
// expect_error: the call must throw fastinfer::Error whose message contains `needle`.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "fastinfer/error.h"

namespace fastinfer::testing {

inline void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace fastinfer::testing
