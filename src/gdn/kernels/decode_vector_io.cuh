#pragma once
// Vector loads and stores of short float/bf16/fp16 runs for the GDN decode kernel: N consecutive
// elements (8 or 16 bytes, or two 16-byte accesses) converted to and from fp32 registers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gdn/decode_params.h"

namespace fastinfer::gdn::decode_sm90 {

// How a load is cached: kStreaming for data touched once (the state: evict first), kReadOnly for
// inputs that no thread of the kernel writes (q, k: served by the non-coherent path, shared in L2
// by every CTA of one head), kPlain for shared memory.
enum class LoadPolicy { kStreaming, kReadOnly, kPlain };
// How a store is cached: kStreaming for global data written once, kPlain for shared memory.
enum class StorePolicy { kStreaming, kPlain };

template <LoadPolicy kPolicy>
__device__ __forceinline__ uint4 load16(const void* p) {
  if constexpr (kPolicy == LoadPolicy::kStreaming) return __ldcs(static_cast<const uint4*>(p));
  else if constexpr (kPolicy == LoadPolicy::kReadOnly) return __ldg(static_cast<const uint4*>(p));
  else return *static_cast<const uint4*>(p);
}

template <LoadPolicy kPolicy>
__device__ __forceinline__ uint2 load8(const void* p) {
  if constexpr (kPolicy == LoadPolicy::kStreaming) return __ldcs(static_cast<const uint2*>(p));
  else if constexpr (kPolicy == LoadPolicy::kReadOnly) return __ldg(static_cast<const uint2*>(p));
  else return *static_cast<const uint2*>(p);
}

// `kWords` 32-bit words from 8-byte (kWords == 2) or 16-byte aligned memory.
template <int kWords, LoadPolicy kPolicy>
__device__ __forceinline__ void load_words(const void* p, std::uint32_t* w) {
  static_assert(kWords == 2 || kWords % 4 == 0, "8 bytes or whole 16-byte accesses");
  if constexpr (kWords == 2) {
    const uint2 v = load8<kPolicy>(p);
    w[0] = v.x;
    w[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < kWords / 4; ++i) {
      const uint4 v = load16<kPolicy>(static_cast<const uint4*>(p) + i);
      w[4 * i + 0] = v.x;
      w[4 * i + 1] = v.y;
      w[4 * i + 2] = v.z;
      w[4 * i + 3] = v.w;
    }
  }
}

template <int kWords, StorePolicy kPolicy = StorePolicy::kStreaming>
__device__ __forceinline__ void store_words(void* p, const std::uint32_t* w) {
  static_assert(kWords == 2 || kWords % 4 == 0, "8 bytes or whole 16-byte accesses");
  if constexpr (kWords == 2) {
    const uint2 v = make_uint2(w[0], w[1]);
    if constexpr (kPolicy == StorePolicy::kStreaming) __stcs(static_cast<uint2*>(p), v);
    else *static_cast<uint2*>(p) = v;
  } else {
#pragma unroll
    for (int i = 0; i < kWords / 4; ++i) {
      const uint4 v = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
      if constexpr (kPolicy == StorePolicy::kStreaming) __stcs(static_cast<uint4*>(p) + i, v);
      else static_cast<uint4*>(p)[i] = v;
    }
  }
}

// Two 16-bit values packed in one word <-> two floats.
template <class T>
__device__ __forceinline__ void unpack_pair(std::uint32_t w, float& lo, float& hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    lo = __uint_as_float(w << 16);
    hi = __uint_as_float(w & 0xffff0000u);
  } else {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w));
    lo = f.x;
    hi = f.y;
  }
}

template <class T>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

// N consecutive elements of T (float, bf16 or fp16) into fp32 registers.
template <class T, int N, LoadPolicy kPolicy>
__device__ __forceinline__ void load_floats(const T* p, float* x) {
  constexpr int kWords = N * int(sizeof(T)) / 4;
  std::uint32_t w[kWords];
  load_words<kWords, kPolicy>(p, w);
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int i = 0; i < N; ++i) x[i] = __uint_as_float(w[i]);
  } else {
#pragma unroll
    for (int i = 0; i < kWords; ++i) unpack_pair<T>(w[i], x[2 * i], x[2 * i + 1]);
  }
}

// N fp32 registers into N consecutive elements of T, rounding to nearest even.
template <class T, int N, StorePolicy kPolicy = StorePolicy::kStreaming>
__device__ __forceinline__ void store_floats(T* p, const float* x) {
  constexpr int kWords = N * int(sizeof(T)) / 4;
  std::uint32_t w[kWords];
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int i = 0; i < N; ++i) w[i] = __float_as_uint(x[i]);
  } else {
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = pack_pair<T>(x[2 * i], x[2 * i + 1]);
  }
  store_words<kWords, kPolicy>(p, w);
}

template <class T>
__device__ __forceinline__ float to_float(T x) {
  if constexpr (std::is_same_v<T, float>) return x;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else return __half2float(x);
}

template <class T>
__device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(x);
  else return __float2half_rn(x);
}

// One gate scalar whose element type is only known at run time (a handful per thread per token).
__device__ __forceinline__ float load_gate_scalar(const void* base, std::int64_t offset, GateType type) {
  switch (type) {
    case GateType::kFloat32: return __ldg(static_cast<const float*>(base) + offset);
    case GateType::kFloat16: return __half2float(__ldg(static_cast<const __half*>(base) + offset));
    default: return __bfloat162float(__ldg(static_cast<const __nv_bfloat16*>(base) + offset));
  }
}

}  // namespace fastinfer::gdn::decode_sm90
