#pragma once
// Configuration and shared-memory layout of the warp-specialised GDN prefill kernel
// (prefill_fast_sm90.cuh). Two stages of chunk inputs (q, k, v, the gated inverse T_g, the
// masked P = (Q K^T) o Gamma and the gates) let the producer warpgroup prepare chunk c+1 while
// the consumer warps run chunk c's state-dependent products.
#include <cstdint>

#include "gdn/prefill_params.h"

// Which of the state-feeding products run single-pass (one product of rounded operands, no lo
// part): bit 0 U = X T_g (bf16), bit 1 the state update (bf16), bit 2 U (fp16), bit 3 the state
// update (fp16). A build-time switch for experiments: none holds the issue's state tolerances
// in every GPU test (session 8, docs/GDN_PREFILL_FAST.md), so all are off.
#ifndef FASTINFER_PREFILL_SINGLE_PASS
#define FASTINFER_PREFILL_SINGLE_PASS 0
#endif
// P's decay factors off the diagonal blocks from the producer's per-chunk tables
// (FastConfig::kPDecayTables; 0 builds session 7's epilogue, an exponential per element).
#ifndef FASTINFER_PREFILL_P_TABLES
#define FASTINFER_PREFILL_P_TABLES 1
#endif

namespace fastinfer::gdn::kernels::fast {

// Where one kernel instantiation's chunks get T = (I + A0)^-1: solved by the producer; T_g
// precomputed and loaded (PrefillParams::chunk_t_gated); or a precomputed Tinv loaded where there
// is one (PrefillParams::chunk_inverse, the consumers build T_g from it), else solved.
// kTGatedOrSolve: CP stage 4 on stage 1's T_g, the chunks of a segment past the plan solving their own.
enum class TSource : std::uint8_t { kSolve, kTGated, kInverseOrSolve, kTGatedOrSolve };

struct FastConfig {
  static constexpr int kChunk = 64;
  static constexpr int kDim = 128;
  static constexpr int kConsumerWarps = 8;  // warp w owns state rows (V) 16w .. 16w+15
  static constexpr int kProducerWarps = 4;  // one warpgroup: loads, gates, A0, P, T, T_g
  static constexpr int kConsumerThreads = 32 * kConsumerWarps;
  static constexpr int kProducerThreads = 32 * kProducerWarps;
  static constexpr int kThreads = kConsumerThreads + kProducerThreads;
  static constexpr int kStages = 2;
  static constexpr int kPitchD = kDim + 8;    // 16-bit tiles with 128 columns (conflict-free ldmatrix)
  static constexpr int kPitchC = kChunk + 8;  // 16-bit tiles with 64 columns
  static constexpr int kPitchF = kChunk + 1;  // fp32 64x64 tiles of the triangular solve
  static constexpr float kMinLogAlpha = -80.0f;  // must equal ref::kMinLogAlpha
  static constexpr int kProducerBarrier = 1;     // named barrier id of the producer warpgroup
  static constexpr int kConsumerBarrier = 2;     // named barrier id of the consumer warps (T_g build)
  // The consumers' state products on wgmma (two warpgroups of 64 state rows, S and X / U from
  // registers, B from the swizzled stage tiles: prefill_fast_consumer_wgmma.cuh), else on mma.sync
  // per warp (prefill_fast_consumer.cuh, the session-4 products on the swizzled tiles), per T
  // source. The wgmma form runs with the setmaxnreg split below: ptxas pipelines its wgmmas only at
  // >= 192 registers per consumer thread (at 168 it serialised them, C7511; session 5).
  // Only the producers without the solve fit 120 registers: with it (kSolve, and the rare solve of
  // kTGatedOrSolve) they spill, and the mma.sync consumers at 168 were faster (H200, session 6
  // batches 1-2: 64x1k 16/32 solve 5.94 vs 7.14 ms; CP 1x8k 16/32 0.799 vs 0.856 ms).
  static constexpr bool wgmma_consumers(TSource source) {
    return source == TSource::kTGated || source == TSource::kInverseOrSolve;
  }
  // With T_g loaded each consumer warpgroup computes the whole P itself (SS wgmma beside S K^T,
  // into its own tile): no consumer barrier between the warpgroups inside a chunk, and P's tensor
  // work overlaps S K^T (session 7; the consumers' P share on mma.sync and its barrier took ~2.2k
  // of their ~8.7k cycles per chunk, H200 part profile).
  static constexpr bool warpgroup_p(TSource source) { return source == TSource::kTGated; }
  static constexpr int kWarpgroupBarrier = 5;  // and 6: one warpgroup's P (or output tile) complete
  // The wgmma consumers store full chunks' outputs by TMA from the stage's v tile (the per-thread
  // 16-byte stores took ~1.3k of their ~8.7k cycles per chunk, H200 part profile, session 7).
  static constexpr bool kTmaOutput = true;
  // Single-pass products (FASTINFER_PREFILL_SINGLE_PASS): U = X T_g from hi(X) hi(T_g) alone (the
  // stage's T_g lo tile is neither loaded nor read), and the state update from hi(U_d) alone;
  // else hi + lo pairs (docs/GDN_PREFILL.md "Numerics").
  static constexpr bool single_pass_u(InputType type) {
    return (FASTINFER_PREFILL_SINGLE_PASS >> (type == InputType::kBFloat16 ? 0 : 2)) & 1;
  }
  static constexpr bool single_pass_state(InputType type) {
    return (FASTINFER_PREFILL_SINGLE_PASS >> (type == InputType::kBFloat16 ? 1 : 3)) & 1;
  }
  // The wgmma consumers' P epilogue (each warp its 16 rows of P, row block b with b + 1 column
  // blocks) takes Gamma[t][j] = e^{G_t - G_j} off the diagonal blocks as rowq[c][t] x colf[j]
  // (FastGates::kRowQ, kColF: the producer's per-chunk tables, two exponentials per thread; both
  // factors <= 1 as G does not increase) and keeps the exponential on the diagonal blocks only.
  static constexpr bool kPDecayTables = FASTINFER_PREFILL_P_TABLES;
  // The split of the CTA's 384 x 168 registers (setmaxnreg can only move registers between warps).
  static constexpr int kProducerRegisters = 120;
  static constexpr int kConsumerRegisters = 192;
};

// Gates of one chunk (fp32, 64 each): G = cumsum log alpha, e^G, e^{G_63 - G} (the decay of
// token t to the chunk end; padded tokens have alpha = 1 so G_63 is the last real token's G), beta,
// the raw alpha and beta values as loaded (cp.async, one chunk ahead), q's L2 scale 1 / |q_t| (1
// without the norm: q stays as loaded and its rows are scaled where they are used, in P and
// S Q^T) and e^G times it (the output's token scale).
struct FastGates {
  static constexpr int kG = 0, kExpG = 64, kDecayToEnd = 128, kBeta = 192, kRawAlpha = 256, kRawBeta = 320;
  static constexpr int kQScale = 384, kExpGQ = 448;
  // With FastConfig::kPDecayTables: kRowQ + 64 c + t = e^{G_t - G_{16c+15}} / |q_t| for the
  // column blocks c < t / 16 (c < 3), kColF + j = e^{G_{16(j/16)+15} - G_j}.
  static constexpr int kRowQ = 512, kColF = 704;
  static constexpr int kFloats = FastConfig::kPDecayTables ? 768 : 512;
};

// The tiles that feed wgmma (q, k, T_g hi / lo, P) are stored in the 128-byte swizzle of GMMA's
// canonical layouts: 128-byte rows (64 16-bit elements), the 16-byte vector c of row r at
// position c ^ (r % 8), 8-row atoms of 1024 bytes. A 128-column tile (q, k) is two such 64-column
// halves of 8 KiB each. The same bytes serve as a K-major B operand ([n][k], k contiguous: q and k
// for S K^T, S Q^T; T_g and P) and as an MN-major one (k for the state update, [k = t][n = d]).
// ldmatrix on them stays conflict-free: the 8 row addresses of one 8x8 matrix land on 8
// different 16-byte bank groups. v (loaded by TMA in the same swizzle, read by ldmatrix.trans) too;
// the output staging tile keeps a padded pitch.
// (Bit operations: the compiler sees that rows r0 + 8 m share one swizzle.)
__device__ __forceinline__ int swizzled_c(int row, int col) {  // element offset in a [64][64] tile
  return row * 64 + ((((col >> 3) ^ row) & 7) << 3) + (col & 7);
}
__device__ __forceinline__ int swizzled_d(int row, int col) {  // element offset in a [64][128] tile
  return ((col >> 6) << 12) + swizzled_c(row, col & 63);
}

struct FastSmem {
  using Cfg = FastConfig;
  static constexpr int kTileD = Cfg::kChunk * Cfg::kPitchD * 2;  // [64][136] 16-bit (padded)
  static constexpr int kSwizzledD = Cfg::kChunk * Cfg::kDim * 2;  // [64][128] 16-bit, swizzled
  static constexpr int kSwizzledC = Cfg::kChunk * Cfg::kChunk * 2;  // [64][64] 16-bit, swizzled
  static constexpr int kTileF = Cfg::kChunk * Cfg::kPitchF * 4;  // [64][65] fp32
  // One stage; the swizzled tiles first (each 1024-byte aligned).
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + kSwizzledD;
  static constexpr int kTGated = kK + kSwizzledD;  // T_g[t][j] = T[t][j] beta_j Gamma[t][j], j <= t, rounded
  static constexpr int kTGatedLo = kTGated + kSwizzledC;  // T_g - round(T_g), rounded
  static constexpr int kP = kTGatedLo + kSwizzledC;  // P[t][j] = (q_t . k_j) Gamma[t][j], j <= t
  // A precomputed Tinv (fp32 [64][64], row-major, lower triangle loaded) lands where T_g hi/lo go:
  // whoever builds T_g reads it into registers before writing T_g.
  static constexpr int kInverseIn = kTGated;
  // The wgmma consumers' second P tile (FastConfig::warpgroup_p: each warpgroup computes the whole
  // P into its own tile, warpgroup 1 into this one).
  static constexpr int kP1 = kP + kSwizzledC;
  static constexpr int kV = kP1 + kSwizzledC;  // swizzled like q and k (one TMA box layout)
  static constexpr int kGates = kV + kSwizzledD;
  static constexpr int kStageBytes = (kGates + FastGates::kFloats * 4 + 1023) / 1024 * 1024;
  // Producer-private solve tiles, the consumers' output staging tile, the stage barriers.
  static constexpr int kA0 = Cfg::kStages * kStageBytes;
  static constexpr int kInverse = kA0 + kTileF;
  static constexpr int kScratch = kInverse + kTileF;  // one block row of partial sums: 16 x 48 fp32
  static constexpr int kOut = kScratch + 16 * 48 * 4;
  static constexpr int kBarriers = kOut + kTileD;  // full[kStages], empty[kStages], loaded[kStages]
  static constexpr int kPartClock = kBarriers + 3 * Cfg::kStages * 8;  // profile builds: PartClock (16 bytes)
  static constexpr int kBytes = kPartClock + 16;
  static_assert(kBytes <= 227 * 1024, "exceeds the sm_90 shared memory per block");
  static_assert(kP - kInverseIn >= Cfg::kChunk * Cfg::kChunk * 4, "Tinv must fit the T_g tiles (P is written meanwhile)");
  static_assert(kStageBytes % 1024 == 0 && kK % 1024 == 0 && kTGated % 1024 == 0 && kTGatedLo % 1024 == 0 &&
                kP % 1024 == 0 && kV % 1024 == 0 && kOut % 16 == 0 && kBarriers % 8 == 0);
};

}  // namespace fastinfer::gdn::kernels::fast
