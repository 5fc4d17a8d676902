// Every validation helper's message: "<op>: <argument> must <expected>, got <given>".
#include <gtest/gtest.h>

#include <functional>

#include "runtime/check.h"

namespace fastinfer {
namespace {

std::string message_of(const std::function<void()>& f, Error::Kind expected_kind = Error::Kind::kValue) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), expected_kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

const TensorView kQ = TensorView::contiguous(reinterpret_cast<void*>(0x1000), DType::kFloat32, {64, 16, 128});

TEST(Check, DtypeMessage) {
  EXPECT_EQ(message_of([] { check::dtype("gdn::prefill", "q", kQ, {DType::kBFloat16, DType::kFloat16}); },
                       Error::Kind::kType),
            "gdn::prefill: q must be bfloat16 or float16, got float32");
  EXPECT_EQ(message_of([] { check::dtype("op", "x", kQ, {DType::kBFloat16, DType::kFloat16, DType::kInt32}); },
                       Error::Kind::kType),
            "op: x must be bfloat16, float16 or int32, got float32");
  EXPECT_NO_THROW(check::dtype("op", "q", kQ, {DType::kFloat32}));
}

TEST(Check, SameDtypeMessage) {
  TensorView k = kQ;
  k.dtype = DType::kFloat16;
  EXPECT_EQ(message_of([&] { check::same_dtype("gdn::prefill", "k", k, "q", kQ); }, Error::Kind::kType),
            "gdn::prefill: k must have the same dtype as q (float32), got float16");
}

TEST(Check, NdimMessage) {
  EXPECT_EQ(message_of([] { check::ndim("gdn::prefill", "q", kQ, 2); }),
            "gdn::prefill: q must have 2 dimensions, got 3 (shape [64, 16, 128])");
}

TEST(Check, DimMessages) {
  EXPECT_EQ(message_of([] { check::dim("gdn::prefill", "q", kQ, 2, 64, "head dim"); }),
            "gdn::prefill: q.shape[2] (head dim) must be 64, got 128 (shape [64, 16, 128])");
  EXPECT_EQ(message_of([] { check::dim("gdn::prefill", "q", kQ, -1, 64, "head dim"); }),
            "gdn::prefill: q.shape[2] (head dim) must be 64, got 128 (shape [64, 16, 128])");
  EXPECT_EQ(message_of([] { check::dim_multiple_of("mm", "b", kQ, 1, 32, "rows"); }),
            "mm: b.shape[1] (rows) must be a multiple of 32, got 16 (shape [64, 16, 128])");
  EXPECT_NO_THROW(check::dim_multiple_of("mm", "b", kQ, 1, 8, "rows"));
}

TEST(Check, ContiguityMessages) {
  TensorView t = TensorView::strided(nullptr, DType::kFloat32, {3, 8}, {1, 3});
  EXPECT_EQ(message_of([&] { check::contiguous("op", "a", t); }),
            "op: a must be contiguous, got strides [1, 3] for shape [3, 8]");
  EXPECT_EQ(message_of([&] { check::last_dim_contiguous("op", "a", t); }),
            "op: a must have a contiguous last dimension (stride 1), got stride 3");
}

TEST(Check, DeviceAlignmentNullMessages) {
  EXPECT_EQ(message_of([] { check::device("op", "q", kQ, Device::cuda(0)); }), "op: q must be on cuda:0, got cpu");
  TensorView t = kQ;
  t.data = reinterpret_cast<void*>(0x1008);
  EXPECT_EQ(message_of([&] { check::aligned("op", "a", t, 16); }), "op: a must be 16-byte aligned, got address 0x1008");
  EXPECT_NO_THROW(check::aligned("op", "a", kQ, 16));
  t.data = nullptr;
  EXPECT_EQ(message_of([&] { check::not_null("op", "a", t); }),
            "op: a must point to memory, got a null data pointer for shape [64, 16, 128]");
  TensorView empty = TensorView::contiguous(nullptr, DType::kFloat32, {0, 4});
  EXPECT_NO_THROW(check::not_null("op", "a", empty));
}

TEST(Check, RequireAndFail) {
  EXPECT_EQ(message_of([] { check::require(false, "op", "scale", "be positive", "-1"); }),
            "op: scale must be positive, got -1");
  EXPECT_NO_THROW(check::require(true, "op", "scale", "be positive", "-1"));
  EXPECT_EQ(message_of([] { check::fail("op", "x", "be y", "z", Error::Kind::kRuntime); }, Error::Kind::kRuntime),
            "op: x must be y, got z");
}

}  // namespace
}  // namespace fastinfer
