#include "gdn/decode_runner.h"

#include <array>
#include <string>

#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "gdn/decode_chunked_launch.h"
#include "runtime/runner_cache.h"

namespace fastinfer::gdn {
namespace {

struct LauncherEntry {
  DType act, state;
  int lanes_per_row, rows_per_thread;
  DecodeLauncher launch;
};

// A pipelined kernel is one fixed tactic (its warps and CTAs per SM are template arguments).
struct PipelinedEntry {
  DType act, state;
  DecodeTactic tactic;
  PipelinedDecodeLauncher launch;
};

template <DType kAct, DType kState>
constexpr std::array<LauncherEntry, 4> launchers_for() {
  return {{
      {kAct, kState, 8, 1, &launch_decode_sm90<kAct, kState, 8, 1>},
      {kAct, kState, 8, 2, &launch_decode_sm90<kAct, kState, 8, 2>},
      {kAct, kState, 8, 4, &launch_decode_sm90<kAct, kState, 8, 4>},
      {kAct, kState, 16, 4, &launch_decode_sm90<kAct, kState, 16, 4>},
  }};
}

template <DType kAct, DType kState>
constexpr std::array<PipelinedEntry, 4> pipelined_for() {
  return {{
      {kAct, kState, {8, 4, 8, 1}, &launch_decode_pipelined_sm90<kAct, kState, 8, 4, 8, 1>},
      {kAct, kState, {8, 2, 16, 1}, &launch_decode_pipelined_sm90<kAct, kState, 8, 2, 16, 1>},
      {kAct, kState, {16, 4, 16, 1}, &launch_decode_pipelined_sm90<kAct, kState, 16, 4, 16, 1>},
      {kAct, kState, {8, 2, 4, 2}, &launch_decode_pipelined_sm90<kAct, kState, 8, 2, 4, 2>},
  }};
}

// Every instantiated kernel (decode_launch.h).
const std::array<std::array<LauncherEntry, 4>, 4> kLaunchers = {
    launchers_for<DType::kBFloat16, DType::kFloat32>(), launchers_for<DType::kBFloat16, DType::kBFloat16>(),
    launchers_for<DType::kFloat16, DType::kFloat32>(), launchers_for<DType::kFloat16, DType::kBFloat16>()};
const std::array<std::array<PipelinedEntry, 4>, 4> kPipelined = {
    pipelined_for<DType::kBFloat16, DType::kFloat32>(), pipelined_for<DType::kBFloat16, DType::kBFloat16>(),
    pipelined_for<DType::kFloat16, DType::kFloat32>(), pipelined_for<DType::kFloat16, DType::kBFloat16>()};

// The tensor-core kernel (bf16 pools only): whole states with 8 warps, half states with 4 warps
// (two or three CTAs per SM).
const std::array<PipelinedEntry, 6> kChunked = {{
    {DType::kBFloat16, DType::kBFloat16, {4, 2, 8, 1, true}, &launch_decode_chunked_sm90<DType::kBFloat16, 8, 1>},
    {DType::kBFloat16, DType::kBFloat16, {4, 2, 4, 2, true}, &launch_decode_chunked_sm90<DType::kBFloat16, 4, 2>},
    {DType::kBFloat16, DType::kBFloat16, {4, 2, 4, 3, true}, &launch_decode_chunked_sm90<DType::kBFloat16, 4, 3>},
    {DType::kFloat16, DType::kBFloat16, {4, 2, 8, 1, true}, &launch_decode_chunked_sm90<DType::kFloat16, 8, 1>},
    {DType::kFloat16, DType::kBFloat16, {4, 2, 4, 2, true}, &launch_decode_chunked_sm90<DType::kFloat16, 4, 2>},
    {DType::kFloat16, DType::kBFloat16, {4, 2, 4, 3, true}, &launch_decode_chunked_sm90<DType::kFloat16, 4, 3>},
}};

// The register kernel takes any warp count whose CTA rows divide a state.
constexpr int kRegisterWarpCounts[] = {1, 2, 4, 8};

DecodeLauncher find_launcher(const DecodeConfig& c) {
  const DecodeTactic& t = c.tactic;
  if (t.pipelined() || t.warps < 1 || t.warps * 32 > 256) return nullptr;
  const int rows = t.rows_per_cta();
  if (rows <= 0 || rows > kDecodeHeadDim || kDecodeHeadDim % rows != 0) return nullptr;
  for (const auto& family : kLaunchers)
    for (const LauncherEntry& e : family)
      if (e.act == c.act && e.state == c.state && e.lanes_per_row == t.lanes_per_row &&
          e.rows_per_thread == t.rows_per_thread)
        return e.launch;
  return nullptr;
}

PipelinedDecodeLauncher find_pipelined_launcher(const DecodeConfig& c) {
  for (const auto& family : kPipelined)
    for (const PipelinedEntry& e : family)
      if (e.act == c.act && e.state == c.state && e.tactic == c.tactic) return e.launch;
  for (const PipelinedEntry& e : kChunked)
    if (e.act == c.act && e.state == c.state && e.tactic == c.tactic) return e.launch;
  return nullptr;
}

}  // namespace

bool DecodeRunner::can_implement(const DecodeConfig& config) {
  return find_launcher(config) != nullptr || find_pipelined_launcher(config) != nullptr;
}

DecodeRunner::DecodeRunner(const DecodeConfig& config)
    : config_(config), launch_(find_launcher(config)), pipelined_launch_(find_pipelined_launcher(config)) {
  if (launch_ == nullptr && pipelined_launch_ == nullptr) {
    const DecodeTactic& t = config.tactic;
    throw Error(Error::Kind::kValue,
                "gdn::decode: no kernel for activations " + std::string(dtype_name(config.act)) + ", state " +
                    std::string(dtype_name(config.state)) + ", tactic lanes_per_row=" +
                    std::to_string(t.lanes_per_row) + " rows_per_thread=" + std::to_string(t.rows_per_thread) +
                    " warps=" + std::to_string(t.warps) + " ctas_per_sm=" + std::to_string(t.ctas_per_sm) +
                    (t.chunked ? " chunked" : ""));
  }
}

std::shared_ptr<const DecodeRunner> decode_runner(const DecodeConfig& config) {
  static RunnerCache<DecodeConfig, DecodeRunner, DecodeConfigHash> cache;
  return cache.get_or_create(config, [&] { return std::make_shared<const DecodeRunner>(config); });
}

std::vector<DecodeTactic> decode_tactics(DType act, DType state) {
  std::vector<DecodeTactic> out;
  for (const auto& family : kLaunchers)
    for (const LauncherEntry& e : family)
      if (e.act == act && e.state == state)
        for (int warps : kRegisterWarpCounts) {
          const DecodeTactic t{e.lanes_per_row, e.rows_per_thread, warps, 0};
          if (find_launcher({act, state, t}) != nullptr) out.push_back(t);
        }
  for (const auto& family : kPipelined)
    for (const PipelinedEntry& e : family)
      if (e.act == act && e.state == state) out.push_back(e.tactic);
  for (const PipelinedEntry& e : kChunked)
    if (e.act == act && e.state == state) out.push_back(e.tactic);
  return out;
}

DecodeTactic choose_decode_tactic(DType state, long long batch, int heads_v, int tokens, const DeviceInfo& device) {
  // From the H200 sweeps of sessions 2 and 3 (fastinfer_bench gdn_decode, heads 16/32, B 1..512,
  // T 1 and 4, fp32 and bf16 pools; table in docs/GDN_DECODE.md). The tuner (decode_tunable.h)
  // replaces this per batch bucket once tuned.
  const long long states = batch * heads_v;
  // fp32 pool, one token: the register kernel. Session 3's sweep (H200, heads 16/32 and 16/64):
  // 8 lanes x 4 rows in 2-warp CTAs from 4 states per SM up (B = 32..512: 73-90% of the copy
  // bandwidth, 5-14% faster than 16 x 4 x 2, which session 2 had measured fastest everywhere);
  // 16 x 4 x 2 below (B = 1: 8.4 us, the best).
  if (state == DType::kFloat32 && tokens == 1)
    return states >= 4LL * device.sm_count ? DecodeTactic{8, 4, 2, 0} : DecodeTactic{16, 4, 2, 0};
  // bf16 pools, MTP windows (2..8 tokens), from 4 states per SM: the tensor-core kernel on half
  // states (session 3, H200, heads 16/32, T = 4: B = 64/256/512 0.0670/0.2350/0.4526 ms against
  // 0.0672/0.2388/0.4663 for the pipelined kernel, a tie at B = 32). Up to 4 tokens with three
  // CTAs per SM (session 4, same shapes, T = 4: B = 32/64/256/512 0.0359/0.0602/0.2044/0.4003 ms
  // against 0.0383/0.0673/0.2355/0.4553 with two); T = 2, 3 unmeasured (the same kernel).
  if (state == DType::kBFloat16 && tokens >= 2 && tokens <= kDecodePipelinedMaxTokens && states >= 4LL * device.sm_count)
    return tokens <= 4 ? DecodeTactic{4, 2, 4, 3, true} : DecodeTactic{4, 2, 4, 2, true};
  // Otherwise bf16 pools (one token) and fp32 MTP windows: the pipelined kernel (whole-state tiles,
  // 8 consumer warps, one CTA per SM) was the fastest from B = 32 (1024 states, ~8 per SM) up:
  // 3-23% over the best register tactic (session 2). Below 4 states per SM (unmeasured between
  // B = 1 and B = 32) too few tiles per CTA are left to overlap.
  if (tokens <= kDecodePipelinedMaxTokens && states >= 4LL * device.sm_count) return {8, 4, 8, 1};
  // Few states (B = 1: within 0.6 us of the best tactic of each case) and windows of more than 8
  // tokens: 32-row CTAs of 16 lanes per row.
  return {16, 4, 4, 0};
}

}  // namespace fastinfer::gdn
