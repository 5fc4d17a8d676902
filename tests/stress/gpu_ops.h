#pragma once
// Every public op as a repeatable GPU call, for the concurrency stress and graph-capture tests.
//
// A GpuOpProblem owns the read-only inputs of one op call on the device (shared by every lane
// that runs it) and makes OpInstances: private outputs (and a private copy of any state the op
// updates in place), so that many instances can run the same problem concurrently. prepare()
// restores the private state and poisons the outputs (stream-ordered), so every run of an
// instance starts from the same bytes and its results() can be compared byte for byte.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fastinfer/gdn.h"
#include "fastinfer/gemm.h"
#include "fastinfer/nvfp4.h"
#include "gdn/decode_problem.h"
#include "gdn/prefill_test_util.h"
#include "support/device_tensor.h"

namespace fastinfer::testing {

class OpInstance {
 public:
  virtual ~OpInstance() = default;
  // Restores in-place state and poisons the outputs on `stream`.
  virtual void prepare(Stream stream) = 0;
  // The op call itself (what a graph captures).
  virtual void call(Stream stream) = 0;
  // Everything the call writes.
  virtual std::vector<const DeviceBuffer*> results() const = 0;
};

class GpuOpProblem {
 public:
  virtual ~GpuOpProblem() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<OpInstance> make_instance() const = 0;
  // Writes fresh random input values (same shapes) into the existing input buffers; synchronous.
  virtual void refill(std::uint64_t seed) = 0;
};

// ---------------------------------------------------------------------------------------------
// gdn::prefill. refill() also rotates the sequence lengths (by seed), so cu_seqlens changes values too.

class PrefillGpuProblem : public GpuOpProblem {
 public:
  PrefillGpuProblem(PrefillCase c, std::uint64_t seed) : c_(std::move(c)), host_(make_problem(c_, seed)) {
    q_ = DeviceTensor(host_.q), k_ = DeviceTensor(host_.k), v_ = DeviceTensor(host_.v);
    cu_ = DeviceTensor(host_.cu), alpha_ = DeviceTensor(host_.alpha), beta_ = DeviceTensor(host_.beta);
    initial_ = DeviceTensor(host_.initial_state), indices_ = DeviceTensor(host_.indices);
    if (c_.checkpoint_every) starts_ = DeviceTensor(host_.checkpoint_starts);
  }
  std::string name() const override {
    std::string lengths;
    for (auto l : c_.lengths) lengths += (lengths.empty() ? "" : ",") + std::to_string(l);
    return std::string(c_.use_cp == gdn::UseCp::kOn ? "gdn::prefill CP" : "gdn::prefill") + " heads " + std::to_string(c_.hq) + "/" + std::to_string(c_.hk) + "/" + std::to_string(c_.hv) +
           " lengths " + lengths;
  }
  void refill(std::uint64_t seed) override {
    PrefillCase c = c_;
    std::rotate(c.lengths.begin(), c.lengths.begin() + static_cast<std::ptrdiff_t>(seed % c.lengths.size()), c.lengths.end());
    PrefillProblem h = make_problem(c, seed);
    q_.upload(h.q), k_.upload(h.k), v_.upload(h.v), cu_.upload(h.cu), alpha_.upload(h.alpha), beta_.upload(h.beta);
    initial_.upload(h.initial_state), indices_.upload(h.indices);
    if (c_.checkpoint_every) starts_.upload(h.checkpoint_starts);
  }

  class Instance : public OpInstance {
   public:
    explicit Instance(const PrefillGpuProblem& p)
        : p_(p), output_(p.host_.output), final_(p.host_.final_state),
          checkpoints_(p.c_.checkpoint_every ? DeviceTensor(p.host_.checkpoints) : DeviceTensor()) {}
    void prepare(Stream s) override {
      output_.poison(s), final_.poison(s);
      if (p_.c_.checkpoint_every) checkpoints_.poison(s);
    }
    void call(Stream s) override {
      gdn::PrefillArgs a = p_.host_.args();
      a.q = p_.q_, a.k = p_.k_, a.v = p_.v_, a.cu_seqlens = p_.cu_;
      if (a.alpha) a.alpha = p_.alpha_.view();
      if (a.beta) a.beta = p_.beta_.view();
      a.output = output_;
      if (a.initial_state) a.initial_state = p_.initial_.view();
      if (a.output_state) a.output_state = final_.view();
      if (a.state_indices) a.state_indices = p_.indices_.view();
      if (a.state_checkpoints) a.state_checkpoints = checkpoints_.view(), a.checkpoint_cu_starts = p_.starts_.view();
      gdn::prefill(a, s);
    }
    std::vector<const DeviceBuffer*> results() const override {
      std::vector<const DeviceBuffer*> r{&output_.buffer(), &final_.buffer()};
      if (p_.c_.checkpoint_every) r.push_back(&checkpoints_.buffer());
      return r;
    }

   private:
    const PrefillGpuProblem& p_;
    DeviceTensor output_, final_, checkpoints_;
  };
  std::unique_ptr<OpInstance> make_instance() const override { return std::make_unique<Instance>(*this); }

 private:
  PrefillCase c_;
  PrefillProblem host_;  // shapes, flags and the host copies of the first input set
  DeviceTensor q_, k_, v_, cu_, alpha_, beta_, initial_, indices_, starts_;
};

// ---------------------------------------------------------------------------------------------
// gdn::decode (and MTP). The state pool is updated in place: each instance owns a copy, restored
// from the shared pristine pool by prepare().

class DecodeGpuProblem : public GpuOpProblem {
 public:
  DecodeGpuProblem(DecodeShape s, std::uint64_t seed) : s_(s), host_(make_decode_problem(s, seed)) {
    q_ = DeviceTensor(host_.q), k_ = DeviceTensor(host_.k), v_ = DeviceTensor(host_.v);
    A_log_ = DeviceTensor(host_.A_log), a_ = DeviceTensor(host_.a), dt_bias_ = DeviceTensor(host_.dt_bias);
    b_ = DeviceTensor(host_.b), pristine_state_ = DeviceTensor(host_.state);
    initial_indices_ = DeviceTensor(host_.initial_indices), output_indices_ = DeviceTensor(host_.output_indices);
  }
  std::string name() const override {
    return "gdn::decode B" + std::to_string(s_.batch) + " T" + std::to_string(s_.tokens) + " heads " +
           std::to_string(s_.heads_qk) + "/" + std::to_string(s_.heads_v) + (s_.with_intermediate ? " mtp" : "") +
           (s_.padded ? " padded" : "");
  }
  void refill(std::uint64_t seed) override {
    DecodeProblem h = make_decode_problem(s_, seed);
    q_.upload(h.q), k_.upload(h.k), v_.upload(h.v), A_log_.upload(h.A_log), a_.upload(h.a);
    dt_bias_.upload(h.dt_bias), b_.upload(h.b), pristine_state_.upload(h.state);
    initial_indices_.upload(h.initial_indices), output_indices_.upload(h.output_indices);
  }

  class Instance : public OpInstance {
   public:
    explicit Instance(const DecodeGpuProblem& p)
        : p_(p), state_(p.host_.state), output_(p.host_.output),
          intermediate_(p.s_.with_intermediate ? DeviceTensor(p.host_.intermediate) : DeviceTensor()) {}
    void prepare(Stream s) override {
      FASTINFER_CUDA_CHECK(cudaMemcpyAsync(state_.data(), p_.pristine_state_.data(), state_.nbytes(),
                                           cudaMemcpyDeviceToDevice, s));
      output_.poison(s);
      if (p_.s_.with_intermediate) intermediate_.poison(s);
    }
    void call(Stream s) override {
      gdn::DecodeArgs a = p_.host_.args();
      a.q = p_.q_, a.k = p_.k_, a.v = p_.v_, a.A_log = p_.A_log_, a.a = p_.a_, a.dt_bias = p_.dt_bias_, a.b = p_.b_;
      a.state = state_;
      a.initial_state_indices = p_.initial_indices_;
      if (a.output_state_indices) a.output_state_indices = p_.output_indices_.view();
      a.output = output_;
      if (a.intermediate_states) a.intermediate_states = intermediate_.view();
      gdn::decode(a, s);
    }
    std::vector<const DeviceBuffer*> results() const override {
      std::vector<const DeviceBuffer*> r{&output_.buffer(), &state_.buffer()};
      if (p_.s_.with_intermediate) r.push_back(&intermediate_.buffer());
      return r;
    }

   private:
    const DecodeGpuProblem& p_;
    DeviceTensor state_, output_, intermediate_;
  };
  std::unique_ptr<OpInstance> make_instance() const override { return std::make_unique<Instance>(*this); }

 private:
  DecodeShape s_;
  DecodeProblem host_;
  DeviceTensor q_, k_, v_, A_log_, a_, dt_bias_, b_, pristine_state_, initial_indices_, output_indices_;
};

// ---------------------------------------------------------------------------------------------
// NVFP4 helpers: a random bf16 [n, k] weight (with a few all-zero blocks) on the device.

inline ref::HostTensor random_weight(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  ref::HostTensor w(DType::kBFloat16, {n, k});
  w.fill_uniform(rng, -1.0, 1.0);
  for (std::int64_t r = 0; r < n; r += 7)
    for (int i = 0; i < 16; ++i) w.set(r * k + i, 0.0);
  return w;
}

inline TensorView cuda_view(const DeviceBuffer& b, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(b.get(), t, shape, Device::cuda(0));
}

// ---------------------------------------------------------------------------------------------
// nvfp4::quantize: w shared, packed + scales private.

class QuantizeGpuProblem : public GpuOpProblem {
 public:
  QuantizeGpuProblem(std::int64_t n, std::int64_t k, nvfp4::ScaleLayout layout, std::uint64_t seed)
      : n_(n), k_(k), layout_(layout), w_(random_weight(n, k, seed)) {}
  std::string name() const override {
    return "nvfp4::quantize " + std::to_string(n_) + "x" + std::to_string(k_) +
           (layout_ == nvfp4::ScaleLayout::kLinear ? " linear" : " swizzled");
  }
  void refill(std::uint64_t seed) override { w_.upload(random_weight(n_, k_, seed)); }

  class Instance : public OpInstance {
   public:
    explicit Instance(const QuantizeGpuProblem& p)
        : p_(p), packed_(static_cast<std::size_t>(p.n_ * p.k_ / 2)),
          scales_(static_cast<std::size_t>(nvfp4::scale_bytes(p.n_, p.k_, p.layout_))) {}
    void prepare(Stream s) override { packed_.poison(s), scales_.poison(s); }
    void call(Stream s) override {
      nvfp4::quantize(p_.w_, nvfp4::global_scale_for(1.0f), cuda_view(packed_, DType::kUInt8, {p_.n_, p_.k_ / 2}),
                      cuda_view(scales_, DType::kUInt8, {static_cast<std::int64_t>(scales_.bytes())}), p_.layout_, s);
    }
    std::vector<const DeviceBuffer*> results() const override { return {&packed_, &scales_}; }

   private:
    const QuantizeGpuProblem& p_;
    DeviceBuffer packed_, scales_;
  };
  std::unique_ptr<OpInstance> make_instance() const override { return std::make_unique<Instance>(*this); }

 private:
  std::int64_t n_, k_;
  nvfp4::ScaleLayout layout_;
  DeviceTensor w_;
};

// Quantizes a fresh random weight on the device into `packed` / `scales` (synchronous).
inline void quantize_random(std::int64_t n, std::int64_t k, nvfp4::ScaleLayout layout, std::uint64_t seed,
                            const DeviceBuffer& packed, const DeviceBuffer& scales) {
  DeviceTensor w(random_weight(n, k, seed));
  nvfp4::quantize(w, nvfp4::global_scale_for(1.0f), cuda_view(packed, DType::kUInt8, {n, k / 2}),
                  cuda_view(scales, DType::kUInt8, {static_cast<std::int64_t>(scales.bytes())}), layout);
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
}

// ---------------------------------------------------------------------------------------------
// nvfp4::dequantize: packed + scales shared, out private.

class DequantizeGpuProblem : public GpuOpProblem {
 public:
  DequantizeGpuProblem(std::int64_t n, std::int64_t k, nvfp4::ScaleLayout layout, DType out, std::uint64_t seed)
      : n_(n), k_(k), layout_(layout), out_(out), packed_(static_cast<std::size_t>(n * k / 2)),
        scales_(static_cast<std::size_t>(nvfp4::scale_bytes(n, k, layout))) {
    refill(seed);
  }
  std::string name() const override {
    return "nvfp4::dequantize " + std::to_string(n_) + "x" + std::to_string(k_) + " to " + std::string(dtype_name(out_));
  }
  void refill(std::uint64_t seed) override { quantize_random(n_, k_, layout_, seed, packed_, scales_); }

  class Instance : public OpInstance {
   public:
    explicit Instance(const DequantizeGpuProblem& p)
        : p_(p), out_(static_cast<std::size_t>(p.n_ * p.k_) * dtype_size(p.out_)) {}
    void prepare(Stream s) override { out_.poison(s); }
    void call(Stream s) override {
      nvfp4::dequantize(cuda_view(p_.packed_, DType::kUInt8, {p_.n_, p_.k_ / 2}),
                        cuda_view(p_.scales_, DType::kUInt8, {static_cast<std::int64_t>(p_.scales_.bytes())}), p_.layout_,
                        nvfp4::global_scale_for(1.0f), cuda_view(out_, p_.out_, {p_.n_, p_.k_}), s);
    }
    std::vector<const DeviceBuffer*> results() const override { return {&out_}; }

   private:
    const DequantizeGpuProblem& p_;
    DeviceBuffer out_;
  };
  std::unique_ptr<OpInstance> make_instance() const override { return std::make_unique<Instance>(*this); }

 private:
  std::int64_t n_, k_;
  nvfp4::ScaleLayout layout_;
  DType out_;
  DeviceBuffer packed_, scales_;
};

// ---------------------------------------------------------------------------------------------
// gemm::mm_bf16_fp4: prepared weights and a shared, out private.

class MmGpuProblem : public GpuOpProblem {
 public:
  MmGpuProblem(std::int64_t m, std::int64_t n, std::int64_t k, DType out, std::uint64_t seed)
      : m_(m), n_(n), k_(k), out_(out), a_(static_cast<std::size_t>(m * k * 2)) {
    DeviceBuffer packed(static_cast<std::size_t>(n * k / 2));
    DeviceBuffer scales(static_cast<std::size_t>(nvfp4::scale_bytes(n, k, nvfp4::ScaleLayout::kSwizzled128x4)));
    quantize_random(n, k, nvfp4::ScaleLayout::kSwizzled128x4, seed, packed, scales);
    weights_ = gemm::prepare_bf16_fp4_weights(cuda_view(packed, DType::kUInt8, {n, k / 2}),
                                              cuda_view(scales, DType::kUInt8, {static_cast<std::int64_t>(scales.bytes())}),
                                              nvfp4::ScaleLayout::kSwizzled128x4, 1.0f / nvfp4::global_scale_for(1.0f));
    refill(seed + 1);
  }
  std::string name() const override {
    return "gemm::mm_bf16_fp4 M" + std::to_string(m_) + " N" + std::to_string(n_) + " K" + std::to_string(k_) + " " +
           std::string(dtype_name(out_));
  }
  void refill(std::uint64_t seed) override {
    std::mt19937_64 rng(seed);
    ref::HostTensor a(DType::kBFloat16, {m_, k_});
    a.fill_uniform(rng, -1.0, 1.0);
    a_.upload(a.data());
  }

  class Instance : public OpInstance {
   public:
    explicit Instance(const MmGpuProblem& p) : p_(p), out_(static_cast<std::size_t>(p.m_ * p.n_) * dtype_size(p.out_)) {}
    void prepare(Stream s) override { out_.poison(s); }
    void call(Stream s) override {
      gemm::mm_bf16_fp4(cuda_view(p_.a_, DType::kBFloat16, {p_.m_, p_.k_}), *p_.weights_, cuda_view(out_, p_.out_, {p_.m_, p_.n_}), s);
    }
    std::vector<const DeviceBuffer*> results() const override { return {&out_}; }

   private:
    const MmGpuProblem& p_;
    DeviceBuffer out_;
  };
  std::unique_ptr<OpInstance> make_instance() const override { return std::make_unique<Instance>(*this); }

 private:
  std::int64_t m_, n_, k_;
  DType out_;
  DeviceBuffer a_;
  std::shared_ptr<const gemm::Bf16Fp4Weights> weights_;
};

// ---------------------------------------------------------------------------------------------
// The problem set both tests use: small shapes, every op, several configurations each.
// Short labels of make_all_problems()'s entries, in order (test names; no GPU needed to list them).
inline constexpr const char* kProblemLabels[] = {
    "prefill_pool",  "prefill_packed_l2norm_checkpoints", "prefill_cp_pool_checkpoints", "prefill_cp_fp16_gqa",
    "decode_padded", "decode_mtp_bf16_state",             "mm_m1",                       "mm_m7_fp16",
    "mm_m48",        "quantize_swizzled",                 "dequantize_linear"};
inline constexpr int kProblemCount = static_cast<int>(std::size(kProblemLabels));

inline std::vector<std::unique_ptr<GpuOpProblem>> make_all_problems(std::uint64_t seed) {
  std::vector<std::unique_ptr<GpuOpProblem>> r;
  {
    PrefillCase c;
    c.hq = 2, c.hk = 2, c.hv = 4;
    c.lengths = {130, 1, 64};
    c.state = StateForm::kPool;
    r.push_back(std::make_unique<PrefillGpuProblem>(c, seed++));
  }
  {
    PrefillCase c;
    c.hq = 4, c.hk = 4, c.hv = 4;
    c.lengths = {200, 57};
    c.state = StateForm::kPacked;
    c.l2norm_in_kernel = true;
    c.checkpoint_every = 64;
    r.push_back(std::make_unique<PrefillGpuProblem>(c, seed++));
  }
  {  // the context-parallel pipeline (4 stages, workspace "gdn.cp" per stream)
    PrefillCase c;
    c.hq = 2, c.hk = 2, c.hv = 4;
    c.lengths = {900, 1, 300};
    c.state = StateForm::kPool;
    c.checkpoint_every = 128;
    c.use_cp = gdn::UseCp::kOn;
    c.max_seqlen = 900;
    r.push_back(std::make_unique<PrefillGpuProblem>(c, seed++));
  }
  {
    PrefillCase c;
    c.dtype = DType::kFloat16;
    c.hq = 4, c.hk = 1, c.hv = 1;
    c.lengths = {1500, 70};
    c.state = StateForm::kPacked;
    c.use_cp = gdn::UseCp::kOn;
    r.push_back(std::make_unique<PrefillGpuProblem>(c, seed++));  // no max_seqlen hint: T
  }
  {
    DecodeShape s;
    s.batch = 4, s.tokens = 1, s.heads_qk = 2, s.heads_v = 4, s.padded = 1;
    r.push_back(std::make_unique<DecodeGpuProblem>(s, seed++));
  }
  {
    DecodeShape s;
    s.batch = 2, s.tokens = 3, s.heads_qk = 2, s.heads_v = 2, s.out_of_place = true, s.with_intermediate = true;
    s.state = DType::kBFloat16;
    r.push_back(std::make_unique<DecodeGpuProblem>(s, seed++));
  }
  r.push_back(std::make_unique<MmGpuProblem>(1, 2048, 1024, DType::kBFloat16, seed++));
  r.push_back(std::make_unique<MmGpuProblem>(7, 1024, 2048, DType::kFloat16, seed++));
  r.push_back(std::make_unique<MmGpuProblem>(48, 512, 4096, DType::kBFloat16, seed++));
  r.push_back(std::make_unique<QuantizeGpuProblem>(256, 512, nvfp4::ScaleLayout::kSwizzled128x4, seed++));
  r.push_back(std::make_unique<DequantizeGpuProblem>(256, 512, nvfp4::ScaleLayout::kLinear, DType::kBFloat16, seed++));
  if (static_cast<int>(r.size()) != kProblemCount) throw Error(Error::Kind::kRuntime, "gpu_ops.h: update kProblemCount");
  return r;
}

}  // namespace fastinfer::testing
