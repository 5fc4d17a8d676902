#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "fastinfer/error.h"
#include "fastinfer/tune.h"

namespace fastinfer::tune {
namespace {

TEST(Buckets, DefaultListFollowsTheScheme) {
  const std::vector<std::int64_t> b = default_buckets();
  const std::vector<std::int64_t> head{1,    2,    4,    8,    16,   32,   64,   128,  256,  512,  768,  1024, 1280,
                                       1536, 1792, 2048, 2560, 3072, 3584, 4096, 8192, 16384};
  ASSERT_GE(b.size(), head.size());
  EXPECT_EQ(std::vector<std::int64_t>(b.begin(), b.begin() + head.size()), head);
  for (std::size_t i = head.size(); i < b.size(); ++i) EXPECT_EQ(b[i], 2 * b[i - 1]);
  EXPECT_EQ(b.back(), std::int64_t{1} << 24);
}

TEST(Buckets, DefaultMapperRoundsUpAndClamps) {
  const BucketMapper m;
  EXPECT_TRUE(m.is_default_list());
  EXPECT_EQ(m.rounding(), Rounding::kUp);
  const std::vector<std::pair<std::int64_t, std::int64_t>> table{
      {-5, 1},     {0, 1},       {1, 1},       {2, 2},       {3, 4},       {5, 8},          {200, 256},
      {256, 256},  {257, 512},   {513, 768},   {2047, 2048}, {2049, 2560}, {4095, 4096},    {4097, 8192},
      {9000, 16384}, {(1 << 24) + 1, 1 << 24}, {std::int64_t{1} << 40, 1 << 24}};
  for (auto [in, out] : table) EXPECT_EQ(m.bucket(in), out) << "M = " << in;
  EXPECT_EQ(m.describe(), "default/up");
}

TEST(Buckets, CustomListRoundsEitherWayAndClampsAtBothEnds) {
  const BucketMapper down({64, 8, 512, 8}, Rounding::kDown);  // unsorted, duplicate: normalised
  const BucketMapper up({8, 64, 512}, Rounding::kUp);
  EXPECT_EQ(std::vector<std::int64_t>(down.buckets().begin(), down.buckets().end()), (std::vector<std::int64_t>{8, 64, 512}));
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> table{
      // M, down, up
      {1, 8, 8}, {8, 8, 8}, {9, 8, 64}, {63, 8, 64}, {64, 64, 64}, {65, 64, 512}, {511, 64, 512}, {512, 512, 512},
      {100000, 512, 512}};
  for (auto [m, d, u] : table) {
    EXPECT_EQ(down.bucket(m), d) << "M = " << m;
    EXPECT_EQ(up.bucket(m), u) << "M = " << m;
  }
  EXPECT_EQ(down.describe(), "[8,64,512]/down");
  EXPECT_NE(down.id(), up.id());
  EXPECT_FALSE(down == up);
  EXPECT_TRUE(down == BucketMapper({8, 64, 512}, Rounding::kDown));
  EXPECT_EQ(down.id(), BucketMapper({8, 64, 512}, Rounding::kDown).id());
}

TEST(Buckets, EmptyOrNonPositiveListIsAnError) {
  try {
    BucketMapper({}, Rounding::kDown);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("buckets must be a non-empty list"), std::string::npos) << e.what();
  }
  EXPECT_THROW(BucketMapper({0, 4}, Rounding::kDown), Error);
  EXPECT_THROW(BucketMapper({-1}, Rounding::kUp), Error);
}

TEST(Buckets, KeysUpToCoverEveryReachableBucket) {
  const BucketMapper up({8, 64, 512}, Rounding::kUp);
  const BucketMapper down({8, 64, 512}, Rounding::kDown);
  EXPECT_EQ(up.keys_up_to(100), (std::vector<std::int64_t>{8, 64, 512}));
  EXPECT_EQ(down.keys_up_to(100), (std::vector<std::int64_t>{8, 64}));
  EXPECT_EQ(down.keys_up_to(3), (std::vector<std::int64_t>{8}));  // clamped below the first bucket
  EXPECT_EQ(up.keys_up_to(10000), (std::vector<std::int64_t>{8, 64, 512}));
  // Property: every M in [1, max_m] maps to one of the keys, and every key is reached.
  for (const BucketMapper* m : {&up, &down}) {
    for (std::int64_t max_m : {1, 7, 8, 9, 64, 300, 512, 600}) {
      const std::vector<std::int64_t> keys = m->keys_up_to(max_m);
      std::set<std::int64_t> reached;
      for (std::int64_t x = 1; x <= max_m; ++x) reached.insert(m->bucket(x));
      EXPECT_EQ(std::vector<std::int64_t>(reached.begin(), reached.end()), keys) << m->describe() << " " << max_m;
    }
  }
}

}  // namespace
}  // namespace fastinfer::tune
