// gdn::decode tactic table and heuristic (host only): every listed tactic has a kernel, unknown
// shapes are rejected with an error naming the op, and the heuristic only picks listed tactics,
// with the pipelined kernel never chosen for more tokens than a stage holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "gdn/decode_runner.h"

namespace fastinfer {
namespace {

constexpr DType kActs[] = {DType::kBFloat16, DType::kFloat16};
constexpr DType kStates[] = {DType::kFloat32, DType::kBFloat16};

TEST(GdnDecodeTactics, EveryListedTacticHasAKernel) {
  for (DType act : kActs)
    for (DType state : kStates) {
      const std::vector<gdn::DecodeTactic> tactics = gdn::decode_tactics(act, state);
      EXPECT_TRUE(std::any_of(tactics.begin(), tactics.end(), [](const auto& t) { return t.pipelined(); }));
      EXPECT_TRUE(std::any_of(tactics.begin(), tactics.end(), [](const auto& t) { return !t.pipelined(); }));
      for (const gdn::DecodeTactic& t : tactics) {
        EXPECT_TRUE(gdn::DecodeRunner::can_implement({act, state, t}));
        EXPECT_EQ(gdn::DecodeRunner(gdn::DecodeConfig{act, state, t}).config().tactic, t);
      }
    }
}

TEST(GdnDecodeTactics, UnknownTacticIsRejected) {
  const gdn::DecodeConfig bad{DType::kBFloat16, DType::kFloat32, {8, 4, 3, 1}};  // no 3-warp pipelined kernel
  EXPECT_FALSE(gdn::DecodeRunner::can_implement(bad));
  try {
    gdn::DecodeRunner runner(bad);
    FAIL() << "expected fastinfer::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gdn::decode"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ctas_per_sm=1"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(gdn::DecodeRunner::can_implement({DType::kBFloat16, DType::kFloat32, {8, 4, 16, 0}}));  // 512-row CTA
}

TEST(GdnDecodeTactics, HeuristicPicksListedTactics) {
  for (int sms : {78, 114, 132}) {  // H100 PCIe, H100 SXM / H200 class parts
    DeviceInfo info;
    info.sm_count = sms;
    info.cc_major = 9;
    for (DType act : kActs)
      for (DType state : kStates) {
        const std::vector<gdn::DecodeTactic> tactics = gdn::decode_tactics(act, state);
        for (long long batch : {1, 2, 4, 8, 16, 32, 64, 256, 512, 4096})
          for (int heads_v : {4, 16, 32, 64})
            for (int tokens : {1, 2, 4, 8, 9, 16}) {
              const gdn::DecodeTactic t = gdn::choose_decode_tactic(state, batch, heads_v, tokens, info);
              EXPECT_NE(std::find(tactics.begin(), tactics.end(), t), tactics.end())
                  << "B " << batch << " HV " << heads_v << " T " << tokens;
              if (tokens > 8) EXPECT_FALSE(t.pipelined()) << "a stage holds at most 8 tokens";
            }
      }
  }
}

}  // namespace
}  // namespace fastinfer
