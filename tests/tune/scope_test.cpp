#include <gtest/gtest.h>

#include <thread>

#include "fastinfer/error.h"
#include "fastinfer/tune.h"

namespace fastinfer::tune {
namespace {

TEST(Scope, OutsideAnyScopeTheDefaultsHold) {
  EXPECT_TRUE(current_mapper().is_default_list());
  EXPECT_EQ(current_mapper().rounding(), Rounding::kUp);
  EXPECT_FALSE(tuning_enabled("mm_bf16_fp4"));
  EXPECT_EQ(current_cache_file(), "");
}

TEST(Scope, CustomBucketsRoundDownUnlessToldOtherwise) {
  Scope s({.buckets = std::vector<std::int64_t>{4, 32}});
  EXPECT_EQ(current_mapper().rounding(), Rounding::kDown);
  EXPECT_EQ(current_mapper().bucket(31), 4);
  Scope up({.rounding = Rounding::kUp});  // inherits the list, changes the rounding
  EXPECT_EQ(current_mapper().bucket(31), 32);
  EXPECT_EQ(current_mapper().describe(), "[4,32]/up");
}

TEST(Scope, NestingInheritsUnsetFieldsAndRestoresOnExit) {
  const std::uint64_t outside = current_mapper().id();
  {
    Scope a({.buckets = std::vector<std::int64_t>{1, 16, 256}, .rounding = Rounding::kUp, .tune_mode = true,
             .skip_ops = std::vector<std::string>{"gdn_decode"}});
    const std::uint64_t a_id = current_mapper().id();
    EXPECT_TRUE(tuning_enabled("mm_bf16_fp4"));
    EXPECT_FALSE(tuning_enabled("gdn_decode"));
    {
      Scope b({.tune_mode = false});  // everything else inherited
      EXPECT_EQ(current_mapper().id(), a_id);
      EXPECT_FALSE(tuning_enabled("mm_bf16_fp4"));
      {
        Scope c({.tune_mode = true, .skip_ops = std::vector<std::string>{}});  // replaces the skip list
        EXPECT_TRUE(tuning_enabled("gdn_decode"));
        EXPECT_EQ(current_mapper().bucket(17), 256);
        {
          Scope d({.buckets = std::vector<std::int64_t>{8, 64}});  // inherits kUp explicitly set by a
          EXPECT_EQ(current_mapper().rounding(), Rounding::kUp);
          EXPECT_EQ(current_mapper().bucket(9), 64);
        }
        EXPECT_EQ(current_mapper().id(), a_id);
      }
      EXPECT_FALSE(tuning_enabled("gdn_decode"));
    }
    EXPECT_TRUE(tuning_enabled("mm_bf16_fp4"));
    EXPECT_EQ(current_mapper().id(), a_id);
  }
  EXPECT_EQ(current_mapper().id(), outside);
  EXPECT_FALSE(tuning_enabled("mm_bf16_fp4"));
}

TEST(Scope, RoundingOnTheDefaultListMakesANewMapper) {
  Scope s({.rounding = Rounding::kDown});
  EXPECT_FALSE(current_mapper() == BucketMapper());
  EXPECT_EQ(current_mapper().bucket(300), 256);
  EXPECT_EQ(current_mapper().describe(), "default/down");
  Scope back({.rounding = Rounding::kUp});
  EXPECT_TRUE(current_mapper() == BucketMapper());
}

TEST(Scope, EmptyBucketListIsAnErrorAndLeavesTheThreadUntouched) {
  Scope outer({.buckets = std::vector<std::int64_t>{2, 4}});
  const std::uint64_t id = current_mapper().id();
  EXPECT_THROW(Scope({.buckets = std::vector<std::int64_t>{}}), Error);
  EXPECT_EQ(current_mapper().id(), id);
}

TEST(Scope, ThreadsAreIsolated) {
  Scope s({.buckets = std::vector<std::int64_t>{3, 30}, .tune_mode = true});
  std::uint64_t seen_in_thread = 0;
  bool tuning_in_thread = true;
  std::thread t([&] {
    seen_in_thread = current_mapper().id();  // a new thread starts outside any scope
    tuning_in_thread = tuning_enabled("x");
    Scope other({.buckets = std::vector<std::int64_t>{5}});
  });
  t.join();
  EXPECT_EQ(seen_in_thread, BucketMapper().id());
  EXPECT_FALSE(tuning_in_thread);
  EXPECT_EQ(current_mapper().describe(), "[3,30]/down");  // the other thread's scope did not leak here
  EXPECT_TRUE(tuning_enabled("x"));
}

}  // namespace
}  // namespace fastinfer::tune
