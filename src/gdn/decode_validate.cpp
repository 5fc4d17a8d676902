#include "gdn/decode_validate.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>

#include "gdn/decode_params.h"
#include "ref/numeric.h"
#include "runtime/check.h"

namespace fastinfer::gdn {
namespace {

constexpr std::int64_t kD = kDecodeHeadDim;

std::string shape_of(std::initializer_list<std::int64_t> dims) {
  std::string s = "[";
  int i = 0;
  for (auto d : dims) s += (i++ ? ", " : "") + std::to_string(d);
  return s + "]";
}

// Every dim of `t` equals `expected` (names the first mismatch by its meaning).
void shape(const char* arg, const TensorView& t, std::initializer_list<std::int64_t> expected,
           std::initializer_list<const char*> meanings) {
  check::ndim(kDecodeOp, arg, t, static_cast<int>(expected.size()));
  auto meaning = meanings.begin();
  int d = 0;
  for (std::int64_t e : expected) check::dim(kDecodeOp, arg, t, d++, e, *meaning++);
}

// A [B, T, heads, 128] activation read or written with 16-byte vector accesses.
void token_tensor(const char* arg, const TensorView& t) {
  check::last_dim_contiguous(kDecodeOp, arg, t);
  check::not_null(kDecodeOp, arg, t);
  if (t.numel() == 0) return;
  check::aligned(kDecodeOp, arg, t, 16);
  for (int d = 0; d < 3; ++d) {
    if (t.size(d) > 1 && t.stride(d) % 8 != 0) {
      check::fail(kDecodeOp, arg, "have strides that are multiples of 8 elements in dims 0-2 (16-byte rows)",
                  "stride " + std::to_string(t.stride(d)) + " in dim " + std::to_string(d));
    }
  }
}

void gate_dtype(const char* arg, const TensorView& t, DType act) {
  if (act == DType::kFloat32) return check::dtype(kDecodeOp, arg, t, {DType::kFloat32});
  check::dtype(kDecodeOp, arg, t, {DType::kFloat32, act});
}

// The pool-shaped tensors the kernel indexes as dense [.., 128, 128] blocks.
void dense_state_tensor(const char* arg, const TensorView& t) {
  check::dtype(kDecodeOp, arg, t, {DType::kFloat32, DType::kBFloat16});
  check::contiguous(kDecodeOp, arg, t);
  check::not_null(kDecodeOp, arg, t);
  if (t.numel() > 0) check::aligned(kDecodeOp, arg, t, 16);
}

void index_tensor(const char* arg, const TensorView& t, std::int64_t batch) {
  shape(arg, t, {batch}, {"batch"});
  check::dtype(kDecodeOp, arg, t, {DType::kInt32});
  check::not_null(kDecodeOp, arg, t);
}

}  // namespace

void validate_decode_args(const DecodeArgs& args) {
  const TensorView& q = args.q;
  check::dtype(kDecodeOp, "q", q, {DType::kBFloat16, DType::kFloat16});
  check::ndim(kDecodeOp, "q", q, 4);
  check::dim(kDecodeOp, "q", q, 3, kD, "head dim");
  const std::int64_t B = q.size(0), T = q.size(1), H = q.size(2);
  check::require(H >= 1, kDecodeOp, "q.shape[2] (heads)", "be at least 1", std::to_string(H));
  token_tensor("q", q);

  check::same_dtype(kDecodeOp, "k", args.k, "q", q);
  shape("k", args.k, {B, T, H, kD}, {"batch", "tokens", "heads", "head dim"});
  token_tensor("k", args.k);

  check::same_dtype(kDecodeOp, "v", args.v, "q", q);
  check::ndim(kDecodeOp, "v", args.v, 4);
  const std::int64_t HV = args.v.size(2);
  shape("v", args.v, {B, T, HV, kD}, {"batch", "tokens", "heads", "head dim"});
  if (HV < H || HV % H != 0) {
    check::fail(kDecodeOp, "v.shape[2] (value heads)",
                "be a multiple of the q/k heads (" + std::to_string(H) + ")", std::to_string(HV));
  }
  token_tensor("v", args.v);

  gate_dtype("A_log", args.A_log, q.dtype);
  shape("A_log", args.A_log, {HV}, {"value heads"});
  check::not_null(kDecodeOp, "A_log", args.A_log);
  gate_dtype("dt_bias", args.dt_bias, q.dtype);
  shape("dt_bias", args.dt_bias, {HV}, {"value heads"});
  check::not_null(kDecodeOp, "dt_bias", args.dt_bias);
  gate_dtype("a", args.a, q.dtype);
  shape("a", args.a, {B, T, HV}, {"batch", "tokens", "value heads"});
  check::not_null(kDecodeOp, "a", args.a);
  gate_dtype("b", args.b, q.dtype);
  shape("b", args.b, {B, T, HV}, {"batch", "tokens", "value heads"});
  check::not_null(kDecodeOp, "b", args.b);

  const TensorView& state = args.state;
  check::ndim(kDecodeOp, "state", state, 4);
  const std::int64_t P = state.size(0);
  shape("state", state, {P, HV, kD, kD}, {"pool slots", "value heads", "V", "K"});
  check::require(P >= 1 && P <= std::numeric_limits<std::int32_t>::max(), kDecodeOp, "state.shape[0] (pool slots)",
                 "be in [1, 2^31)", std::to_string(P));
  dense_state_tensor("state", state);

  index_tensor("initial_state_indices", args.initial_state_indices, B);
  if (args.output_state_indices) index_tensor("output_state_indices", *args.output_state_indices, B);

  check::same_dtype(kDecodeOp, "output", args.output, "q", q);
  shape("output", args.output, {B, T, HV, kD}, {"batch", "tokens", "value heads", "head dim"});
  token_tensor("output", args.output);

  if (args.intermediate_states) {
    shape("intermediate_states", *args.intermediate_states, {B, T, HV, kD, kD},
          {"batch", "tokens", "value heads", "V", "K"});
    dense_state_tensor("intermediate_states", *args.intermediate_states);
  }

  if (!std::isfinite(args.scale)) {
    check::fail(kDecodeOp, "scale", "be finite (0 selects 1/sqrt(128))", std::to_string(args.scale));
  }
  // The kernel's grid: up to 32 CTAs per (sequence, head) in a 1-D grid.
  check::require(B * HV <= (std::int64_t{1} << 26), kDecodeOp, "batch * value heads", "be at most 2^26",
                 shape_of({B, HV}));
}

void validate_decode_slots_on_host(const DecodeArgs& args) {
  const TensorView& in = args.initial_state_indices;
  const TensorView& out = args.output_state_indices ? *args.output_state_indices : in;
  const std::int64_t B = in.size(0), P = args.state.size(0);
  auto index = [](const TensorView& t, std::int64_t i) { return static_cast<std::int64_t>(ref::load(t, i * t.stride(0))); };
  auto in_range = [&](const char* arg, std::int64_t i, std::int64_t slot) {
    if (slot < -1 || slot >= P) {
      check::fail(kDecodeOp, arg, "hold slots in [-1, " + std::to_string(P) + ")",
                  std::to_string(slot) + " at position " + std::to_string(i));
    }
  };
  constexpr std::int64_t kSeveralReaders = -1;
  std::unordered_map<std::int64_t, std::int64_t> reader, writer;  // slot -> sequence
  for (std::int64_t i = 0; i < B; ++i) {
    const std::int64_t s = index(in, i);
    in_range("initial_state_indices", i, s);
    if (s < 0) continue;
    if (auto [it, fresh] = reader.emplace(s, i); !fresh) it->second = kSeveralReaders;
  }
  for (std::int64_t i = 0; i < B; ++i) {
    const std::int64_t s_in = index(in, i), s_out = index(out, i);
    in_range("output_state_indices", i, s_out);
    if (s_in < 0 || s_out < 0 || args.disable_state_update) continue;  // nothing written
    if (auto [it, fresh] = writer.emplace(s_out, i); !fresh) {
      check::fail(kDecodeOp, "output_state_indices", "name distinct slots for the sequences it writes",
                  "slot " + std::to_string(s_out) + " for sequences " + std::to_string(it->second) + " and " +
                      std::to_string(i));
    }
    if (auto it = reader.find(s_out); it != reader.end() && it->second != i) {
      check::fail(kDecodeOp, "output_state_indices", "not name a slot another sequence reads",
                  "slot " + std::to_string(s_out) + " written by sequence " + std::to_string(i) +
                      (it->second == kSeveralReaders ? " and read by several sequences"
                                                      : " and read by sequence " + std::to_string(it->second)));
    }
  }
}

}  // namespace fastinfer::gdn
