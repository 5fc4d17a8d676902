#pragma once
// CUTLASS 3.x sm90a bf16 GEMM (TMA + wgmma, warp-specialised, persistent) for the dequant_gemm
// tactic: out[M,N] = alpha * a[M,K] @ w[N,K]^T. Both operands are K-major in smem; the epilogue
// scales the fp32 accumulators and stores through TMA (no C operand is read).
//
// Launched directly with cudaLaunchKernelEx rather than through GemmUniversalAdapter: the adapter
// sets function attributes on every launch; here that happens once per device.
// PDL: CUTLASS's griddepcontrol.wait (which orders the GEMM after the decode pass when both are
// launched with programmatic stream serialization) compiles to nothing unless this is defined.
#ifndef CUTLASS_ENABLE_GDC_FOR_SM90
#define CUTLASS_ENABLE_GDC_FOR_SM90 1
#endif

#include <cuda_runtime.h>

#include <array>
#include <mutex>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "gemm/large_m/bf16_gemm_sm90.h"
#include "runtime/cuda_check.h"

namespace fastinfer::gemm::detail {

template <class TileShape, class ClusterShape, class MainloopSchedule, class EpilogueSchedule, class ElementOut>
struct Bf16GemmSm90 {
  using ElementIn = cutlass::bfloat16_t;
  static constexpr int kAlignIn = 8;   // 16 bytes: the TMA minimum
  static constexpr int kAlignOut = 8;  // 16 bytes of bf16/fp16

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, cutlass::layout::RowMajor, kAlignOut,  // no C operand
      ElementOut, cutlass::layout::RowMajor, kAlignOut, EpilogueSchedule,
      cutlass::epilogue::fusion::LinearCombination<ElementOut, float, void, float>>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementIn, cutlass::layout::RowMajor, kAlignIn,     // a: [M, K], K contiguous
      ElementIn, cutlass::layout::ColumnMajor, kAlignIn,  // w: [N, K], K contiguous
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, cutlass::gemm::PersistentScheduler>;

  // sm_count sizes the persistent grid; 0 is fine where only shapes matter (can_implement and
  // workspace_bytes of the non-stream-K scheduler query no device).
  static typename Kernel::Arguments make_arguments(const Bf16GemmArgs& g, int sm_count) {
    using StrideA = typename CollectiveMainloop::StrideA;
    using StrideB = typename CollectiveMainloop::StrideB;
    using StrideC = typename CollectiveEpilogue::StrideC;
    using StrideD = typename CollectiveEpilogue::StrideD;
    const StrideA stride_a = cute::make_stride(int64_t(g.lda), cute::Int<1>{}, int64_t(g.lda) * g.m);
    const StrideB stride_b = cute::make_stride(int64_t(g.ldw), cute::Int<1>{}, int64_t(g.ldw) * g.n);
    const StrideD stride_d = cute::make_stride(int64_t(g.ldo), cute::Int<1>{}, int64_t(g.ldo) * g.m);

    typename Kernel::Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {g.m, g.n, g.k, 1};
    args.mainloop.ptr_A = static_cast<const ElementIn*>(g.a);
    args.mainloop.dA = stride_a;
    args.mainloop.ptr_B = static_cast<const ElementIn*>(g.w);
    args.mainloop.dB = stride_b;
    args.epilogue.thread.alpha = g.alpha;
    args.epilogue.thread.beta = 0.0f;
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = StrideC{};
    args.epilogue.ptr_D = static_cast<ElementOut*>(g.out);
    args.epilogue.dD = stride_d;
    args.hw_info.device_id = g.device;
    args.hw_info.sm_count = sm_count;
    return args;
  }

  static std::size_t workspace_bytes(const Bf16GemmArgs& g) { return Kernel::get_workspace_size(make_arguments(g, 0)); }

  static bool can_implement(const Bf16GemmArgs& g) { return Kernel::can_implement(make_arguments(g, 0)); }

  // Function attributes are per device; set them the first time a device launches this kernel.
  static void prepare_device(int device) {
    static std::array<std::once_flag, 64> once;
    if (device < 0 || device >= static_cast<int>(once.size()))
      throw Error(Error::Kind::kValue, "mm_bf16_fp4: device ordinal out of range for the large-M GEMM");
    std::call_once(once[device], [] {
      const void* kernel = reinterpret_cast<const void*>(cutlass::device_kernel<Kernel>);
      FASTINFER_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Kernel::SharedStorageSize));
    });
  }

  static void run(const Bf16GemmArgs& g, void* workspace, Stream stream) {
    const typename Kernel::Arguments args = make_arguments(g, device_info(g.device).sm_count);
    if (Kernel::initialize_workspace(args, workspace, stream, nullptr) != cutlass::Status::kSuccess)
      throw Error(Error::Kind::kRuntime, "mm_bf16_fp4: large-M GEMM workspace initialisation failed");
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, workspace);
    prepare_device(g.device);

    cudaLaunchAttribute attrs[2];
    attrs[0].id = cudaLaunchAttributeClusterDimension;
    attrs[0].val.clusterDim.x = cute::size<0>(ClusterShape{});
    attrs[0].val.clusterDim.y = cute::size<1>(ClusterShape{});
    attrs[0].val.clusterDim.z = 1;
    attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[1].val.programmaticStreamSerializationAllowed = 1;

    cudaLaunchConfig_t config{};
    config.gridDim = Kernel::get_grid_shape(params);
    config.blockDim = Kernel::get_block_shape();
    config.dynamicSmemBytes = Kernel::SharedStorageSize;
    config.stream = stream;
    config.attrs = attrs;
    config.numAttrs = g.enable_pdl ? 2 : 1;
    void* kernel_args[] = {&params};
    FASTINFER_CUDA_CHECK(
        cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(cutlass::device_kernel<Kernel>), kernel_args));
  }

  static const Bf16GemmKernel& entry() {
    static const Bf16GemmKernel kernel{&workspace_bytes, &can_implement, &run};
    return kernel;
  }
};

// The schedules each tile enum stands for.
template <Bf16GemmTile Tile, class ElementOut>
struct Bf16GemmSm90For;

template <class ElementOut>
struct Bf16GemmSm90For<Bf16GemmTile::kCoop128x256x64Cluster2x1, ElementOut>
    : Bf16GemmSm90<cute::Shape<cute::_128, cute::_256, cute::_64>, cute::Shape<cute::_2, cute::_1, cute::_1>,
                   cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                   cutlass::epilogue::TmaWarpSpecializedCooperative, ElementOut> {};

template <class ElementOut>
struct Bf16GemmSm90For<Bf16GemmTile::kCoop128x128x64Cluster1x2, ElementOut>
    : Bf16GemmSm90<cute::Shape<cute::_128, cute::_128, cute::_64>, cute::Shape<cute::_1, cute::_2, cute::_1>,
                   cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                   cutlass::epilogue::TmaWarpSpecializedCooperative, ElementOut> {};

template <class ElementOut>
struct Bf16GemmSm90For<Bf16GemmTile::kPingpong64x256x64Cluster1x1, ElementOut>
    : Bf16GemmSm90<cute::Shape<cute::_64, cute::_256, cute::_64>, cute::Shape<cute::_1, cute::_1, cute::_1>,
                   cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized,
                   ElementOut> {};

template <Bf16GemmTile Tile, bool OutFp16>
const Bf16GemmKernel& bf16_gemm_sm90() {
  using ElementOut = std::conditional_t<OutFp16, cutlass::half_t, cutlass::bfloat16_t>;
  return Bf16GemmSm90For<Tile, ElementOut>::entry();
}

}  // namespace fastinfer::gemm::detail
