#include "ref/gdn_decode_ref.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "ref/numeric.h"

namespace fastinfer::ref {
namespace {

constexpr int kD = 128;

struct Gates {
  double alpha, beta;
};

Gates gates(const gdn::DecodeArgs& args, std::int64_t i, std::int64_t t, std::int64_t h) {
  const double A_log = load(args.A_log, offset_of(args.A_log, h));
  const double dt_bias = load(args.dt_bias, offset_of(args.dt_bias, h));
  const double x = load(args.a, offset_of(args.a, i, t, h)) + dt_bias;
  const double softplus = x > 20.0 ? x : std::log1p(std::exp(x));
  const double b = load(args.b, offset_of(args.b, i, t, h));
  return {std::exp(-std::exp(A_log) * softplus), 1.0 / (1.0 + std::exp(-b))};
}

// q or k of head `h` at (i, t), L2-normalised when asked.
std::vector<double> token_vector(const TensorView& x, std::int64_t i, std::int64_t t, std::int64_t h, bool l2norm) {
  std::vector<double> out(kD);
  double sum = 0.0;
  for (int c = 0; c < kD; ++c) {
    out[c] = load(x, offset_of(x, i, t, h, c));
    sum += out[c] * out[c];
  }
  if (l2norm) {
    const double inv = 1.0 / std::sqrt(sum + 1e-6);
    for (double& e : out) e *= inv;
  }
  return out;
}

void store_state(const TensorView& dst, std::int64_t base, const std::vector<double>& H) {
  for (int vk = 0; vk < kD * kD; ++vk) store(dst, base + vk, H[vk]);
}

void decode_sequence_head(const gdn::DecodeArgs& args, std::int64_t i, std::int64_t h) {
  const TensorView& in_idx = args.initial_state_indices;
  const TensorView& out_idx = args.output_state_indices ? *args.output_state_indices : in_idx;
  const auto slot_in = static_cast<std::int64_t>(load(in_idx, offset_of(in_idx, i)));
  const auto slot_out = static_cast<std::int64_t>(load(out_idx, offset_of(out_idx, i)));
  const std::int64_t T = args.q.size(1), H = args.q.size(2), HV = args.v.size(2);
  const std::int64_t hq = h / (HV / H);
  const double scale = args.scale != 0.0f ? args.scale : 1.0 / std::sqrt(double{kD});

  if (slot_in < 0) {  // padding: zero output, no state touched
    for (std::int64_t t = 0; t < T; ++t)
      for (int r = 0; r < kD; ++r) store(args.output, offset_of(args.output, i, t, h, r), 0.0);
    return;
  }

  std::vector<double> state_VK(kD * kD);
  for (int r = 0; r < kD; ++r)
    for (int c = 0; c < kD; ++c) state_VK[r * kD + c] = load(args.state, offset_of(args.state, slot_in, h, r, c));

  for (std::int64_t t = 0; t < T; ++t) {
    const std::vector<double> q = token_vector(args.q, i, t, hq, args.use_qk_l2norm);
    const std::vector<double> k = token_vector(args.k, i, t, hq, args.use_qk_l2norm);
    const Gates g = gates(args, i, t, h);
    for (int r = 0; r < kD; ++r) {
      double* row = &state_VK[r * kD];
      double hk = 0.0;
      for (int c = 0; c < kD; ++c) hk += row[c] * k[c];
      const double v = load(args.v, offset_of(args.v, i, t, h, r));
      // alpha H (I - beta k k^T) + beta v k^T, row by row: alpha row - alpha beta (row.k) k + beta v k
      for (int c = 0; c < kD; ++c) row[c] = g.alpha * row[c] - g.alpha * g.beta * hk * k[c] + g.beta * v * k[c];
      double o = 0.0;
      for (int c = 0; c < kD; ++c) o += row[c] * q[c];
      store(args.output, offset_of(args.output, i, t, h, r), scale * o);
    }
    if (args.intermediate_states) {
      const TensorView& inter = *args.intermediate_states;
      store_state(inter, offset_of(inter, i, t, h, 0, 0), state_VK);
    }
  }
  if (!args.disable_state_update && slot_out >= 0) store_state(args.state, offset_of(args.state, slot_out, h, 0, 0), state_VK);
}

}  // namespace

void gdn_decode(const gdn::DecodeArgs& args) {
  const std::int64_t B = args.q.size(0), HV = args.v.size(2);
  const std::int64_t work = B * HV;
  // Sequences never share a written slot (validated), so (sequence, head) pairs run in parallel.
  const std::int64_t threads =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(std::thread::hardware_concurrency()), 1, std::max<std::int64_t>(work, 1));
  auto run_range = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t w = begin; w < end; ++w) decode_sequence_head(args, w / HV, w % HV);
  };
  if (threads == 1) return run_range(0, work);
  std::vector<std::thread> pool;
  for (std::int64_t p = 0; p < threads; ++p) pool.emplace_back(run_range, work * p / threads, work * (p + 1) / threads);
  for (std::thread& t : pool) t.join();
}

}  // namespace fastinfer::ref
