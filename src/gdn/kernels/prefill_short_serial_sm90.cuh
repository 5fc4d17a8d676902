#pragma once
// The safety net of the short-sequence path (docs/GDN_PREFILL_SHORT.md): the max_seqlen hint is
// only a hint, and the host cannot see the device's cu_seqlens. gdn_prefill_short_kernel<kCap> skips every
// sequence longer than kCap; this kernel, launched right after it, finds those
// sequences and runs them token by token from a zero state (exact, slow: about a microsecond per
// token and state head). When the hint is right it only reads cu_seqlens.
//
// Grid (ceil(N / 128), Hsab), 128 threads: a CTA checks 128 sequences for state head h; for each
// long one, thread v owns row v of the fp32 state H [V, K] in registers:
//     u = beta (v_t[v] - alpha (H k_t)[v]),  H[v, :] <- alpha H[v, :] + u k_t,  o_t[v] = scale H[v, :] . q_t
#include <cstdint>

#include "gdn/kernels/prefill_short_sm90.cuh"

namespace fastinfer::gdn::kernels::short_seq {

inline constexpr int kSerialThreads = 128;

template <InputType kType>
__device__ __forceinline__ float block_sum_128(float x, float* partial) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) x += __shfl_xor_sync(0xffffffffu, x, d);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = x;
  __syncthreads();
  const float s = partial[0] + partial[1] + partial[2] + partial[3];
  __syncthreads();
  return s;
}

template <InputType kType>
__device__ void serial_sequence(const PrefillParams& p, std::int64_t bos, int len, int h) {
  using Element = typename Operand<kType>::Element;
  __shared__ __align__(16) float q_s[128], k_s[128];
  __shared__ float partial[4];
  const int v = threadIdx.x;
  const Element* q = static_cast<const Element*>(p.q) + (static_cast<std::int64_t>(h) * p.num_q_heads / p.num_state_heads) * p.q_stride_head;
  const Element* k = static_cast<const Element*>(p.k) + (static_cast<std::int64_t>(h) * p.num_k_heads / p.num_state_heads) * p.k_stride_head;
  const Element* vv = static_cast<const Element*>(p.v) + (static_cast<std::int64_t>(h) * p.num_v_heads / p.num_state_heads) * p.v_stride_head;
  Element* out = static_cast<Element*>(p.output) + h * p.out_stride_head;
  float state[128];
#pragma unroll
  for (int d = 0; d < 128; ++d) state[d] = 0.0f;
  for (int i = 0; i < len; ++i) {
    const std::int64_t t = bos + i;
    float qv = Operand<kType>::to_float(q[t * p.q_stride_token + v]);
    float kv = Operand<kType>::to_float(k[t * p.k_stride_token + v]);
    const float x = Operand<kType>::to_float(vv[t * p.v_stride_token + v]);
    const float alpha = p.alpha ? p.alpha[t * p.alpha_stride_token + h] : 1.0f;
    const float beta = p.beta ? p.beta[t * p.beta_stride_token + h] : 1.0f;
    if (p.use_qk_l2norm) {  // rounded to the input dtype, as the short kernel's tiles
      const float q_inv = rsqrtf(block_sum_128<kType>(qv * qv, partial) + 1e-6f);
      const float k_inv = rsqrtf(block_sum_128<kType>(kv * kv, partial) + 1e-6f);
      qv = Operand<kType>::to_float(Operand<kType>::round(qv * q_inv));
      kv = Operand<kType>::to_float(Operand<kType>::round(kv * k_inv));
    }
    q_s[v] = qv;
    k_s[v] = kv;
    __syncthreads();
    float hk = 0.0f;
#pragma unroll
    for (int d = 0; d < 128; d += 4) {
      const float4 kd = *reinterpret_cast<const float4*>(k_s + d);
      hk += state[d] * kd.x + state[d + 1] * kd.y + state[d + 2] * kd.z + state[d + 3] * kd.w;
    }
    const float u = beta * (x - alpha * hk);
    float o = 0.0f;
#pragma unroll
    for (int d = 0; d < 128; d += 4) {
      const float4 kd = *reinterpret_cast<const float4*>(k_s + d);
      const float4 qd = *reinterpret_cast<const float4*>(q_s + d);
      state[d] = alpha * state[d] + u * kd.x;
      state[d + 1] = alpha * state[d + 1] + u * kd.y;
      state[d + 2] = alpha * state[d + 2] + u * kd.z;
      state[d + 3] = alpha * state[d + 3] + u * kd.w;
      o += state[d] * qd.x + state[d + 1] * qd.y + state[d + 2] * qd.z + state[d + 3] * qd.w;
    }
    out[t * p.out_stride_token + v] = Operand<kType>::round(p.scale * o);
    __syncthreads();  // q_s / k_s are rewritten by the next token
  }
}

template <InputType kType, int kCap>
__global__ void __launch_bounds__(kSerialThreads) gdn_prefill_short_serial_kernel(const __grid_constant__ PrefillParams p) {
  __shared__ int long_count;
  __shared__ int long_seqs[kSerialThreads];
  const int h = blockIdx.y;
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * kSerialThreads + threadIdx.x;
  if (threadIdx.x == 0) long_count = 0;
  __syncthreads();
  if (n < p.num_seqs) {
    std::int64_t bos;
    int len;
    sequence_range(p, n, bos, len);
    if (len > kCap) long_seqs[atomicAdd(&long_count, 1)] = static_cast<int>(threadIdx.x);
  }
  __syncthreads();
  const int count = long_count;
  for (int i = 0; i < count; ++i) {
    std::int64_t bos;
    int len;
    sequence_range(p, static_cast<std::int64_t>(blockIdx.x) * kSerialThreads + long_seqs[i], bos, len);
    serial_sequence<kType>(p, bos, len, h);
  }
}

}  // namespace fastinfer::gdn::kernels::short_seq
