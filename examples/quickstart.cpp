// The README's C++ example: GDN prefill over two packed sequences (5 and 3 tokens), 4 heads.
// Host buffers run the CPU reference; views of CUDA memory (Device::cuda(i)) run the sm_90a kernel.
#include <cstdio>
#include <vector>

#include "fastinfer/fastinfer.h"

int main() {
  using namespace fastinfer;
  constexpr std::int64_t T = 8, N = 2, H = 4, D = gdn::kHeadDim;
  std::vector<std::uint16_t> q(T * H * D, 0x3c00), k(q), v(q), out(T * H * D);  // float16 1.0
  std::vector<std::int32_t> cu_seqlens{0, 5, 8};
  std::vector<float> final_state(N * H * D * D);

  gdn::PrefillArgs args;
  args.q = TensorView::contiguous(q.data(), DType::kFloat16, {T, H, D});
  args.k = TensorView::contiguous(k.data(), DType::kFloat16, {T, H, D});
  args.v = TensorView::contiguous(v.data(), DType::kFloat16, {T, H, D});
  args.cu_seqlens = TensorView::contiguous(cu_seqlens.data(), DType::kInt32, {N + 1});
  args.output = TensorView::contiguous(out.data(), DType::kFloat16, {T, H, D});
  args.output_state = TensorView::contiguous(final_state.data(), DType::kFloat32, {N, H, D, D});
  args.use_qk_l2norm = true;
  gdn::prefill(args);  // on CUDA tensors: gdn::prefill(args, stream), asynchronous

  std::printf("quickstart: final state[0, 0, 0, 0] = %.4f (1/sqrt(128) = 0.0884)\n", final_state[0]);
}
