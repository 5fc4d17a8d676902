// gdn::decode and the autotuner without a GPU: the op runner's key (every component takes part,
// the mapper included), tactic ids <-> decode_tactics, the heuristic as the untuned default, a
// tuned entry coming back for every batch of its bucket, and the `fastinfer tune` registration.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fastinfer/device.h"
#include "fastinfer/tune.h"
#include "gdn/decode_runner.h"
#include "gdn/decode_tunable.h"
#include "tune/fakes.h"

namespace fastinfer {
namespace {

using gdn::detail::DecodeOpRunner;

DecodeOpRunner op(DType act, DType state, int T, int H, int HV, const tune::BucketMapper& m = tune::current_mapper()) {
  return DecodeOpRunner(act, state, T, H, HV, 132, m);
}

TEST(GdnDecodeTune, KeyNamesOpDtypesTokensHeadsAndMapper) {
  const DecodeOpRunner base = op(DType::kBFloat16, DType::kBFloat16, 4, 16, 32);
  EXPECT_EQ(base.tune_key().op(), "gdn_decode");
  EXPECT_EQ(base.tune_key(), op(DType::kBFloat16, DType::kBFloat16, 4, 16, 32).tune_key());
  std::set<std::uint64_t> hashes{base.tune_key().hash()};
  for (const DecodeOpRunner& other :
       {op(DType::kFloat16, DType::kBFloat16, 4, 16, 32), op(DType::kBFloat16, DType::kFloat32, 4, 16, 32),
        op(DType::kBFloat16, DType::kBFloat16, 1, 16, 32), op(DType::kBFloat16, DType::kBFloat16, 4, 32, 32),
        op(DType::kBFloat16, DType::kBFloat16, 4, 16, 64),
        op(DType::kBFloat16, DType::kBFloat16, 4, 16, 32, tune::BucketMapper({1, 64, 512}, tune::Rounding::kDown))}) {
    EXPECT_FALSE(other.tune_key() == base.tune_key());
    hashes.insert(other.tune_key().hash());
  }
  EXPECT_EQ(hashes.size(), 7u);
}

TEST(GdnDecodeTune, TacticIdsAreTheListedTacticsAndTheDefaultIsTheHeuristic) {
  for (DType state : {DType::kFloat32, DType::kBFloat16})
    for (int T : {1, 4, 9}) {
      const DecodeOpRunner r = op(DType::kBFloat16, state, T, 16, 32);
      const std::vector<gdn::DecodeTactic> listed = gdn::decode_tactics(DType::kBFloat16, state);
      ASSERT_EQ(r.tactic_count(), static_cast<int>(listed.size()));
      for (int i = 0; i < r.tactic_count(); ++i) EXPECT_EQ(r.tactic(i), listed[static_cast<std::size_t>(i)]);
      DeviceInfo h200;
      h200.sm_count = 132;
      for (std::int64_t B : {1, 7, 32, 64, 256, 512, 4096}) {
        const int id = r.default_tactic(B);
        ASSERT_GE(id, 0);
        EXPECT_EQ(r.tactic(id), gdn::choose_decode_tactic(state, B, 32, T, h200)) << "B " << B << " T " << T;
      }
      EXPECT_EQ(r.tactic_name(-1), "default");
      std::set<std::string> names;
      for (int i = 0; i < r.tactic_count(); ++i) names.insert(r.tactic_name(i));
      EXPECT_EQ(names.size(), listed.size()) << "tactic names are unique";
    }
  // The tensor-core tactic is listed for bf16 pools only.
  auto chunked = [](DType state) {
    const auto t = gdn::decode_tactics(DType::kBFloat16, state);
    return std::count_if(t.begin(), t.end(), [](const gdn::DecodeTactic& x) { return x.chunked; });
  };
  EXPECT_EQ(chunked(DType::kBFloat16), 6);  // L4R2W8P1C, L4R2W4P2C, L4R2W4P3C, L4R2W4P3CM, L4R2W4P3CD, L4R2W4P3CMDT
  EXPECT_EQ(chunked(DType::kFloat32), 0);
}

TEST(GdnDecodeTune, TunedEntryServesEveryBatchOfItsBucket) {
  auto tuner = tune::testing::make_tuner();
  const DecodeOpRunner r = op(DType::kBFloat16, DType::kBFloat16, 4, 16, 32);
  const tune::BucketMapper& mapper = r.tune_key().mapper();
  EXPECT_EQ(tuner->choose(r.tune_key(), 300).source, tune::Source::kDefault);
  tuner->insert(r.tune_key(), mapper.bucket(300), 3, 0.2);
  for (std::int64_t B = 257; B <= 512; ++B) {  // default list, rounding up: one bucket (512)
    const tune::Choice c = tuner->choose(r.tune_key(), B);
    ASSERT_EQ(c.source, tune::Source::kMemory) << B;
    ASSERT_EQ(c.tactic, 3) << B;
  }
  EXPECT_EQ(tuner->choose(r.tune_key(), 256).source, tune::Source::kDefault);
  // Another token count is another key: untouched.
  EXPECT_EQ(tuner->choose(op(DType::kBFloat16, DType::kBFloat16, 2, 16, 32).tune_key(), 300).source, tune::Source::kDefault);
}

TEST(GdnDecodeTune, ProfilesEveryTacticAndTheDefault) {
  tune::testing::FakeProfiler* profiler = nullptr;
  auto tuner = tune::testing::make_tuner(&profiler, /*best=*/5);
  const DecodeOpRunner r = op(DType::kBFloat16, DType::kFloat32, 1, 16, 32);
  // A runner with the op's key and tactic ids, profiled by the fake profiler (nothing launches).
  std::vector<int> ids(static_cast<std::size_t>(r.tactic_count()));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
  tune::testing::FakeRunner fake(r.tune_key(), ids);
  const tune::Choice c = tuner->tune_one(fake, 64, nullptr);
  EXPECT_EQ(c.tactic, 5);
  EXPECT_EQ(profiler->measured.size(), ids.size() + 1);
}

TEST(GdnDecodeTune, RegisteredForTheTuneCommand) {
  ASSERT_NE(tune::find_tunable_op("gdn_decode"), nullptr);
  ASSERT_NE(tune::find_tunable_op("gdn_decode_bf16state"), nullptr);
}

}  // namespace
}  // namespace fastinfer
