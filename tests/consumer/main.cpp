// Links against the installed library through find_package(fastinfer).
#include <cstdio>

#include "fastinfer/fastinfer.h"

int main() {
  float x[4] = {1, 2, 3, 4};
  fastinfer::TensorView v = fastinfer::TensorView::contiguous(x, fastinfer::DType::kFloat32, {2, 2});
  std::printf("consumer: fastinfer %s, %lld elements, %d CUDA devices\n", fastinfer::version(),
              static_cast<long long>(v.numel()), fastinfer::cuda_device_count());
  return v.numel() == 4 ? 0 : 1;
}
