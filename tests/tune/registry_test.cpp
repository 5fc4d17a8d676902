#include <gtest/gtest.h>

#include "fakes.h"
#include "fastinfer/error.h"

namespace fastinfer::tune {
namespace {

TEST(Registry, RegisterFindAndList) {
  EXPECT_EQ(find_tunable_op("registry_test_op"), nullptr);
  register_tunable_op({"registry_test_op", "a fake op", [](const TuneRequest& r) {
                         return std::make_unique<testing::FakeRunner>(testing::fake_key("registry_test_op", {r.n, r.k}),
                                                                      std::vector<int>{0, 1});
                       }});
  const TunableOp* op = find_tunable_op("registry_test_op");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->description, "a fake op");
  auto runner = op->make({.max_m = 64, .n = 128, .k = 256});
  EXPECT_EQ(runner->key().extras()[1], 256);
  const auto names = tunable_op_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "registry_test_op"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THROW(register_tunable_op({"registry_test_op", "again", op->make}), Error);
  EXPECT_THROW(register_tunable_op({"", "nameless", op->make}), Error);
  EXPECT_THROW(register_tunable_op({"no_factory", "", {}}), Error);
}

}  // namespace
}  // namespace fastinfer::tune
