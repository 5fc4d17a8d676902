#pragma once
// CP stage 2: per CP chunk (or piece of one, CpStageParams::map_splits) and state head, the affine
// map H_out = H_in M + B of its tokens, composed block by block (docs/GDN_CP.md). For a block with T = Tinv diag(beta), gates G
// (running log alpha) and gL = G[last]:
//     A  = T K,  Ud = T diag(exp(gL - G)) V                      (64 x 128 each)
//     P  = exp(gL) (I - A^T K),  Bv = Ud^T K
//     [M; B] <- [M; B] P + [0; Bv] = exp(gL) [M; B] + Z K,   Z = [0; Ud^T] - exp(gL) [M; B] A^T
// The stacked [M; B] (256 x 128, fp32) lives in registers: warp w owns rows 32w..32w+31 (fp16
// operands: 16 warps, rows 16w..16w+15), and a
// row's update needs only that row (the recurrence is row-separable), so each warp feeds its own
// accumulator fragments back as MMA A operands (C-fragment == A-fragment layout after packing).
// Every multiplier exp(.) is <= 1, so nothing overflows however small the gates are.
// Numerics (as the prefill kernel, commit 0ce9fd6): every operand that is not an exact input is
// carried as a 16-bit pair hi = round(x), lo = round(x - hi) (~16 significant bits), and a product
// x * y becomes hi*hi + lo*hi + hi*lo (the lo*lo term is below fp32 accumulation noise). K and V
// are the (normalised) inputs, rounded once as the prefill kernel rounds them. A single rounding of
// [M; B] and T cost ~8e-3 relative error in M and missed the bf16 state tolerance at alpha = 1.
// kFp16Operands (CpStageParams::fp16_operands): T, A, [M; B] and Z rounded once to fp16 instead
// (11 significant bits against bf16's 8), one MMA per product; K is converted to fp16 after its
// input rounding (exact for |k| >= 2^-17), and [M; B] and Z are scaled by a power of two per row
// row (its maximum into [2^14, 2^15)) so that fp16's range fits rows of any magnitude. T diag(exp(gL - G))
// stays a hi + lo pair against V in its input dtype (V is not normalised: its range is the caller's).
#include <type_traits>

#include "gdn/cp_launch.h"
#include "gdn/kernels/cp_chunk_maps_mma_sm90.cuh"
#include "gdn/kernels/cp_chunk_maps_ready_sm90.cuh"
#include "gdn/kernels/cp_chunk_maps_wgmma_sm90.cuh"
#include "gdn/kernels/cp_common_sm90.cuh"
#include "runtime/once_per_device.h"

namespace fastinfer::gdn::detail::cp {

inline constexpr int kMapThreads = 256;  // bf16 hi + lo: 8 warps of 32 rows of [M; B]
// fp16 operands: 16 warps of 16 rows (<= 128 registers each, one CTA per SM either way): twice the
// warps per scheduler to hide the MMA and shared-memory latency the 8-warp kernel is bound by.
inline constexpr int kMapThreadsFp16 = 512;
template <bool kFp16Operands>
inline constexpr int kMapThreadsOf = kFp16Operands ? kMapThreadsFp16 : kMapThreads;

// kPrefetch: block b + 1's Tinv, K, V (cp.async) and gates (registers) are loaded while block b
// is computed, instead of one exposed memory round trip at the top of every block.
// kWgmma (implies kFp16Operands): every product as a warpgroup MMA (cp_chunk_maps_wgmma_sm90.cuh).
template <class E, class KE, bool kPrefetch, bool kWgmma>
using ChunkMapsSmemOf = std::conditional_t<kWgmma, ChunkMapsWgmmaSmem<E, kPrefetch>, ChunkMapsSmem<E, KE, kPrefetch>>;

// Whether 16-byte chunk q of a row-major 64 x 64 fp32 Tinv lies in a 16x16 block above the diagonal.
__device__ inline bool upper_tinv_chunk(int q) { return (q % (kC / 4)) / 4 > (q / (kC / 4)) / 16; }

template <CpInputType kInput, bool kPrefetch, bool kFp16Operands, bool kWgmma = false>
__global__ void __launch_bounds__(kMapThreadsOf<kFp16Operands>, 1) chunk_maps_kernel(const CpStageParams p) {
  static_assert(!kWgmma || kFp16Operands, "the wgmma variant has fp16 operands");
  constexpr int kThreads = kMapThreadsOf<kFp16Operands>, kWarps = kThreads / 32;
  constexpr int kTiles = kFp16Operands ? 1 : 2;  // 16-row tiles of [M; B] per warp
  using In = Input<kInput>;
  using E = typename In::T;
  using Op = Input<CpInputType::kFloat16>;  // the fp16 operand type of kFp16Operands
  using KE = std::conditional_t<kFp16Operands, __half, E>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // (No alignment round-up of the base: through an integer cast the compiler loses the address
  // space and every shared access becomes a generic one. The wgmma tiles need 16 bytes.)
  auto& s = *reinterpret_cast<ChunkMapsSmemOf<E, KE, kPrefetch, kWgmma>*>(smem_raw);

  // One CTA per map piece (chunk_len / map_splits tokens; the whole chunk when map_splits = 1).
  const int piece = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  const int piece_len = p.chunk_len / p.map_splits, chunk = piece / p.map_splits;
  wait_for_previous_stage();
  const std::int64_t bos = seq_offset(p, n), eos = seq_offset(p, n + 1);
  const std::int64_t c0 = bos + static_cast<std::int64_t>(piece) * piece_len;
  if (c0 >= eos) return;
  const bool last = bos + static_cast<std::int64_t>(chunk + 1) * p.chunk_len >= eos;  // in the sequence's last chunk
  if (last && p.final_states == nullptr) return;  // only the final state needs the last chunk's map
  const std::int64_t chunk_end = min(c0 + piece_len, eos);  // the piece's end

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const bool rows_of_b = warp >= kWarps / 2;
  const int row0 = (warp % (kWarps / 2)) * 16 * kTiles;  // first row (of M or of B) this warp owns

  // acc[mt][nt][e]: row row0 + 16 mt + g + 8 (e / 2), column 8 nt + 2 t + e % 2. M = I, B = 0.
  float acc[kTiles][16][4];
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < 16; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = row0 + mt * 16 + g + (e / 2) * 8, c = nt * 8 + 2 * t + (e % 2);
        acc[mt][nt][e] = (!rows_of_b && r == c) ? 1.f : 0.f;
      }

  // kWgmma: the rows are acc x held (power-of-two row scales, compose_rows_wgmma).
  float held[2] = {1.f, 1.f};

  const int hk = h * p.num_k_heads / p.num_state_heads, hv = h * p.num_v_heads / p.num_state_heads;
  const E* k_head = static_cast<const E*>(p.k) + static_cast<std::int64_t>(hk) * p.k_stride_head;
  const E* v_head = static_cast<const E*>(p.v) + static_cast<std::int64_t>(hv) * p.v_stride_head;
  const int blocks_per_piece = piece_len / kC;

  // Tinv is lower triangular: with lower_inverse_blocks stage 1 writes only its 16x16 blocks on or
  // below the diagonal and only these are copied; the others are zeroed here once (visible after
  // the first block's barriers; no copy ever writes them).
  if (p.lower_inverse_blocks)
    for (int q = threadIdx.x; q < kC * kC / 4; q += kThreads)
      if (upper_tinv_chunk(q)) reinterpret_cast<float4*>(s.tinv)[q] = make_float4(0.f, 0.f, 0.f, 0.f);

  // kWgmma: the T tiles' 16x16 blocks above the diagonal are zero in every block; the T build
  // skips them (visible after the first block's barriers).
  if constexpr (kWgmma)
    for (int e = threadIdx.x; e < kC * kC; e += kThreads) {
      const int r = e / kC, c = e % kC;
      if (c / 16 > r / 16) {
        *s.t_k.template at<__half>(r, c) = __float2half_rn(0.f);
        *s.t_v[0].template at<E>(r, c) = In::from_float(0.f);
        *s.t_v[1].template at<E>(r, c) = In::from_float(0.f);
      }
    }

  // Asynchronous loads of block blk: Tinv always; K and V rows into the staging tiles when
  // prefetching (8-byte pieces, the alignment the register path needs too).
  auto issue_block_copies = [&](int blk) {
    const float* tinv = p.block_inverse + ((static_cast<std::int64_t>(n) * p.blocks_per_seq +
                                            static_cast<std::int64_t>(piece) * blocks_per_piece + blk) *
                                               p.num_state_heads + h) * kC * kC;
#pragma unroll
    for (int i = 0; i < kC * kC / 4 / kThreads; ++i) {
      const int q = threadIdx.x + i * kThreads;
      if (!p.lower_inverse_blocks || !upper_tinv_chunk(q))
        cute::SM80_CP_ASYNC_CACHEALWAYS<cute::uint128_t>::copy(reinterpret_cast<const cute::uint128_t*>(tinv)[q],
                                                              reinterpret_cast<cute::uint128_t*>(s.tinv)[q]);
    }
    if constexpr (kPrefetch) {
      const std::int64_t t0 = c0 + static_cast<std::int64_t>(blk) * kC;
      const int len = static_cast<int>((chunk_end - t0 < kC ? chunk_end - t0 : kC));
      const int t = threadIdx.x;
      if (t < kC) {  // gates (registers would stay live through the block's work)
        const std::int64_t tok = t0 + t;
        if (t < len && p.alpha) cute::SM80_CP_ASYNC_CACHEALWAYS<float>::copy(p.alpha[tok * p.alpha_stride_token + h], s.alpha_raw[t]);
        else s.alpha_raw[t] = 1.f;
        if (t < len && p.beta) cute::SM80_CP_ASYNC_CACHEALWAYS<float>::copy(p.beta[tok * p.beta_stride_token + h], s.beta_raw[t]);
        else s.beta_raw[t] = t < len ? 1.f : 0.f;
      }
#pragma unroll 1
      for (int i = 0; i < kC * kD / 4 / kThreads; ++i) {  // not unrolled: registers are short here
        const int q = threadIdx.x + i * kThreads, r = q / (kD / 4), c = (q % (kD / 4)) * 4;
        if (r < len) {
          cute::SM80_CP_ASYNC_CACHEALWAYS<std::uint64_t>::copy(
              *reinterpret_cast<const std::uint64_t*>(k_head + (t0 + r) * p.k_stride_token + c),
              *reinterpret_cast<std::uint64_t*>(&s.k_raw[r][c]));
          if constexpr (!kWgmma)
            cute::SM80_CP_ASYNC_CACHEALWAYS<std::uint64_t>::copy(
                *reinterpret_cast<const std::uint64_t*>(v_head + (t0 + r) * p.v_stride_token + c),
                *reinterpret_cast<std::uint64_t*>(&s.v_raw[r][c]));
        }
        // kWgmma: V goes straight into its wgmma tile (free: the copies are issued after the block
        // products), rows past len zero-filled.
        if constexpr (kWgmma)
          cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<std::uint64_t>::copy(
              *reinterpret_cast<const std::uint64_t*>(v_head + (t0 + (r < len ? r : 0)) * p.v_stride_token + c),
              *s.v.template at<std::uint64_t>(r, c), r < len);
      }
    }
    cute::cp_async_fence();
  };

  if constexpr (kPrefetch) issue_block_copies(0);
  for (int blk = 0; c0 + static_cast<std::int64_t>(blk) * kC < chunk_end; ++blk) {
    const std::int64_t t0 = c0 + static_cast<std::int64_t>(blk) * kC;
    const int len = static_cast<int>((chunk_end - t0 < kC ? chunk_end - t0 : kC));
    __syncthreads();  // the previous block's shared data is no longer read
    BlockRowsFetch<In, kWarps> k_fetch, v_fetch;
    BlockGatesFetch gate_fetch;
    if constexpr (kPrefetch) {
      cute::cp_async_wait<0>();
      __syncthreads();  // every thread's staged rows, gates and Tinv are visible
      k_fetch.fetch_shared(&s.k_raw[0][0], len, warp, lane);
      if constexpr (!kWgmma) v_fetch.fetch_shared(&s.v_raw[0][0], len, warp, lane);
      if (threadIdx.x < kC) gate_fetch.alpha = s.alpha_raw[threadIdx.x], gate_fetch.beta = s.beta_raw[threadIdx.x];
    } else {
      // All global loads of the block first (one round trip), then the shared-memory layouts.
      issue_block_copies(blk);
      k_fetch.fetch(k_head, p.k_stride_token, t0, len, warp, lane);
      v_fetch.fetch(v_head, p.v_stride_token, t0, len, warp, lane);
      gate_fetch.fetch(p, t0, len, h);
    }
    if constexpr (kWgmma) {
      k_fetch.store4(p.use_qk_l2norm, warp, lane, [&](int r, int c, const float (&x)[4]) {
        // input rounding first, then fp16 (exact); four elements in one 8-byte store
        auto fp16 = [](float y) { return In::to_float(In::from_float(y)); };
        *s.k.template at<uint2>(r, c) = make_uint2(Op::pack(fp16(x[0]), fp16(x[1])), Op::pack(fp16(x[2]), fp16(x[3])));
      });
      if constexpr (!kPrefetch) v_fetch.store_raw([&](int r, int c, uint2 raw) { *s.v.template at<uint2>(r, c) = raw; }, warp, lane);
    } else {
      k_fetch.store(p.use_qk_l2norm, warp, lane, [&](int r, int c, float x) {
        if constexpr (kFp16Operands) *k_at(s, r, c) = Op::from_float(In::to_float(In::from_float(x)));  // input rounding first
        else s.k[r][c] = In::from_float(x);
      });
      v_fetch.store(false, warp, lane, [&](int r, int c, float x) { s.v[r][c] = In::from_float(x); });
    }
    if constexpr (!kPrefetch) cute::cp_async_wait<0>();
    gate_fetch.finish(s.gates, s.beta);  // synchronises (the staged Tinv is visible after it)
    const float g_last = s.gates[kC - 1];
    if constexpr (kWgmma) {
      // Thread (row r0, column j) builds rows r0 + 8 i: row block i of the core-matrix tiles, one
      // offset plus immediates (exp(gL - G_j) once per column: the same value as per element).
      static_assert(kThreads % kC == 0 && kThreads / kC == 8, "one 8-row block of T per pass");
      const int j = threadIdx.x % kC, r0 = threadIdx.x / kC;
      const float beta_j = s.beta[j], ratio_j = __expf(g_last - s.gates[j]);
      const int off = CoreTile<kC>::offset(r0, j);
      // Rows above column j's 16x16 diagonal block are zero in T (Tinv is lower triangular) and
      // stay as zeroed at the start.
#pragma unroll 2
      for (int i = 2 * (j / 16); i < kC / 8; ++i) {
        const float t_beta = s.tinv[(r0 + 8 * i) * kC + j] * beta_j;
        const float t_gated = t_beta * ratio_j;
        const E hi = In::from_float(t_gated);
        const int o = off + i * CoreTile<kC>::kRowBlock;
        *reinterpret_cast<__half*>(s.t_k.bytes + o) = Op::from_float(t_beta);
        *reinterpret_cast<E*>(s.t_v[0].bytes + o) = hi;
        *reinterpret_cast<E*>(s.t_v[1].bytes + o) = In::from_float(t_gated - In::to_float(hi));
      }
    } else {
      for (int idx = threadIdx.x; idx < kC * kC; idx += kThreads) {
        const int r = idx / kC, j = idx % kC;
        const float t_beta = s.tinv[idx] * s.beta[j];
        const float t_gated = t_beta * __expf(g_last - s.gates[j]);
        if constexpr (kFp16Operands) {
          s.t_k[0][r][j] = Op::from_float(t_beta);
        } else {
          s.t_k[0][r][j] = In::from_float(t_beta);
          s.t_k[1][r][j] = In::from_float(t_beta - In::to_float(s.t_k[0][r][j]));
        }
        s.t_v[0][r][j] = In::from_float(t_gated);
        s.t_v[1][r][j] = In::from_float(t_gated - In::to_float(s.t_v[0][r][j]));
      }
    }
    if constexpr (kWgmma) fence_proxy_async_shared();  // K, V and T tiles are read by wgmma after the barrier
    __syncthreads();
    // Tinv and the staging tiles are consumed: load the next block behind this one's work.
    if constexpr (kPrefetch && !kFp16Operands)
      if (t0 + kC < chunk_end) issue_block_copies(blk + 1);
    __syncwarp();  // keeps the copies apart from the products (without it the prefetch variant spills)

    if constexpr (kFp16Operands) {
      if constexpr (kWgmma) {
        block_products_wgmma<In>(s, s.k, warp, lane);
        fence_proxy_async_shared();  // the A tile is read by wgmma after the barrier
      } else {
        block_products_fp16<In>(s, warp, lane);
      }
    } else {
      // A = T K (warps 0-3) and Ud = T diag(exp(gL - G)) V (warps 4-7); warp owns 16 token rows.
      // T is a hi + lo pair, K and V are exact: two products into one fp32 accumulator.
      const int product = warp / 4, mt = warp % 4;
      const E(*rhs)[kD + 8] = product == 0 ? s.k : s.v;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        __syncwarp();  // one half's accumulators live at a time
        float o[8][4] = {};
        // T's hi and lo fragments side by side, so each K / V fragment is loaded once for both.
        std::uint32_t a[2][4][4];
#pragma unroll
        for (int part = 0; part < 2; ++part) {
          const E(*lhs)[kC + 8] = product == 0 ? s.t_k[part] : s.t_v[part];
#pragma unroll
          for (int ks = 0; ks < 4; ++ks) {
            const int row = mt * 16 + g, col = ks * 16 + 2 * t;
            a[part][ks][0] = lds_pair(&lhs[row][col]);
            a[part][ks][1] = lds_pair(&lhs[row + 8][col]);
            a[part][ks][2] = lds_pair(&lhs[row][col + 8]);
            a[part][ks][3] = lds_pair(&lhs[row + 8][col + 8]);
          }
        }
#pragma unroll
        for (int ntp = 0; ntp < 4; ++ntp)
#pragma unroll
          for (int ks = 0; ks < 4; ++ks) {
            std::uint32_t b[4];
            load_b_pair_trans(&rhs[ks * 16][half * 64 + ntp * 16], kD + 8, lane, b);
#pragma unroll
            for (int part = 0; part < 2; ++part) {
              In::mma(o[2 * ntp], a[part][ks], b[0], b[1]);
              In::mma(o[2 * ntp + 1], a[part][ks], b[2], b[3]);
            }
          }
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int i = mt * 16 + g + (e / 2) * 8, d = half * 64 + nt * 8 + 2 * t + (e % 2);
            if (product == 0) {
              const E hi = In::from_float(o[nt][e]);
              s.a[0][i][d] = hi;
              s.a[1][i][d] = In::from_float(o[nt][e] - In::to_float(hi));
            } else {
              s.ud_t[d][i] = o[nt][e];
            }
          }
      }
    }
    __syncthreads();

    const float decay = __expf(g_last);
    if constexpr (kFp16Operands) {
      // The fp16 variant loads the next block only now, behind the composition (fewer registers
      // live across the block products: the 8-warp version of this kernel spilled otherwise).
      if constexpr (kPrefetch)
        if (t0 + kC < chunk_end) issue_block_copies(blk + 1);
      if constexpr (kWgmma) compose_rows_wgmma(s, s.k, acc[0], held, decay, rows_of_b, row0, lane);
      else compose_rows_fp16(s, acc[0], decay, rows_of_b, row0, lane);
    } else {
#pragma unroll
      for (int mt = 0; mt < kTiles; ++mt) {
        __syncwarp();  // keeps the two row tiles' Y apart (register pressure: y is 32 live floats)
        // Y = rows * A^T (16 x 64); the rows come straight from the accumulators, split into
        // hi + lo fragments: Y = rows_hi A_hi^T + rows_lo A_hi^T + rows_hi A_lo^T.
        float y[8][4] = {};
#pragma unroll
        for (int ks = 0; ks < 8; ++ks) {
          std::uint32_t a_hi[4], a_lo[4];
          split_a_fragment<In>(acc[mt][2 * ks], acc[mt][2 * ks + 1], a_hi, a_lo);
#pragma unroll
          for (int nt = 0; nt < 8; ++nt) {
            const int i = nt * 8 + g, d = ks * 16 + 2 * t;
            const std::uint32_t b_hi0 = lds_pair(&s.a[0][i][d]), b_hi1 = lds_pair(&s.a[0][i][d + 8]);
            In::mma(y[nt], a_hi, b_hi0, b_hi1);
            In::mma(y[nt], a_lo, b_hi0, b_hi1);
            In::mma(y[nt], a_hi, lds_pair(&s.a[1][i][d]), lds_pair(&s.a[1][i][d + 8]));
          }
        }
        // rows <- exp(gL) rows + Z K with Z = [0; Ud^T] - exp(gL) Y (fp32, then hi + lo A fragments
        // over the 64 tokens, 16 at a time; K exact).
#pragma unroll
        for (int nt = 0; nt < 16; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][nt][e] *= decay;
        const int r = row0 + mt * 16 + g;
#pragma unroll
        for (int kc = 0; kc < 4; ++kc) {
          float zv[2][4];
#pragma unroll
          for (int q = 0; q < 2; ++q)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int col = (2 * kc + q) * 8 + 2 * t + (e % 2);
              const float ud = rows_of_b ? s.ud_t[r + (e / 2) * 8][col] : 0.f;
              zv[q][e] = ud - decay * y[2 * kc + q][e];
            }
          std::uint32_t z_hi[4], z_lo[4];
          split_a_fragment<In>(zv[0], zv[1], z_hi, z_lo);
#pragma unroll
          for (int ntp = 0; ntp < 8; ++ntp) {
            std::uint32_t b[4];
            load_b_pair_trans(&s.k[kc * 16][ntp * 16], kD + 8, lane, b);
            In::mma(acc[mt][2 * ntp], z_hi, b[0], b[1]);
            In::mma(acc[mt][2 * ntp + 1], z_hi, b[2], b[3]);
            In::mma(acc[mt][2 * ntp], z_lo, b[0], b[1]);
            In::mma(acc[mt][2 * ntp + 1], z_lo, b[2], b[3]);
          }
        }
      }
    }
  }

  const std::int64_t map_row = static_cast<std::int64_t>(n) * p.chunks_per_seq * p.map_splits + piece;
  float* out = (rows_of_b ? p.map_b : p.map_m) + (map_row * p.num_state_heads + h) * kD * kD;
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < 16; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = row0 + mt * 16 + g + half * 8, c = nt * 8 + 2 * t;
        const float scale = kWgmma ? held[half] : 1.f;
        *reinterpret_cast<float2*>(out + r * kD + c) =
            make_float2(acc[mt][nt][2 * half] * scale, acc[mt][nt][2 * half + 1] * scale);
      }
}

template <CpInputType kInput, bool kPrefetch, bool kFp16Operands, bool kWgmma = false>
void launch_chunk_maps_variant(const CpStageParams& params, cudaStream_t stream) {
  using E = typename Input<kInput>::T;
  using KE = std::conditional_t<kFp16Operands, __half, E>;
  constexpr std::size_t smem = sizeof(ChunkMapsSmemOf<E, KE, kPrefetch, kWgmma>);
  static_assert(smem <= 227 * 1024, "chunk-map stage exceeds Hopper shared memory");
  constexpr auto kernel = chunk_maps_kernel<kInput, kPrefetch, kFp16Operands, kWgmma>;
  // Opting in to > 48 KiB is per device; done once per process for the devices we meet.
  static OncePerDevice once;
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  once(device, [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  });
  const dim3 grid(params.chunks_per_seq * params.map_splits, params.num_state_heads, params.num_seqs);
  launch_stage(kernel, grid, dim3(kMapThreadsOf<kFp16Operands>), smem, stream, params.programmatic_launch, params);
}

// The hi + lo variant (CpStageParams::fp16_operands false).
template <CpInputType kInput>
void launch_cp_chunk_maps(const CpStageParams& params, cudaStream_t stream) {
  if (params.prefetch_blocks) launch_chunk_maps_variant<kInput, true, false>(params, stream);
  else launch_chunk_maps_variant<kInput, false, false>(params, stream);
}

// The fp16-operand variant (instantiated apart, instantiations/cp_maps_fp16_operands.cu).
template <CpInputType kInput>
void launch_cp_chunk_maps_fp16_operands(const CpStageParams& params, cudaStream_t stream) {
  if (params.prefetch_blocks) launch_chunk_maps_variant<kInput, true, true>(params, stream);
  else launch_chunk_maps_variant<kInput, false, true>(params, stream);
}

// Stage 2 on stage 1's ready tiles (cp_chunk_maps_ready_sm90.cuh).
template <CpInputType kInput, bool kPrefetch>
void launch_chunk_maps_ready(const CpStageParams& params, cudaStream_t stream) {
  constexpr std::size_t smem = sizeof(ChunkMapsReadySmem<typename Input<kInput>::T>);
  static_assert(smem <= 227 * 1024, "chunk-map stage exceeds Hopper shared memory");
  constexpr auto kernel = chunk_maps_ready_kernel<kInput, kPrefetch>;
  static OncePerDevice once;
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  once(device, [] {
    FASTINFER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  });
  const dim3 grid(params.chunks_per_seq * params.map_splits, params.num_state_heads, params.num_seqs);
  launch_stage(kernel, grid, dim3(kReadyMapThreads), smem, stream, params.programmatic_launch, params);
}

// The fp16-operand variant on wgmma (instantiations/cp_maps_wgmma.cu); on stage 1's ready tiles
// when it wrote them (CpStageParams::block_map_tiles).
template <CpInputType kInput>
void launch_cp_chunk_maps_wgmma(const CpStageParams& params, cudaStream_t stream) {
  if (params.block_map_tiles != nullptr) {
    if (params.prefetch_blocks) launch_chunk_maps_ready<kInput, true>(params, stream);
    else launch_chunk_maps_ready<kInput, false>(params, stream);
  } else if (params.prefetch_blocks) {
    launch_chunk_maps_variant<kInput, true, true, true>(params, stream);
  } else {
    launch_chunk_maps_variant<kInput, false, true, true>(params, stream);
  }
}

}  // namespace fastinfer::gdn::detail::cp

namespace fastinfer::gdn::detail {
template <CpInputType kInput>
void launch_cp_chunk_maps(const CpStageParams& params, cudaStream_t stream) {
  cp::launch_cp_chunk_maps<kInput>(params, stream);
}
template <CpInputType kInput>
void launch_cp_chunk_maps_fp16_operands(const CpStageParams& params, cudaStream_t stream) {
  cp::launch_cp_chunk_maps_fp16_operands<kInput>(params, stream);
}
template <CpInputType kInput>
void launch_cp_chunk_maps_wgmma(const CpStageParams& params, cudaStream_t stream) {
  cp::launch_cp_chunk_maps_wgmma<kInput>(params, stream);
}
}  // namespace fastinfer::gdn::detail
