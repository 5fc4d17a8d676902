#include "gdn/decode_tunable.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <random>
#include <vector>

#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "gemm/weights_impl.h"
#include "runtime/check.h"
#include "runtime/cuda_check.h"
#include "runtime/device_guard.h"
#include "runtime/runner_cache.h"

namespace fastinfer::gdn::detail {
namespace {

constexpr std::int64_t kStateElems = std::int64_t{kDecodeHeadDim} * kDecodeHeadDim;

std::string dtype_text(DType t) { return std::string(dtype_name(t)); }

struct OpKey {
  int device;
  DType act, state;
  int tokens, heads_qk, heads_v;
  std::uint64_t mapper;
  friend bool operator==(const OpKey&, const OpKey&) = default;
};

struct OpKeyHash {
  std::size_t operator()(const OpKey& k) const noexcept {
    std::size_t h = static_cast<std::size_t>(k.device) * 31 + static_cast<std::size_t>(k.act);
    h = h * 31 + static_cast<std::size_t>(k.state);
    h = h * 1009 + static_cast<std::size_t>(k.tokens);
    h = h * 1009 + static_cast<std::size_t>(k.heads_qk);
    h = h * 1009 + static_cast<std::size_t>(k.heads_v);
    return h ^ (k.mapper + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
};

}  // namespace

DecodeOpRunner::DecodeOpRunner(DType act, DType state, int tokens, int heads_qk, int heads_v, int sm_count,
                               const tune::BucketMapper& mapper)
    : act_(act),
      state_(state),
      tokens_(tokens),
      heads_v_(heads_v),
      sm_count_(sm_count),
      tactics_(decode_tactics(act, state)),
      key_(kDecodeTuneOp, "gdn_decode/v6/act=" + dtype_text(act) + "/state=" + dtype_text(state),
           {static_cast<std::int64_t>(act), static_cast<std::int64_t>(state), tokens, heads_qk, heads_v}, mapper) {
  runners_.reserve(tactics_.size());
  for (const DecodeTactic& t : tactics_) runners_.push_back(decode_runner({act, state, t}));
}

std::string DecodeOpRunner::tactic_name(int id) const {
  if (id < 0 || id >= tactic_count()) return "default";
  const DecodeTactic& t = tactic(id);
  std::string name = "L" + std::to_string(t.lanes_per_row) + "R" + std::to_string(t.rows_per_thread) + "W" +
                     std::to_string(t.warps);
  if (t.pipelined()) name += "P" + std::to_string(t.ctas_per_sm);
  if (t.chunked) name += "C";
  if (t.small_batch) name += "S";
  if (t.state_major) name += "M";
  if (t.dynamic_items) name += "D";
  if (t.claimed_tail) name += "T";
  return name;
}

int DecodeOpRunner::default_tactic(std::int64_t batch) const {
  DeviceInfo device;
  device.sm_count = sm_count_;
  const DecodeTactic chosen = choose_decode_tactic(state_, batch, heads_v_, tokens_, device);
  const auto it = std::find(tactics_.begin(), tactics_.end(), chosen);
  return it == tactics_.end() ? 0 : static_cast<int>(it - tactics_.begin());
}

std::shared_ptr<const DecodeOpRunner> decode_op_runner(int device, DType act, DType state, int tokens, int heads_qk,
                                                       int heads_v) {
  static RunnerCache<OpKey, DecodeOpRunner, OpKeyHash> cache;
  const tune::BucketMapper& mapper = tune::current_mapper();
  return cache.get_or_create(OpKey{device, act, state, tokens, heads_qk, heads_v, mapper.id()}, [&] {
    return std::make_shared<const DecodeOpRunner>(act, state, tokens, heads_qk, heads_v, device_info(device).sm_count,
                                                  mapper);
  });
}

BoundDecode::BoundDecode(std::shared_ptr<const DecodeOpRunner> runner, const DecodeParams& params, int device,
                         Stream stream)
    : runner_(std::move(runner)), params_(params), device_(device) {
  // Tune mode only (allocation and synchronisation allowed): the slots of the call, on the host.
  const int B = params.batch;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  std::vector<std::int32_t> in(B), out(B);
  for (int i = 0; i < B; ++i) {
    FASTINFER_CUDA_CHECK(cudaMemcpyAsync(&in[i], params.initial_indices + i * params.initial_indices_stride, 4,
                                         cudaMemcpyDeviceToHost, cuda_stream));
    FASTINFER_CUDA_CHECK(cudaMemcpyAsync(&out[i], params.output_indices + i * params.output_indices_stride, 4,
                                         cudaMemcpyDeviceToHost, cuda_stream));
  }
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  const std::size_t slot_bytes = static_cast<std::size_t>(params.heads_v) * kStateElems * dtype_size(runner_->state());
  if (cudaMalloc(&scratch_, slot_bytes * B + 8 * static_cast<std::size_t>(B)) != cudaSuccess) {
    (void)cudaGetLastError();  // out of memory is not sticky: profile without the state update
    scratch_ = nullptr;
    params_.update_state = false;
    return;
  }
  // Scratch slot i holds sequence i's state (padding stays -1; a dropped output stays -1).
  auto* slots = reinterpret_cast<std::int32_t*>(static_cast<char*>(scratch_) + slot_bytes * B);
  std::vector<std::int32_t> scratch_in(B), scratch_out(B);
  for (int i = 0; i < B; ++i) {
    const bool valid = in[i] >= 0 && in[i] < params.pool_size;
    scratch_in[i] = valid ? i : -1;
    scratch_out[i] = valid && out[i] >= 0 && out[i] < params.pool_size ? i : -1;
    if (valid)
      FASTINFER_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(scratch_) + slot_bytes * i,
                                           static_cast<const char*>(params.state) + slot_bytes * in[i], slot_bytes,
                                           cudaMemcpyDeviceToDevice, cuda_stream));
  }
  FASTINFER_CUDA_CHECK(cudaMemcpyAsync(slots, scratch_in.data(), 4 * B, cudaMemcpyHostToDevice, cuda_stream));
  FASTINFER_CUDA_CHECK(cudaMemcpyAsync(slots + B, scratch_out.data(), 4 * B, cudaMemcpyHostToDevice, cuda_stream));
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  params_.state = scratch_;
  params_.pool_size = B;
  params_.initial_indices = slots;
  params_.output_indices = slots + B;
  params_.initial_indices_stride = params_.output_indices_stride = 1;
}

BoundDecode::~BoundDecode() {
  if (scratch_ == nullptr) return;
  int previous = 0;
  if (cudaGetDevice(&previous) == cudaSuccess && previous != device_) cudaSetDevice(device_);
  cudaFree(scratch_);
  if (previous != device_) cudaSetDevice(previous);
}

std::vector<int> BoundDecode::tactics(const tune::Problem&) const {
  std::vector<int> ids(static_cast<std::size_t>(runner_->tactic_count()));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
  return ids;
}

void BoundDecode::run(const tune::Problem& problem, int tactic, Stream stream) const {
  DecodeParams p = params_;
  p.batch = static_cast<int>(std::clamp<std::int64_t>(problem.m, 1, params_.batch));
  DeviceGuard guard(device_);
  runner_->run(p, tactic, stream);
}

namespace {

// Owns a random problem (bf16 activations, fp32 gates, a pool of exactly the batch's slots) and
// runs it in place: the `fastinfer tune --op gdn_decode` factory.
class OwnedDecode : public tune::TunableRunner {
 public:
  OwnedDecode(const tune::TuneRequest& r, DType state) : device_(r.device) {
    const std::int64_t B = r.max_m, HV = r.n > 0 ? r.n : 32, T = r.k > 0 ? r.k : 1;
    const std::int64_t H = HV % 2 == 0 ? HV / 2 : HV;
    check::require(B >= 1 && B < (1 << 24) && T <= 64, "tune gdn_decode", "request",
                   "have 1 <= M (batch) < 2^24 and K (tokens) <= 64",
                   "M=" + std::to_string(r.max_m) + " K=" + std::to_string(r.k));
    DeviceGuard guard(r.device);
    std::mt19937_64 rng(4321);
    std::uniform_int_distribution<int> mantissa(0, 255);
    auto random_bf16 = [&](std::int64_t count) {  // +-[0.5, 1)
      std::vector<std::uint16_t> x(static_cast<std::size_t>(count));
      for (auto& e : x) e = static_cast<std::uint16_t>((0x3f00 | mantissa(rng)) ^ (rng() & 1 ? 0x8000 : 0));
      return x;
    };
    auto upload = [&](gemm::DeviceBytes& dst, const void* src, std::size_t bytes) {
      dst = gemm::DeviceBytes(r.device, bytes);
      FASTINFER_CUDA_CHECK(cudaMemcpy(dst.get(), src, bytes, cudaMemcpyHostToDevice));
    };
    const auto q = random_bf16(B * T * H * 128), k = random_bf16(B * T * H * 128), v = random_bf16(B * T * HV * 128);
    upload(q_, q.data(), q.size() * 2);
    upload(k_, k.data(), k.size() * 2);
    upload(v_, v.data(), v.size() * 2);
    std::vector<float> gates(static_cast<std::size_t>(2 * B * T * HV + 2 * HV));
    std::uniform_real_distribution<float> g(-2.0f, 2.0f);
    for (auto& e : gates) e = g(rng);
    upload(gates_, gates.data(), gates.size() * 4);
    const std::size_t state_elems = static_cast<std::size_t>(B * HV) * kStateElems;
    const auto state_values = random_bf16(static_cast<std::int64_t>(state_elems));  // bf16 bits
    std::vector<float> state_f32;
    if (state == DType::kFloat32) {
      state_f32.resize(state_elems);
      for (std::size_t i = 0; i < state_elems; ++i) state_f32[i] = std::bit_cast<float>(std::uint32_t{state_values[i]} << 16);
      upload(state_, state_f32.data(), state_elems * 4);
    } else {
      upload(state_, state_values.data(), state_elems * 2);
    }
    std::vector<std::int32_t> slots(static_cast<std::size_t>(B));
    for (std::int64_t i = 0; i < B; ++i) slots[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    upload(slots_, slots.data(), slots.size() * 4);
    out_ = gemm::DeviceBytes(r.device, static_cast<std::size_t>(B * T * HV * 128 * 2));

    const Device dev = Device::cuda(r.device);
    auto* gate_data = static_cast<float*>(gates_.get());
    DecodeArgs a;
    a.q = TensorView::contiguous(q_.get(), DType::kBFloat16, {B, T, H, 128}, dev);
    a.k = TensorView::contiguous(k_.get(), DType::kBFloat16, {B, T, H, 128}, dev);
    a.v = TensorView::contiguous(v_.get(), DType::kBFloat16, {B, T, HV, 128}, dev);
    a.a = TensorView::contiguous(gate_data, DType::kFloat32, {B, T, HV}, dev);
    a.b = TensorView::contiguous(gate_data + B * T * HV, DType::kFloat32, {B, T, HV}, dev);
    a.A_log = TensorView::contiguous(gate_data + 2 * B * T * HV, DType::kFloat32, {HV}, dev);
    a.dt_bias = TensorView::contiguous(gate_data + 2 * B * T * HV + HV, DType::kFloat32, {HV}, dev);
    a.state = TensorView::contiguous(state_.get(), state, {B, HV, 128, 128}, dev);
    a.initial_state_indices = TensorView::contiguous(slots_.get(), DType::kInt32, {B}, dev);
    a.output = TensorView::contiguous(out_.get(), DType::kBFloat16, {B, T, HV, 128}, dev);
    params_ = make_decode_params(a);
    runner_ = decode_op_runner(r.device, DType::kBFloat16, state, static_cast<int>(T), static_cast<int>(H), static_cast<int>(HV));
  }
  const tune::RunnerKey& key() const override { return runner_->tune_key(); }
  std::vector<int> tactics(const tune::Problem&) const override {
    std::vector<int> ids(static_cast<std::size_t>(runner_->tactic_count()));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
    return ids;
  }
  void run(const tune::Problem& problem, int tactic, Stream stream) const override {
    DecodeParams p = params_;
    p.batch = static_cast<int>(std::clamp<std::int64_t>(problem.m, 1, params_.batch));
    DeviceGuard guard(device_);
    runner_->run(p, tactic, stream);
  }
  std::string tactic_name(int tactic) const override { return runner_->tactic_name(tactic); }

 private:
  int device_;
  gemm::DeviceBytes q_, k_, v_, gates_, state_, slots_, out_;
  DecodeParams params_{};
  std::shared_ptr<const DecodeOpRunner> runner_;
};

}  // namespace

std::unique_ptr<tune::TunableRunner> make_tunable_decode(const tune::TuneRequest& request, DType state) {
  return std::make_unique<OwnedDecode>(request, state);
}

}  // namespace fastinfer::gdn::detail
