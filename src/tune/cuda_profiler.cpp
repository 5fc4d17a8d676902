// The CUDA side of the tuner: timing with CUDA events (optionally of a CUDA graph), the capture
// guard, device metadata and the process-wide tuner.
#include <cuda_runtime.h>

#include <limits>

#include "fastinfer/build_info.h"
#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "fastinfer/tune.h"
#include "fastinfer/version.h"
#include "runtime/cuda_check.h"

namespace fastinfer::tune {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Events and graphs the measurement owns, released on every exit path.
struct Resources {
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaStream_t capture_stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Resources() {
    if (capture_stream) {
      cudaStreamCaptureStatus status{};
      if (cudaStreamIsCapturing(capture_stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
        cudaGraph_t abandoned = nullptr;
        cudaStreamEndCapture(capture_stream, &abandoned);
        if (abandoned) cudaGraphDestroy(abandoned);
      }
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (capture_stream) cudaStreamDestroy(capture_stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

class CudaProfiler final : public Profiler {
 public:
  void check_not_capturing(Stream stream) override {
    cudaStreamCaptureStatus status{};
    const cudaError_t err = cudaStreamIsCapturing(stream, &status);
    if (err != cudaSuccess) cudaGetLastError();
    // The legacy stream answers "implicit" while another stream captures in global mode.
    const bool capture_error = err == cudaErrorStreamCaptureImplicit || err == cudaErrorStreamCaptureUnsupported;
    if (err != cudaSuccess && !capture_error) throw_cuda_error(err, "cudaStreamIsCapturing", __FILE__, __LINE__);
    if (capture_error || status != cudaStreamCaptureStatusNone) {
      throw Error(Error::Kind::kRuntime,
                  "tune: cannot profile while a CUDA graph is being captured; tune before capture (run the op once "
                  "in tune mode, or load a cache file) and capture afterwards");
    }
  }

  double measure(const TunableRunner& runner, const Problem& problem, int tactic, Stream stream,
                 const ProfileOptions& options) override {
    const int sets = options.cold_l2 ? std::max(1, runner.input_sets()) : 1;
    int call_index = 0;
    auto call = [&](cudaStream_t s) {
      runner.run(Problem{problem.m, (problem.input_set + call_index++) % sets}, tactic, s);
    };
    Resources r;
    try {
      FASTINFER_CUDA_CHECK(cudaEventCreate(&r.start));
      FASTINFER_CUDA_CHECK(cudaEventCreate(&r.stop));
      for (int i = 0; i < options.warmup; ++i) call(stream);
      FASTINFER_CUDA_CHECK(cudaGetLastError());
      FASTINFER_CUDA_CHECK(cudaStreamSynchronize(stream));  // a failing tactic shows up here
      double ms = 0;
      if (options.cuda_graph) {
        // A private stream: the legacy default stream cannot be captured.
        FASTINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&r.capture_stream, cudaStreamNonBlocking));
        FASTINFER_CUDA_CHECK(cudaStreamBeginCapture(r.capture_stream, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < options.repeat; ++i) call(r.capture_stream);
        FASTINFER_CUDA_CHECK(cudaStreamEndCapture(r.capture_stream, &r.graph));
        FASTINFER_CUDA_CHECK(cudaGraphInstantiate(&r.exec, r.graph, 0));
        FASTINFER_CUDA_CHECK(cudaGraphLaunch(r.exec, r.capture_stream));  // upload + warm
        FASTINFER_CUDA_CHECK(cudaEventRecord(r.start, r.capture_stream));
        FASTINFER_CUDA_CHECK(cudaGraphLaunch(r.exec, r.capture_stream));
        FASTINFER_CUDA_CHECK(cudaEventRecord(r.stop, r.capture_stream));
      } else {
        FASTINFER_CUDA_CHECK(cudaEventRecord(r.start, stream));
        for (int i = 0; i < options.repeat; ++i) call(stream);
        FASTINFER_CUDA_CHECK(cudaGetLastError());
        FASTINFER_CUDA_CHECK(cudaEventRecord(r.stop, stream));
      }
      FASTINFER_CUDA_CHECK(cudaEventSynchronize(r.stop));
      float elapsed = 0;
      FASTINFER_CUDA_CHECK(cudaEventElapsedTime(&elapsed, r.start, r.stop));
      ms = static_cast<double>(elapsed) / options.repeat;
      return ms;
    } catch (const std::exception&) {
      cudaGetLastError();  // clear a non-sticky error so the next tactic starts clean
      return kInf;
    }
  }
};

Metadata process_metadata() {
  if (cuda_device_count() == 0) return {"", "", build::kCudaVersion, version()};  // unknown GPU: no mismatch
  int device = 0;
  FASTINFER_CUDA_CHECK(cudaGetDevice(&device));
  return Metadata::of_device(device);
}

}  // namespace

std::unique_ptr<Profiler> make_cuda_profiler() { return std::make_unique<CudaProfiler>(); }

Metadata Metadata::of_device(int device) {
  const DeviceInfo& info = device_info(device);
  return {info.name, std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor), build::kCudaVersion,
          version()};
}

Tuner& Tuner::global() {
  static Tuner tuner(make_cuda_profiler(), process_metadata);
  return tuner;
}

}  // namespace fastinfer::tune
