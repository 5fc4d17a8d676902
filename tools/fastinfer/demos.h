#pragma once
// One demo step per op, each on a realistic shape, checked against the CPU reference.
// `on_gpu` is false when the machine has no CUDA device: the step then runs the CPU reference
// path of the public API on a smaller shape and says so. Each returns true when its check passed.
namespace fastinfer::cli {

bool demo_gdn_prefill(bool on_gpu);
bool demo_gdn_decode(bool on_gpu);
bool demo_mm_bf16_fp4(bool on_gpu);

}  // namespace fastinfer::cli
