#include "gdn/decode_runner.h"

#include <array>
#include <string>
#include <type_traits>

#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "gdn/decode_chunked_launch.h"
#include "runtime/cuda_check.h"
#include "runtime/runner_cache.h"
#include "runtime/workspace_pool.h"

namespace fastinfer::gdn {
namespace {

struct LauncherEntry {
  DType act, state;
  int lanes_per_row, rows_per_thread;
  DecodeLauncher launch;
  bool small_batch = false;
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

// The small-batch variant (decode_small_sm90.cuh) of the register shapes with few rows per CTA
// (4..32 rows with 1..4 warps: 4..32 CTAs per state fill the SMs at B = 1).
template <DType kAct, DType kState>
constexpr std::array<LauncherEntry, 3> small_for() {
  return {{
      {kAct, kState, 8, 1, &launch_decode_small_sm90<kAct, kState, 8, 1>, true},
      {kAct, kState, 8, 2, &launch_decode_small_sm90<kAct, kState, 8, 2>, true},
      {kAct, kState, 16, 4, &launch_decode_small_sm90<kAct, kState, 16, 4>, true},
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
const std::array<std::array<LauncherEntry, 3>, 4> kSmall = {
    small_for<DType::kBFloat16, DType::kFloat32>(), small_for<DType::kBFloat16, DType::kBFloat16>(),
    small_for<DType::kFloat16, DType::kFloat32>(), small_for<DType::kFloat16, DType::kBFloat16>()};
const std::array<std::array<PipelinedEntry, 4>, 4> kPipelined = {
    pipelined_for<DType::kBFloat16, DType::kFloat32>(), pipelined_for<DType::kBFloat16, DType::kBFloat16>(),
    pipelined_for<DType::kFloat16, DType::kFloat32>(), pipelined_for<DType::kFloat16, DType::kBFloat16>()};

// Dynamic work order (session 7): whole-state tiles with 8 and 16 consumer warps.
constexpr DecodeTactic dynamic_items(DecodeTactic t) {
  t.dynamic_items = true;
  return t;
}
template <DType kAct, DType kState>
constexpr std::array<PipelinedEntry, 2> dynamic_for() {
  return {{
      {kAct, kState, dynamic_items({8, 4, 8, 1}), &launch_decode_pipelined_sm90<kAct, kState, 8, 4, 8, 1, true>},
      {kAct, kState, dynamic_items({16, 4, 16, 1}), &launch_decode_pipelined_sm90<kAct, kState, 16, 4, 16, 1, true>},
  }};
}
// Session 8: a claimed tail (most tiles in the static order first, the rest claimed; the same kernels).
constexpr DecodeTactic claimed_tail(DecodeTactic t) {
  t.dynamic_items = true;
  t.claimed_tail = true;
  return t;
}
template <DType kAct, DType kState>
constexpr std::array<PipelinedEntry, 2> claimed_tail_for() {
  constexpr int kShare = kDecodeClaimedTailStaticPercent;
  return {{
      {kAct, kState, claimed_tail({8, 4, 8, 1}), &launch_decode_pipelined_sm90<kAct, kState, 8, 4, 8, 1, true, kShare>},
      {kAct, kState, claimed_tail({16, 4, 16, 1}), &launch_decode_pipelined_sm90<kAct, kState, 16, 4, 16, 1, true, kShare>},
  }};
}
const std::array<std::array<PipelinedEntry, 2>, 4> kClaimedTail = {
    claimed_tail_for<DType::kBFloat16, DType::kFloat32>(), claimed_tail_for<DType::kBFloat16, DType::kBFloat16>(),
    claimed_tail_for<DType::kFloat16, DType::kFloat32>(), claimed_tail_for<DType::kFloat16, DType::kBFloat16>()};
// And the tensor-core kernel's tile-major order with claimed tiles (three CTAs per SM).
const std::array<PipelinedEntry, 2> kChunkedDynamic = {{
    {DType::kBFloat16, DType::kBFloat16, dynamic_items({4, 2, 4, 3, true}),
     &launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kTileMajorDynamic>},
    {DType::kFloat16, DType::kBFloat16, dynamic_items({4, 2, 4, 3, true}),
     &launch_decode_chunked_sm90<DType::kFloat16, 4, 3, ChunkedVariant::kTileMajorDynamic>},
}};
// And the tensor-core kernel's state-major order with a claimed tail (session 8).
constexpr DecodeTactic state_major_claimed_tail() {
  DecodeTactic t = claimed_tail({4, 2, 4, 3, true});
  t.state_major = true;
  return t;
}
const std::array<PipelinedEntry, 2> kChunkedTail = {{
    {DType::kBFloat16, DType::kBFloat16, state_major_claimed_tail(),
     &launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kStateMajorTail>},
    {DType::kFloat16, DType::kBFloat16, state_major_claimed_tail(),
     &launch_decode_chunked_sm90<DType::kFloat16, 4, 3, ChunkedVariant::kStateMajorTail>},
}};
const std::array<std::array<PipelinedEntry, 2>, 4> kDynamic = {
    dynamic_for<DType::kBFloat16, DType::kFloat32>(), dynamic_for<DType::kBFloat16, DType::kBFloat16>(),
    dynamic_for<DType::kFloat16, DType::kFloat32>(), dynamic_for<DType::kFloat16, DType::kBFloat16>()};

// The tensor-core kernel (bf16 pools only): whole states with 8 warps, half states with 4 warps
// (two or three CTAs per SM).
constexpr DecodeTactic state_major(DecodeTactic t) {
  t.state_major = true;
  return t;
}
const std::array<PipelinedEntry, 8> kChunked = {{
    {DType::kBFloat16, DType::kBFloat16, {4, 2, 8, 1, true}, &launch_decode_chunked_sm90<DType::kBFloat16, 8, 1>},
    {DType::kBFloat16, DType::kBFloat16, {4, 2, 4, 2, true}, &launch_decode_chunked_sm90<DType::kBFloat16, 4, 2>},
    {DType::kBFloat16, DType::kBFloat16, {4, 2, 4, 3, true}, &launch_decode_chunked_sm90<DType::kBFloat16, 4, 3>},
    {DType::kFloat16, DType::kBFloat16, {4, 2, 8, 1, true}, &launch_decode_chunked_sm90<DType::kFloat16, 8, 1>},
    {DType::kFloat16, DType::kBFloat16, {4, 2, 4, 2, true}, &launch_decode_chunked_sm90<DType::kFloat16, 4, 2>},
    {DType::kFloat16, DType::kBFloat16, {4, 2, 4, 3, true}, &launch_decode_chunked_sm90<DType::kFloat16, 4, 3>},
    // Session 5: both tiles of a state per CTA step, tokens prepared once per state.
    {DType::kBFloat16, DType::kBFloat16, state_major({4, 2, 4, 3, true}),
     &launch_decode_chunked_sm90<DType::kBFloat16, 4, 3, ChunkedVariant::kStateMajor>},
    {DType::kFloat16, DType::kBFloat16, state_major({4, 2, 4, 3, true}),
     &launch_decode_chunked_sm90<DType::kFloat16, 4, 3, ChunkedVariant::kStateMajor>},
}};

// The register kernel takes any warp count whose CTA rows divide a state.
constexpr int kRegisterWarpCounts[] = {1, 2, 4, 8};
// The small-batch variant: CTAs of 1..4 warps (more rows per CTA means fewer CTAs per state).
constexpr int kSmallWarpCounts[] = {1, 2, 4};

DecodeLauncher find_launcher(const DecodeConfig& c) {
  const DecodeTactic& t = c.tactic;
  if (t.pipelined() || t.chunked || t.warps < 1 || t.warps * 32 > 256) return nullptr;
  const int rows = t.rows_per_cta();
  if (rows <= 0 || rows > kDecodeHeadDim || kDecodeHeadDim % rows != 0) return nullptr;
  auto match = [&](const LauncherEntry& e) {
    return e.act == c.act && e.state == c.state && e.lanes_per_row == t.lanes_per_row &&
           e.rows_per_thread == t.rows_per_thread;
  };
  if (t.small_batch) {
    for (const auto& family : kSmall)
      for (const LauncherEntry& e : family)
        if (match(e)) return e.launch;
    return nullptr;
  }
  for (const auto& family : kLaunchers)
    for (const LauncherEntry& e : family)
      if (match(e)) return e.launch;
  return nullptr;
}

// Calls fn on every entry of the given pipelined tables (lists of entries, or lists of such
// families), table by table in the order given.
template <class Fn, class... Tables>
void for_each_pipelined(Fn&& fn, const Tables&... tables) {
  auto visit = [&](const auto& table) {
    for (const auto& x : table) {
      if constexpr (std::is_same_v<std::decay_t<decltype(x)>, PipelinedEntry>) fn(x);
      else
        for (const PipelinedEntry& e : x) fn(e);
    }
  };
  (visit(tables), ...);
}

PipelinedDecodeLauncher find_pipelined_launcher(const DecodeConfig& c) {
  PipelinedDecodeLauncher found = nullptr;
  for_each_pipelined(
      [&](const PipelinedEntry& e) {
        if (found == nullptr && e.act == c.act && e.state == c.state && e.tactic == c.tactic) found = e.launch;
      },
      kPipelined, kChunked, kDynamic, kChunkedDynamic, kClaimedTail, kChunkedTail);
  return found;
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
                    (t.chunked ? " chunked" : "") + (t.small_batch ? " small_batch" : "") +
                    (t.state_major ? " state_major" : "") + (t.dynamic_items ? " dynamic_items" : "") +
                    (t.claimed_tail ? " claimed_tail" : ""));
  }
}

int* decode_work_counter(int device, Stream stream) {
  // Zero on entry: a new block is zeroed once, in stream order; every launch leaves it zero.
  constexpr const char* kName = "gdn_decode.work_counter";
  constexpr std::size_t kBytes = 2 * sizeof(int);
  WorkspacePool& pool = WorkspacePool::global();
  const bool created = pool.capacity(device, stream, kName) < kBytes;
  void* counter = pool.get(device, stream, kName, kBytes);
  if (created) FASTINFER_CUDA_CHECK(cudaMemsetAsync(counter, 0, kBytes, stream));
  return static_cast<int*>(counter);
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
  const auto append = [&](const PipelinedEntry& e) {
    if (e.act == act && e.state == state) out.push_back(e.tactic);
  };
  for_each_pipelined(append, kPipelined, kChunked);
  // Appended after the session-3/4 tactics (tuner ids index this list: gdn_decode/v4).
  for (const auto& family : kSmall)
    for (const LauncherEntry& e : family)
      if (e.act == act && e.state == state)
        for (int warps : kSmallWarpCounts) {
          DecodeTactic t{e.lanes_per_row, e.rows_per_thread, warps, 0};
          t.small_batch = true;
          if (find_launcher({act, state, t}) != nullptr) out.push_back(t);
        }
  // Appended in session 7 (gdn_decode/v5): the pipelined kernels with the dynamic work order.
  for_each_pipelined(append, kDynamic, kChunkedDynamic);
  // Appended in session 8 (gdn_decode/v6): the pipelined kernels with a claimed tail.
  for_each_pipelined(append, kClaimedTail, kChunkedTail);
  return out;
}

DecodeTactic choose_decode_tactic(DType state, long long batch, int heads_v, int tokens, const DeviceInfo& device) {
  // From the H200 sweeps of sessions 2-5 (fastinfer_bench gdn_decode, heads 16/32, B 1..512, T 1
  // and 4, fp32 and bf16 pools; tables in docs/GDN_DECODE.md; B <= 8 timed with the calls queued).
  // The tuner (decode_tunable.h) replaces this per batch bucket once tuned. Thresholds are in
  // states (batch x heads_v) per SM; "B = n" below means heads_v = 32 on 132 SMs.
  const long long states = batch * heads_v;
  const long long sms = device.sm_count;
  auto small = [](int lanes, int rows, int warps) {
    DecodeTactic t{lanes, rows, warps, 0};
    t.small_batch = true;
    return t;
  };
  // One token, below 4 states per SM (session 5, B = 1/2/4/8): the small-batch variant 8 x 2 x 2
  // for fp32 pools (7.97/9.28/11.01/15.81 us, within 0.2 us of the best tactic of each batch, 0.5
  // us under the register kernel at B = 1); for bf16 pools up to half a state per SM (B = 1, 2:
  // 7.49/8.38 us against 7.94/8.61 for the register kernel), then register 16 x 4 x 4 (B = 4: 9.79
  // us; the small variant 10.37), and the pipelined kernel from 1.5 states per SM (B = 8: 12.99 us
  // against 13.82).
  if (tokens == 1 && states < 4 * sms) {
    if (state == DType::kFloat32) return small(8, 2, 2);
    if (2 * states <= sms) return small(8, 2, 2);
    if (2 * states < 3 * sms) return {16, 4, 4, 0};
    return {8, 4, 8, 1};
  }
  // fp32 pool, one token: the register kernel. Session 3's sweep (H200, heads 16/32 and 16/64):
  // 8 lanes x 4 rows in 2-warp CTAs from 4 states per SM up (B = 32..512: 73-90% of the copy
  // bandwidth, 5-14% faster than 16 x 4 x 2, which session 2 had measured fastest everywhere).
  if (state == DType::kFloat32 && tokens == 1 && states < 48 * sms) return {8, 4, 2, 0};
  // From 48 states per SM (B = 256 and 512) the pipelined kernel with the dynamic work order is
  // 0.5-2% faster (session 7, H200, production path against HEAD's register kernel in the same
  // job: B = 256 0.2820-0.2833 ms against 0.2844-0.2861, B = 512 0.5530-0.5541 against
  // 0.5647-0.5663; at B = 32/64 the register kernel stays 2-5% ahead of it).
  if (state == DType::kFloat32 && tokens == 1) return dynamic_items({8, 4, 8, 1});
  // bf16 pools, windows of 2..4 tokens: the tensor-core kernel, three CTAs per SM, from a quarter
  // state per SM (session 5, T = 4: B = 2 tile-major L4R2W4P3C 9.57 us against 9.92 for register
  // 16 x 4 x 4; above half a state per SM state-major L4R2W4P3CM: B = 4/8/256/512 11.2/13.6/
  // 164/319 us against 11.7/15.1/167/324 tile-major, B = 32/64 within 1%: 30.1/49.6 against
  // 29.8/49.3). B = 1 stays on the register kernel (9.0 us; tensor-core 9.1).
  // Session 8: from 12 states per SM the state-major order with a claimed tail (75% of each CTA's
  // share of states static, then whole states claimed; H200 batch 2, same job: B = 256
  // 0.1582-0.1583 ms against 0.1649-0.1651 static, B = 512 0.3065-0.3066 against 0.3217-0.3225,
  // B = 64 0.0473/0.0481 against 0.0487/0.0481; B = 32 static stays, 0.0287-0.0289 against 0.0300).
  if (state == DType::kBFloat16 && tokens >= 2 && tokens <= 4 && states >= 12 * sms) return state_major_claimed_tail();
  if (state == DType::kBFloat16 && tokens >= 2 && tokens <= 4 && 4 * states > sms) {
    // (Session 7: tile-major with claimed tiles, L4R2W4P3CD, was 3-8% slower than state-major at
    // B = 32-512: B = 256 0.1724-0.1734 ms against 0.1645-0.1655.)
    DecodeTactic t{4, 2, 4, 3, true};
    t.state_major = 2 * states > sms;
    return t;
  }
  // bf16 pools, 5..8 tokens, from 4 states per SM: the tensor-core kernel on half states, two
  // CTAs per SM (session 3, T = 4 shapes: B = 64/256/512 0.0670/0.2350/0.4526 ms against
  // 0.0672/0.2388/0.4663 for the pipelined kernel; its three-CTA stages hold 4 tokens only).
  if (state == DType::kBFloat16 && tokens >= 5 && tokens <= kDecodePipelinedMaxTokens && states >= 4 * sms)
    return {4, 2, 4, 2, true};
  // bf16 pools, one token: sessions 6-7 took the static L16R4W16P1 (16 consumer warps of 16 lanes
  // per row) from 32 states per SM (B = 256 0.1492-0.1515 ms against 0.1524-0.1560 for L8R4W8P1,
  // B = 512 0.2908-0.2941 against 0.2957-0.2986) and L8R4W8P1 below (B = 32: 0.0267 against 0.0272).
  // Session 8: from 12 states per SM, L8R4W8P1 with a claimed tail (90% of each CTA's share in the
  // static order, then tiles claimed; H200 batch 1, same job, 75% / 90%: B = 64 0.0435-0.0436 /
  // 0.0434-0.0436 ms against 0.0440-0.0444 static and 0.0439-0.0442 for L16R4W16P1, B = 256
  // 0.1462-0.1468 / 0.1462-0.1466 against 0.1483-0.1498 for L16R4W16P1; batch 2 production path
  // (75%): B = 64/256/512 0.0443-0.0444 / 0.1483-0.1498 / 0.2886-0.2890 against HEAD's
  // 0.0451-0.0452 / 0.1492-0.1510 / 0.2940-0.2947; B = 32 static stays ahead, 0.0255 against 0.0263).
  if (state == DType::kBFloat16 && tokens == 1 && states >= 12 * sms) return claimed_tail({8, 4, 8, 1});
  // Otherwise bf16 pools (one token) and fp32 MTP windows: the pipelined kernel (whole-state tiles,
  // 8 consumer warps, one CTA per SM) was the fastest from B = 32 (1024 states, ~8 per SM) up:
  // 3-23% over the best register tactic (session 2).
  // fp32 MTP windows from 12 states per SM: the dynamic work order (session 7, H200, T = 4, jobs 2
  // and 4: B = 64 0.0821-0.0831 ms against 0.0854-0.0873 static, B = 256 0.2881-0.2907 against
  // 0.3022-0.3102, B = 512 0.5602-0.5655 against 0.5971-0.6070; B = 32 0.0488-0.0496 against
  // 0.0479-0.0489, so static there). Not for bf16 pools at T = 1: 1-5% slower (B = 32..512).
  if (state == DType::kFloat32 && tokens <= kDecodePipelinedMaxTokens && states >= 12 * sms) return dynamic_items({8, 4, 8, 1});
  if (tokens <= kDecodePipelinedMaxTokens && states >= 4 * sms) return {8, 4, 8, 1};
  // fp32 MTP windows from 1.5 states per SM (session 5, T = 4, B = 8: register 8 x 4 x 4 18.4 us
  // against 20.7 for 16 x 4 x 4 and 20.2 pipelined).
  if (state == DType::kFloat32 && tokens <= kDecodePipelinedMaxTokens && 2 * states >= 3 * sms) return {8, 4, 4, 0};
  // Few states (B = 1..4, T = 4: within 0.3 us of the best tactic of each case) and windows of
  // more than 8 tokens: 32-row CTAs of 16 lanes per row.
  return {16, 4, 4, 0};
}

}  // namespace fastinfer::gdn
