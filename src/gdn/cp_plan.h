#pragma once
// How the context-parallel (CP) prefill cuts a call into work: the CP chunk length, the number of
// chunks per sequence, and when CP pays off at all. Host-only, unit-tested without a GPU.
#include <cstdint>

namespace fastinfer::gdn::detail {

inline constexpr int kCpBlockLen = 64;  // the prefill kernel's chunk; CP chunks are multiples of it
inline constexpr std::int64_t kCpMaxSequences = 65535;  // stages 1-3 run one sequence per grid z index

struct CpPlan {
  std::int64_t num_seqs = 0;
  std::int64_t num_state_heads = 0;
  std::int64_t chunk_len = 0;       // tokens per CP chunk, a multiple of kCpBlockLen
  std::int64_t chunks_per_seq = 0;  // ceil(max_seqlen / chunk_len), at least 1
  // Stages 2-3 work on map pieces: every chunk cut into map_splits equal pieces (a divisor of the
  // chunk's block count), one stage-2 CTA and one fix-up step per piece (cp_map_splits).
  std::int64_t map_splits = 1;
  std::int64_t blocks_per_seq() const { return chunks_per_seq * (chunk_len / kCpBlockLen); }
  std::int64_t segments() const { return num_seqs * chunks_per_seq; }
  std::int64_t map_len() const { return chunk_len / map_splits; }
  std::int64_t maps_per_seq() const { return chunks_per_seq * map_splits; }
  std::int64_t map_rows() const { return num_seqs * maps_per_seq(); }  // rows of the M and B workspaces
};

// The chunk rule (docs/GDN_CP.md): the chunk-parallel stages run one CTA per (chunk, head), so
// aim for num_seqs * heads * chunks close to one full wave of SMs, with chunks no shorter than
// kCpMinChunkLen tokens so the serial fix-up (one 128x128 step per chunk) stays short.
// max_seqlen is the real longest sequence of the call (FlashInfer sizes this from the total token
// count, which oversizes the grid N-fold for N > 1).
inline constexpr std::int64_t kCpMinChunkLen = 512;  // unmeasured: fix-up step ~2 us vs 8 blocks of chunk work
CpPlan make_cp_plan(std::int64_t num_seqs, std::int64_t num_state_heads, std::int64_t max_seqlen, int sm_count,
                    std::int64_t forced_chunk_len = 0);

// Pieces per chunk for stages 2-3. Stage 2 runs one CTA per (piece, head) at one CTA per SM, and
// only the chunks before each sequence's last need maps, so one piece per chunk can leave SMs
// idle (1 x 128k, 32 heads: 3 x 32 = 96 CTAs on 132 SMs; 16/64 1 x 64k: 64). The rule picks the
// divisor s of the chunk's block count (pieces >= kCpMinMapBlocks blocks) with the least
//     waves(N * Hsab * mapped chunks * s) * blocks per piece * kCpMapBlockUs
//       + mapped chunks * s * fix-up step time
// `last_chunk_mapped`: whether the last chunk of each sequence is composed too (final_states).
// Costs re-fitted on the H200: a stage-2 block 4.8 us per CTA at one CTA per SM (session 8, cp10
// batch 3, stage 2 on stage 1's ready tiles: 1x128k 1.795 ms / 384 block times = 4.7, 16/64 1x64k
// 1.197 / 256 = 4.7, 2/8 1x64k 0.304 / 64 = 4.8, 1x32k 0.463 / 96 = 4.8, 1x8k 0.172 / 32 = 5.4
// with the launch; 7.0 before it gave the same picks on every bench shape, and so does 4.8); a
// fix-up step
// 3 + 0.24 us per (sequence, head) (stage 3 minus ~10 us of launch and first load: 4.9-5.6 us at
// 8 heads, 10-11 us at 32, 18 us at 64; session 6, cp8 batch 1). Session 3's constants (12 us,
// max(5, 0.6 per pair)) gave the same picks on every benchmark shape; so do these.
inline constexpr std::int64_t kCpMinMapBlocks = 4;    // 256 tokens: unmeasured
inline constexpr double kCpMapBlockUs = 4.8;
inline constexpr double kCpFixupStepBaseUs = 3.0;
inline constexpr double kCpFixupStepPerPairUs = 0.24;
std::int64_t cp_map_splits(const CpPlan& plan, int sm_count, bool last_chunk_mapped);
// The largest divisor of the plan's blocks per chunk that is <= wanted (at least 1).
std::int64_t cp_map_splits_at_most(const CpPlan& plan, std::int64_t wanted);

// Whether CP should run (use_cp = Auto): the per-(sequence, head) path keeps fewer than 40 % of the
// SMs busy (N Hsab < 0.4 SMs) and some sequence has at least kCpAutoMinSeqLen tokens; or at most
// half of them (N Hsab <= 0.5 SMs) with at least kCpAutoHalfSmsMinSeqLen tokens. Session 8 (stage 2
// on ready tiles; H200 cp10 batch 3, bench routine gdn_cp_rule, CP / plain ms): at 64 pairs CP now
// wins from 4k (16/64 1x4k 0.361 / 0.371, 16/32 2x4k 0.372 / 0.377, 2/8 8x4k 0.361 / 0.365; 8k:
// 16/64 1x8k 0.641 / 0.715, 16/32 2x8k 0.657 / 0.728, 2/8 8x8k 0.638 / 0.709) and still loses at
// 2k (16/64 1x2k 0.222 / 0.198), so the second clause starts at 4k (was 8k); at 32 pairs the first
// clause stands (16/32 1x1k 0.115 / 0.099 lost, 1x2k 0.157 / 0.187 and 2/8 4x2k 0.158 / 0.183
// won). The second clause since session 7 (stage 4 without the solve, docs/GDN_CP.md), H200 cp9 batch 4, CP /
// plain ms at N Hsab = 64: 16/64 1x8k 0.779 / 0.846, 1x16k 1.467 / 1.645, 1x32k
// 2.852 / 3.238, 1x64k 5.630 / 6.404, 16/32 2x8k 0.798 / 0.852, 2x32k 2.860 / 3.247, 2/8 8x8k
// 0.774 / 0.836, 8x32k 2.778 / 3.193; 16/64 1x4k even (0.441 / 0.449), 1x2k lost (0.269 /
// 0.244); at 96 pairs even (16/32 3x8k 0.934 / 0.925), at 128 lost by 1-2 % (4x8k 1.005 / 0.992,
// 2/8 16x4k 0.522 / 0.515). Between 64 pairs and 0.5 SMs (66) interpolated. The first
// clause: since the session-6 prefill kernel (1.3x faster plain path) the H200 run at 7521fb2 measured CP losing at
// N Hsab = 64 (16/64 1x64k 6.92 vs 6.41 ms; 16/32 2x8k 0.958 vs 0.851) and winning at 32 (16/32
// 1x8k 0.645 vs 0.801; 1x128k 7.84 vs 11.77; 2/8 4x2k even); 0.4 SMs (52 at 132 SMs) is where the
// CP / plain ratio interpolated between those two points crosses 1, not a measured boundary.
// Before that, with 2 N Hsab < SMs, measured on the H200 (docs/GDN_CP.md): CP loses at N*Hsab = 128 (4x8k
// 4.47 vs 4.03 ms: one chunk per sequence, stages 1-3 are pure overhead), which is FlashInfer's
// 2 N Hsab < SMs. With the warp-specialised stage 4 (session 3) the plain path won at 16/32 1x1k
// (0.219 vs 0.265 ms) and CP at 1x2k (0.374 vs 0.445 ms), hence 2048; shorter sequences with
// fewer heads are unmeasured.
inline constexpr std::int64_t kCpAutoMinSeqLen = 2048;
inline constexpr std::int64_t kCpAutoHalfSmsMinSeqLen = 4096;
// Whether stage 2 prefetches the next block (CpOptions::prefetch_blocks = -1). The mma.sync kernels
// always gain (1-9 %, H200 session 4). The wgmma kernel gains where the plan cuts chunks into map
// pieces of >= kCpPrefetchMinPieceBlocks blocks, i.e. where stage 2 fills the GPU (H200 session 6,
// cp8 batch 2: 1x128k 2.504 -> 2.454 ms, 16/64 1x64k 1.682 -> 1.613, 2x8k 0.230 -> 0.218, 1x32k
// even) and loses with one piece per chunk (1x8k 0.230 -> 0.234, 2/8 1x64k 0.430 -> 0.438) and on
// 4-block pieces (1x1k 0.032 -> 0.035).
inline constexpr std::int64_t kCpPrefetchMinPieceBlocks = 8;
// The stage 2 on stage 1's ready tiles (CpOptions::ready_tiles) prefetches always: its copies go
// straight into the tiles, nothing is held in registers (H200 cp10 batches 2-4: faster at every
// bench row, 1x128k 1.894 -> 1.814 ms, 1x8k 0.174 -> 0.161, 1x1k even).
bool cp_prefetch_blocks(const CpPlan& plan, bool wgmma_maps, bool ready_tiles = false);
// Stage 3 rows per CTA: 32 (4 CTAs per sequence and head, a quarter of the L2 traffic of M per
// step) when that still puts a CTA on at least every other SM; 8 (16 CTAs of one row per thread)
// when those 16 N Hsab CTAs fit one wave; else 16. H200 (cp7 batch 3): 32 rows faster at 16/32 and
// 16/64 (1x128k 0.136 vs 0.142 ms), 16 rows at 2/8 (0.091 vs 0.160); cp10 batch 4: 8 rows at 2/8
// 1x8k 0.087 vs 0.090 ms, 1x64k 0.087 vs 0.091, slower from 32 pairs (16/32 2x8k 0.085 vs 0.047).
int cp_fixup_rows(const CpPlan& plan, int sm_count);

// Whether every sequence of a call with total_tokens packed tokens fits the plan (chunks_per_seq x
// chunk_len tokens): then no stage-4 segment runs past the plan and stage 1's T_g covers every
// chunk stage 4 reads. A sequence is never longer than the packed tensor, so this holds without
// a max_seqlen hint (the plan is sized from the token count) and for one sequence with its exact
// hint; with N > 1 and a hint the host cannot tell (the lengths live on the device), and a hint
// below the longest sequence must stay exact, so stage 4 keeps the solve fallback there.
bool cp_plan_covers_tokens(const CpPlan& plan, std::int64_t total_tokens);

bool should_use_cp(std::int64_t num_seqs, std::int64_t num_state_heads, std::int64_t max_seqlen, int sm_count);

// Whether use_cp = Auto may pick CP at all. On since stage 2 carries its operands as hi + lo pairs
// like the prefill kernel (the single rounding missed the bf16 state tolerance at alpha = 1 or
// beta = 1 over 2000 tokens: err/tol 1.2-1.95 on the H200, 1.19-1.95 in the CPU mirror; hi + lo:
// 0.003 in the mirror, docs/GDN_CP.md "Numerics").
inline constexpr bool kCpAutoEnabled = true;

}  // namespace fastinfer::gdn::detail
