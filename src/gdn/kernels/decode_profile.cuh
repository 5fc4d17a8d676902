#pragma once
// Timestamps inside the decode kernels for the benchmark's gdn_decode_profile routine: where the
// fixed cost of a call goes (kernel entry -> first state load issued -> first state landed -> last
// tile done -> exit). Only instantiations with kProfile = true write them (the production kernels
// are kProfile = false: no code). Per CTA kProfileSlots 64-bit words in DecodeParams::profile_stamps:
// word e = %globaltimer (ns, comparable across SMs) of event e, word 8 + e = clock64 of event e
// (cycles on the CTA's SM), word kSmWord = the SM id, word kItemsWord = the CTA's work items.
#include <cstdint>

#include "gdn/decode_params.h"

namespace fastinfer::gdn::decode_sm90 {

enum ProfileEvent : int { kProfileEntry = 0, kProfileFirstIssue = 1, kProfileFirstData = 2, kProfileLastDone = 3, kProfileExit = 4 };
inline constexpr int kProfileEvents = 5;
inline constexpr int kProfileSmWord = 5;
inline constexpr int kProfileItemsWord = 6;
inline constexpr int kProfileSlots = 16;

template <bool kProfile>
__device__ __forceinline__ void profile_stamp(const DecodeParams& p, ProfileEvent event) {
  if constexpr (kProfile) {
    std::uint64_t ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    const long long cycles = clock64();
    std::uint64_t* cta = p.profile_stamps + std::size_t{blockIdx.x} * kProfileSlots;
    cta[event] = ns;
    cta[8 + event] = static_cast<std::uint64_t>(cycles);
    if (event == kProfileEntry) {
      std::uint32_t sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      cta[kProfileSmWord] = sm;
    }
  }
}

template <bool kProfile>
__device__ __forceinline__ void profile_items(const DecodeParams& p, int items) {
  if constexpr (kProfile) p.profile_stamps[std::size_t{blockIdx.x} * kProfileSlots + kProfileItemsWord] = items;
}

}  // namespace fastinfer::gdn::decode_sm90
