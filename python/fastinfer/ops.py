"""The ops, with FlashInfer's names and argument conventions.

Arrays are torch tensors (CUDA or CPU) or numpy arrays (CPU). CUDA arrays run the sm_90a kernels
on `stream` (an int handle or a torch.cuda.Stream; default: torch's current stream on the arrays'
device, looked up by the extension); CPU arrays run the exact CPU reference backend. Outputs that
are not given are allocated with the inputs' library and device. Every op but the distributed
prefill is the extension's own function (host cost, docs/BENCHMARKS.md): argument checks,
conversions and output shapes live in C++, which calls the allocation helpers here.
"""
from __future__ import annotations

from . import _C

_HEAD_DIM = 128


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _empty(like, shape, dtype=None):
    """An uninitialised array of `shape` with the library and device of `like`."""
    if _is_torch(like):
        import torch
        return torch.empty(shape, dtype=dtype or like.dtype, device=like.device)
    import numpy as np
    return np.empty(shape, dtype=dtype or like.dtype)


def _dtype(like, name):
    """The dtype called `name` ("float32", "uint8", ...) in the library of `like`."""
    if _is_torch(like):
        import torch
        return getattr(torch, name)
    import numpy as np
    return np.dtype(name)


# GDN prefill and decode are the extension's own functions (python/src/prefill_bindings.cpp,
# decode_bindings.cpp; same signatures and docstrings as FlashInfer's): with 16-19 keyword
# arguments, a Python wrapper in front cost ~1.3 us per call. Outputs they allocate come from
# _empty / _arange_int32 below.
chunk_gated_delta_rule = _C.chunk_gated_delta_rule
gated_delta_rule_decode = _C.gated_delta_rule_decode
gated_delta_rule_mtp = _C.gated_delta_rule_mtp


def chunk_gated_delta_rule_distributed(q, k, v, nccl_comm, g=None, beta=None, scale=None, initial_state=None,
                                       output_final_state=False, cu_seqlens=None, use_qk_l2norm_in_kernel=False,
                                       output=None, output_state=None, state_indices=None, max_slice_len=0,
                                       stream=None):
    """GDN prefill of sequences sliced across the ranks of an NCCL communicator (a collective).

    nccl_comm is the raw ncclComm_t handle (an int) of a communicator the caller owns. On each
    rank, cu_seqlens [N + 1] delimits this rank's slice of each of the N sequences (empty slices
    allowed); initial_state only on rank 0; output_final_state gives the state after this rank's
    slice of each sequence. docs/GDN_DISTRIBUTED.md has the design.
    """
    if cu_seqlens is None:
        raise ValueError("chunk_gated_delta_rule_distributed: cu_seqlens must be given (packed varlen input)")
    hsab = max(q.shape[1], v.shape[1])
    if output is None:
        output = _empty(q, (q.shape[0], hsab, _HEAD_DIM))
    if output_final_state and output_state is None:
        output_state = _empty(q, (cu_seqlens.shape[0] - 1, hsab, _HEAD_DIM, _HEAD_DIM), _dtype(q, "float32"))
    _C.gdn_prefill_distributed(q, k, v, cu_seqlens, output, g, beta, 0.0 if scale is None else float(scale),
                               bool(use_qk_l2norm_in_kernel), initial_state, output_state, state_indices,
                               int(nccl_comm), int(max_slice_len), stream)
    return (output, output_state) if output_final_state else output


def _arange_int32(like, n):
    if _is_torch(like):
        import torch
        return torch.arange(n, dtype=torch.int32, device=like.device)
    import numpy as np
    return np.arange(n, dtype=np.int32)


# The NVFP4 ops are extension functions too (python/src/gemm_bindings.cpp), for the same reason.
nvfp4_quantize = _C.nvfp4_quantize
nvfp4_dequantize = _C.nvfp4_dequantize
prepare_bf16_fp4_weights = _C.prepare_bf16_fp4_weights
mm_bf16_fp4 = _C.mm_bf16_fp4
