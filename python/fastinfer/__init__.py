"""fastinfer: GDN prefill/decode and bf16 x NVFP4 GEMM kernels for NVIDIA Hopper.

Tensors are exchanged through DLPack without copies (torch on CUDA, numpy or torch on the CPU).
CPU tensors run the exact CPU reference backend; CUDA tensors run the sm_90a kernels.
Errors raise ValueError / TypeError / RuntimeError with the C++ message.
"""
from . import _C

__version__ = _C.version()

cuda_device_count = _C.cuda_device_count
devices = _C.devices
tensor_info = _C.tensor_info
reserve_workspace = _C.reserve_workspace
release_all_workspaces = _C.release_all_workspaces
nvfp4_global_scale_for = _C.nvfp4_global_scale_for

__all__ = [
    "__version__",
    "cuda_device_count",
    "devices",
    "tensor_info",
    "reserve_workspace",
    "release_all_workspaces",
]

autotune = _C.autotune
current_bucket = _C.current_bucket
__all__ += ["autotune", "current_bucket"]

built_with_nccl = _C.built_with_nccl
__all__ += ["built_with_nccl"]

from .ops import (chunk_gated_delta_rule, chunk_gated_delta_rule_distributed, gated_delta_rule_decode, gated_delta_rule_mtp, mm_bf16_fp4,
                  nvfp4_dequantize, nvfp4_quantize, prepare_bf16_fp4_weights)

__all__ += ["chunk_gated_delta_rule", "chunk_gated_delta_rule_distributed", "gated_delta_rule_decode", "gated_delta_rule_mtp", "mm_bf16_fp4",
            "nvfp4_dequantize", "nvfp4_quantize", "prepare_bf16_fp4_weights"]
