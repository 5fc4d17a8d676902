#include "harness.h"

#include "fastinfer/error.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <vector>

#include "fastinfer/device.h"
#include "runtime/cuda_check.h"

namespace fastinfer::bench {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) FASTINFER_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

namespace {

__device__ inline float uniform01(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
  x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27; x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) * (1.0f / 16777216.0f);
}

template <class T>
__global__ void fill_kernel(T* p, std::size_t n, float lo, float hi, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    const float u = uniform01(seed, i);
    if constexpr (std::is_same_v<T, unsigned char>) {
      p[i] = static_cast<unsigned char>(u * 256.0f);
    } else {
      p[i] = static_cast<T>(lo + (hi - lo) * u);
    }
  }
}

}  // namespace

void fill_uniform(void* ptr, DType dtype, std::size_t count, float lo, float hi, std::uint64_t seed, cudaStream_t stream) {
  const int blocks = 1024, threads = 256;
  switch (dtype) {
    case DType::kFloat32: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<float*>(ptr), count, lo, hi, seed); break;
    case DType::kFloat16: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__half*>(ptr), count, lo, hi, seed); break;
    case DType::kBFloat16: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<__nv_bfloat16*>(ptr), count, lo, hi, seed); break;
    default: fill_kernel<<<blocks, threads, 0, stream>>>(static_cast<unsigned char*>(ptr), count * dtype_size(dtype), lo, hi, seed); break;
  }
  FASTINFER_CUDA_CHECK(cudaGetLastError());
}

int rotation_count(std::size_t bytes_per_set) {
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  const std::size_t l2 = static_cast<std::size_t>(device_info(device).l2_cache_bytes);
  const std::size_t sets = (3 * l2 + bytes_per_set - 1) / std::max<std::size_t>(bytes_per_set, 1);
  return static_cast<int>(std::clamp<std::size_t>(sets, 1, 64));
}

namespace {
std::function<void()>& measurement_hook() {
  static std::function<void()> hook;
  return hook;
}
}  // namespace

void set_measurement_hook(std::function<void()> hook) { measurement_hook() = std::move(hook); }

double median_ms(const std::function<void(int)>& fn, int warmup, int reps, cudaStream_t stream) {
  for (int i = 0; i < warmup; ++i) fn(i);
  std::vector<cudaEvent_t> events(2 * reps);
  for (auto& e : events) FASTINFER_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    FASTINFER_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
    fn(warmup + i);
    FASTINFER_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
  }
  FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) FASTINFER_CUDA_CHECK(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]));
  for (auto& e : events) cudaEventDestroy(e);
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  if (measurement_hook()) measurement_hook()();
  return ms[reps / 2];
}

double host_us_per_call(const std::function<void()>& fn, int reps) {
  for (int i = 0; i < 100; ++i) fn();
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) fn();
  const auto t1 = std::chrono::steady_clock::now();
  FASTINFER_CUDA_CHECK(cudaDeviceSynchronize());
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / reps;
}

namespace {

// cuBLASLt bf16 TN GEMM (row-major out[M,N] = a[M,K] @ w[N,K]^T), fp32 accumulation.
void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error(Error::Kind::kRuntime, std::string("bench: ") + what + " failed: " + cublasGetStatusString(status));
  }
}

class LtGemm {
 public:
  LtGemm(int m, int n, int k) {
    check_cublas(cublasLtCreate(&lt_), "cublasLtCreate");
    check_cublas(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
    // Column-major view: out^T[N,M] = w[N,K] (as K x N col-major, transposed) * a^T (K x M col-major).
    check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "set TRANSA");
    check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt), "set TRANSB");
    check_cublas(cublasLtMatrixLayoutCreate(&la_, CUDA_R_16BF, k, n, k), "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&lb_, CUDA_R_16BF, k, m, k), "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&lc_, CUDA_R_16BF, n, m, n), "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatmulPreferenceCreate(&pref_), "cublasLtMatmulPreferenceCreate");
    workspace_ = DeviceBuffer(std::size_t{64} << 20);
    std::size_t ws = workspace_.bytes();
    check_cublas(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                 "set MAX_WORKSPACE_BYTES");
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(lt_, desc_, la_, lb_, lc_, lc_, pref_, 1, &heuristic_, &found) !=
            CUBLAS_STATUS_SUCCESS || found == 0) {
      throw Error(Error::Kind::kRuntime, "bench: cuBLASLt found no bf16 algorithm");
    }
  }
  ~LtGemm() {
    cublasLtMatmulPreferenceDestroy(pref_);
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatrixLayoutDestroy(lc_);
    cublasLtMatmulDescDestroy(desc_);
    cublasLtDestroy(lt_);
  }
  void run(const void* a, const void* w, void* out, cudaStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(cublasLtMatmul(lt_, desc_, &alpha, w, la_, a, lb_, &beta, out, lc_, out, lc_, &heuristic_.algo,
                                workspace_.get(), workspace_.bytes(), stream),
                 "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t lt_{};
  cublasLtMatmulDesc_t desc_{};
  cublasLtMatrixLayout_t la_{}, lb_{}, lc_{};
  cublasLtMatmulPreference_t pref_{};
  cublasLtMatmulHeuristicResult_t heuristic_{};
  DeviceBuffer workspace_;
};

}  // namespace

double cublas_bf16_gemm_ms(int m, int n, int k) {
  LtGemm gemm(m, n, k);
  const std::size_t a_bytes = std::size_t(m) * k * 2, w_bytes = std::size_t(n) * k * 2, o_bytes = std::size_t(m) * n * 2;
  const int sets = rotation_count(a_bytes + w_bytes + o_bytes);
  DeviceBuffer a(a_bytes * sets), w(w_bytes * sets), o(o_bytes * sets);
  fill_uniform(a.get(), DType::kBFloat16, std::size_t(m) * k * sets, -1, 1, 1);
  fill_uniform(w.get(), DType::kBFloat16, std::size_t(n) * k * sets, -1, 1, 2);
  return median_ms([&](int i) {
    const int s = i % sets;
    gemm.run(a.as<char>() + s * a_bytes, w.as<char>() + s * w_bytes, o.as<char>() + s * o_bytes, nullptr);
  });
}

const Ceilings& ceilings() {
  static const Ceilings c = [] {
    Ceilings r;
    const std::size_t bytes = std::size_t{1} << 31;  // 2 GiB each way
    DeviceBuffer src(bytes), dst(bytes);
    fill_uniform(src.get(), DType::kUInt8, bytes, 0, 1, 3);
    const double copy_ms = median_ms([&](int) {
      FASTINFER_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, nullptr));
    }, 2, 10);
    r.copy_tbps = 2.0 * bytes / (copy_ms * 1e-3) / 1e12;
    const int n = 8192;
    r.bf16_tflops = 2.0 * n * n * double(n) / (cublas_bf16_gemm_ms(n, n, n) * 1e-3) / 1e12;
    return r;
  }();
  return c;
}

nlohmann::json environment_json() {
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  const DeviceInfo& info = device_info(device);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  const char* commit = std::getenv("FASTINFER_COMMIT");
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const Ceilings& c = ceilings();
  return {{"gpu", info.name},          {"sm_count", info.sm_count},   {"l2_bytes", info.l2_cache_bytes},
          {"cuda_runtime", runtime},   {"cuda_driver", driver},       {"commit", commit ? commit : "unknown"},
          {"date", date},              {"copy_tbps", c.copy_tbps},    {"bf16_tflops", c.bf16_tflops}};
}

}  // namespace fastinfer::bench
