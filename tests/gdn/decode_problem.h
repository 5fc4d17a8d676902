#pragma once
// A random gdn::decode problem on the host (owning HostTensors) shared by the CPU and GPU tests:
// fresh random inputs, distinct pool slots, optional padding, out-of-place slots and MTP buffers.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "fastinfer/gdn_decode.h"
#include "ref/host_tensor.h"

namespace fastinfer::testing {

// ref::store has no integer case: slot indices are written directly.
inline void set_index(ref::HostTensor& t, std::int64_t i, std::int32_t value) { static_cast<std::int32_t*>(t.data())[i] = value; }

struct DecodeShape {
  int batch = 2, tokens = 1, heads_qk = 2, heads_v = 4;
  DType act = DType::kBFloat16;
  DType state = DType::kFloat32;
  DType gate = DType::kFloat32;      // a and b
  DType head_gate = DType::kFloat32; // A_log and dt_bias
  DType intermediate = DType::kFloat32;
  bool out_of_place = false;         // output_state_indices differ from the initial ones
  bool with_intermediate = false;
  int padded = 0;                    // how many sequences are padding (-1)
  int spare_slots = 3;               // pool slots no sequence touches
};

struct DecodeProblem {
  DecodeShape shape;
  ref::HostTensor q, k, v, A_log, a, dt_bias, b, state, initial_indices, output_indices, output, intermediate;
  float scale = 0.0f;
  bool use_qk_l2norm = true;
  bool disable_state_update = false;

  gdn::DecodeArgs args() const {
    gdn::DecodeArgs r;
    r.q = q; r.k = k; r.v = v;
    r.A_log = A_log; r.a = a; r.dt_bias = dt_bias; r.b = b;
    r.state = state;
    r.initial_state_indices = initial_indices;
    if (shape.out_of_place) r.output_state_indices = output_indices.view();
    r.output = output;
    if (shape.with_intermediate) r.intermediate_states = intermediate.view();
    r.scale = scale;
    r.use_qk_l2norm = use_qk_l2norm;
    r.disable_state_update = disable_state_update;
    return r;
  }
  int slot_in(int i) const { return static_cast<int>(initial_indices.get(i)); }
  int slot_out(int i) const { return static_cast<int>((shape.out_of_place ? output_indices : initial_indices).get(i)); }
};

inline DecodeProblem make_decode_problem(const DecodeShape& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::int64_t B = s.batch, T = s.tokens, H = s.heads_qk, HV = s.heads_v, D = 128;
  const std::int64_t pool = B * (s.out_of_place ? 2 : 1) + s.spare_slots;
  DecodeProblem p;
  p.shape = s;
  p.q = ref::HostTensor(s.act, {B, T, H, D});
  p.k = ref::HostTensor(s.act, {B, T, H, D});
  p.v = ref::HostTensor(s.act, {B, T, HV, D});
  p.q.fill_uniform(rng, -1.0, 1.0);
  p.k.fill_uniform(rng, -1.0, 1.0);
  p.v.fill_uniform(rng, -1.0, 1.0);
  p.A_log = ref::HostTensor(s.head_gate, {HV});
  p.dt_bias = ref::HostTensor(s.head_gate, {HV});
  p.a = ref::HostTensor(s.gate, {B, T, HV});
  p.b = ref::HostTensor(s.gate, {B, T, HV});
  p.A_log.fill_uniform(rng, -3.0, 1.0);  // exp(A_log) in (0.05, 2.7)
  p.dt_bias.fill_uniform(rng, -1.0, 1.0);
  p.a.fill_uniform(rng, -3.0, 3.0);
  p.b.fill_uniform(rng, -4.0, 4.0);
  p.state = ref::HostTensor(s.state, {pool, HV, D, D});
  p.state.fill_uniform(rng, -1.0, 1.0);

  // Distinct random slots: the first B for reading, the next B for out-of-place writes.
  std::vector<std::int32_t> slots(pool);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<int> order(B);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  p.initial_indices = ref::HostTensor(DType::kInt32, {B});
  p.output_indices = ref::HostTensor(DType::kInt32, {B});
  for (std::int64_t i = 0; i < B; ++i) {
    set_index(p.initial_indices, i, slots[i]);
    set_index(p.output_indices, i, s.out_of_place ? slots[B + i] : slots[i]);
  }
  for (int j = 0; j < std::min<int>(s.padded, B); ++j) {  // padding at random positions
    set_index(p.initial_indices, order[j], -1);
    set_index(p.output_indices, order[j], -1);
  }
  p.output = ref::HostTensor(s.act, {B, T, HV, D});
  p.output.fill(NAN);
  if (s.with_intermediate) {
    p.intermediate = ref::HostTensor(s.intermediate, {B, T, HV, D, D});
    p.intermediate.fill(NAN);
  }
  return p;
}

}  // namespace fastinfer::testing
