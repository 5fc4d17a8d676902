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
// Slots 0 and 3 (prepare, finish) are the sums of their parts (slots 10-14), added by the host.
enum ProfileSlot : int {
  kProducerPrepare, kProducerWait, kProducerIssue, kProducerFinish, kProducerOther, kProducerChunks,
  kConsumerWait, kConsumerCompute, kConsumerOther, kConsumerChunks,
  kPrepareLoadWait, kPrepareGatesNorm, kPrepareProducts, kFinishInverse, kFinishTGated
};

}  // namespace fastinfer::gdn::kernels::fast
