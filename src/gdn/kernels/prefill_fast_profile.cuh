#pragma once
// Phase timing of the warp-specialised prefill kernel (a debugging aid, off unless a profile
// buffer is passed to the launch).
namespace fastinfer::gdn::kernels::fast {

// Optional phase timing of CTA 0 (benchmarks): clock64 cycles summed over its chunks straight
// into the profile buffer (no registers held), by one producer and one consumer thread. Slots:
// the FastProfile fields of prefill_fast_launch.h.
struct PhaseTimer {
  unsigned long long* profile;
  long long start = 0;
  __device__ __forceinline__ PhaseTimer(unsigned long long* buffer, bool lead)
      : profile(buffer != nullptr && blockIdx.x == 0 && lead ? buffer : nullptr) {}
  __device__ __forceinline__ void tick(int slot) {
    if (profile != nullptr) {
      const long long now = clock64();
      if (start != 0) profile[slot] += static_cast<unsigned long long>(now - start);
      start = now;
    }
  }
  __device__ __forceinline__ void count(int slot) {
    if (profile != nullptr) profile[slot] += 1;
  }
};
// The consumers' parts (slots 15-20) are timed only in a build with FASTINFER_PREFILL_PART_PROFILE
// defined (benchmarks), by thread 0 with its buffer pointer and last clock in shared memory
// (`slot_memory`, 16 bytes): a timer in registers across the wgmma groups made ptxas serialise
// them at 192 registers per consumer thread (C7512).
#ifdef FASTINFER_PREFILL_PART_PROFILE
inline constexpr bool kPartProfile = true;
#else
inline constexpr bool kPartProfile = false;
#endif
struct PartClock {
  unsigned long long* profile;
  long long last;
};
// Thread 0 of CTA 0 with a profile buffer: restarts the part clock.
__device__ __forceinline__ void start_parts(void* slot_memory) {
  if constexpr (kPartProfile) {
    auto* clock = static_cast<PartClock*>(slot_memory);
    if (threadIdx.x == 0 && clock->profile != nullptr) clock->last = clock64();
  }
}
__device__ __forceinline__ void tick_part(void* slot_memory, int slot) {
  if constexpr (kPartProfile) {
    auto* clock = static_cast<PartClock*>(slot_memory);
    if (threadIdx.x == 0 && clock->profile != nullptr) {
      const long long now = clock64();
      clock->profile[slot] += static_cast<unsigned long long>(now - clock->last);
      clock->last = now;
    }
  }
}

// Slots 0 and 3 (prepare, finish) are the sums of their parts (slots 10-14 and 21), added by the
// host; the consumers' compute slot holds what the wgmma consumers' parts (slots 15-20) leave.
enum ProfileSlot : int {
  kProducerPrepare, kProducerWait, kProducerIssue, kProducerFinish, kProducerOther, kProducerChunks,
  kConsumerWait, kConsumerCompute, kConsumerOther, kConsumerChunks,
  kPrepareLoadWait, kPrepareGatesNorm, kPrepareProducts, kFinishInverse, kFinishTGated,
  kConsumerPrep, kConsumerX, kConsumerU, kConsumerO, kConsumerStore, kConsumerState, kPrepareGates
};

}  // namespace fastinfer::gdn::kernels::fast
