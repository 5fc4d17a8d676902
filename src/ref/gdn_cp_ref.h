#pragma once
// CPU references of the stages of the GDN context-parallel (CP) prefill (issue 6), in fp64.
// Each one takes validated host arguments (gdn::PrefillArgs, strides honoured) and the CP layout,
// and produces exactly what the matching GPU stage writes into its workspace, so every stage can
// be tested on its own (feed the GPU's previous-stage output to the reference of the next stage).
//
// Convention (docs/GDN_CP.md): state H is [V, K]; a span of tokens maps it affinely,
//     H_out = H_in M + B,   M = prod_t alpha_t (I - beta_t k_t k_t^T)  [K, K],  B [V, K]
// (the S = H^T form is S_out = M^T S_in + B^T).
//
// Layout: sequence n owns blocks_per_seq 64-token blocks (rows n*blocks_per_seq + b) and
// chunks_per_seq CP chunks of chunk_len tokens (rows n*chunks_per_seq + c); rows past the end of
// a sequence are not written.
#include <cstdint>
#include <vector>

#include "fastinfer/gdn_prefill.h"

namespace fastinfer::ref {

struct CpLayout {
  std::int64_t chunk_len = 0;       // multiple of 64
  std::int64_t chunks_per_seq = 0;  // >= ceil(max sequence length / chunk_len)
  std::int64_t blocks_per_seq() const { return chunks_per_seq * (chunk_len / 64); }
};

// Stage 1: per 64-token block and state head, the gate-free inverse
//     Tinv = (I + strict_lower(diag(beta) K K^T))^-1          [64, 64], row-major
// (the diag(beta) factor is not included; padded tokens of a short block have k = 0, beta = 0).
// Result: [N * blocks_per_seq, Hsab, 64, 64].
std::vector<double> gdn_cp_block_inverse_ref(const gdn::PrefillArgs& args, CpLayout layout);

// Stage 1 as the GPU kernel computes it: K rounded to the 16-bit input type after normalisation
// (the same K tile every CP and prefill kernel multiplies with), then solved in fp64.
std::vector<double> gdn_cp_block_inverse_mirror(const gdn::PrefillArgs& args, CpLayout layout);

// Stage 2: per CP chunk and state head, the affine map (M, B) of the chunk composed block by
// block from the stage-1 inverses `inverse` (any source: the reference's or the GPU's).
// Results m, b: [N * chunks_per_seq, Hsab, 128, 128] (M is [K, K], B is [V, K]). Chunks not
// present are left as they are (vectors are resized, new elements zero).
void gdn_cp_chunk_maps_ref(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& inverse,
                           std::vector<double>& m, std::vector<double>& b);

// How stage 2 rounds its product operands (CpOptions::fp16_operands picks kHiLo16 or kFp16Scaled).
enum class CpMapRounding {
  kSingle16,    // T, T_g, A, [M; B], Z rounded once to the input dtype (the kernel before the numerics fix)
  kHiLo16,      // each as a pair hi + lo in the input dtype, products hi*hi + lo*hi + hi*lo
  kFp16Scaled,  // T, A, [M; B], Z rounded once to fp16 ([M; B] and Z rows after a power-of-two
                // scale per row), K converted to fp16 after its input rounding, T_g a hi + lo pair
};

// Stage 2 as the GPU kernel rounds it (cp_chunk_maps_sm90.cuh), for the error budget: K is
// rounded to the input dtype after normalisation, every other product operand (T, A, [M; B], Z)
// to fp32 and then as `rounding` says, products of the rounded operands accumulated exactly,
// M, B, Y, Z, Ud kept in fp32. Same layout and arguments as gdn_cp_chunk_maps_ref.
void gdn_cp_chunk_maps_mirror(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& inverse,
                              std::vector<double>& m, std::vector<double>& b,
                              CpMapRounding rounding = CpMapRounding::kHiLo16);

// Stage 3: the serial fix-up over the chunks of each sequence from its initial state (absent,
// packed or pool; a negative slot starts from zero): chunk_states[n, c] is the state entering
// chunk c, final_states[n] the state after the last chunk (sequences of length zero keep zeros).
// Shapes: chunk_states [N * chunks_per_seq, Hsab, 128, 128], final_states [N, Hsab, 128, 128].
void gdn_cp_fixup_ref(const gdn::PrefillArgs& args, CpLayout layout, const std::vector<double>& m,
                      const std::vector<double>& b, std::vector<double>& chunk_states,
                      std::vector<double>& final_states);

}  // namespace fastinfer::ref
