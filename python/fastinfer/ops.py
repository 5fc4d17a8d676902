"""The ops, with FlashInfer's names and argument conventions.

Arrays are torch tensors (CUDA or CPU) or numpy arrays (CPU). CUDA arrays run the sm_90a kernels
on `stream` (an int handle or a torch.cuda.Stream; default: torch's current stream on the arrays'
device, looked up by the extension); CPU arrays run the exact CPU reference backend. Outputs that
are not given are allocated with the inputs' library and device. These wrappers do as little as
possible per call (host cost, docs/BENCHMARKS.md): argument checks and conversions live in C++.
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


def chunk_gated_delta_rule(q, k, v, g=None, beta=None, scale=None, initial_state=None,
                           output_final_state=False, cu_seqlens=None, use_qk_l2norm_in_kernel=False,
                           output=None, output_state=None, state_indices=None,
                           checkpoint_every_n_tokens=0, state_checkpoints=None,
                           checkpoint_cu_starts=None, use_cp=None, max_seqlen=0, stream=None):
    """GDN prefill over packed sequences (FlashInfer's chunk_gated_delta_rule).

    q [T, Hq, 128], k [T, Hk, 128], v [T, Hv, 128]; g (the linear forget gate alpha) and beta
    [T, Hsab] float32; cu_seqlens [N + 1] int32/int64. Returns output [T, Hsab, 128], and with
    output_final_state=True also the final state [N, Hsab, 128, 128] float32 (or `output_state`).
    Unlike FlashInfer, use_qk_l2norm_in_kernel really normalises q and k. use_cp picks the
    context-parallel pipeline: None = automatic, True = always, False = never; max_seqlen (the
    longest sequence, known on the host) sizes its chunks (0 = unknown: the total token count).
    """
    if cu_seqlens is None:
        raise ValueError("chunk_gated_delta_rule: cu_seqlens must be given (packed varlen input)")
    if output is None:
        output = _empty(q, (q.shape[0], max(q.shape[1], v.shape[1]), _HEAD_DIM))
    if output_final_state and output_state is None:
        n = cu_seqlens.shape[0] - 1 if state_indices is None else initial_state.shape[0]
        output_state = _empty(q, (n, max(q.shape[1], v.shape[1]), _HEAD_DIM, _HEAD_DIM), _dtype(q, "float32"))
    _C.gdn_prefill(q, k, v, cu_seqlens, output, g, beta, 0.0 if scale is None else float(scale),
                   bool(use_qk_l2norm_in_kernel), initial_state, output_state, state_indices,
                   int(checkpoint_every_n_tokens), state_checkpoints, checkpoint_cu_starts, stream,
                   use_cp, int(max_seqlen))
    return (output, output_state) if output_final_state else output


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


def gated_delta_rule_decode(q, k, v, state, A_log, a, dt_bias, b, scale=None, output=None,
                            use_qk_l2norm=True, initial_state_indices=None, output_state_indices=None,
                            intermediate_states=None, disable_state_update=False, stream=None):
    """GDN decode / MTP verify against a state pool (FlashInfer's gated_delta_rule_decode*).

    q, k [B, T, H, 128], v [B, T, HV, 128]; state pool [P, HV, 128, 128] float32 or bfloat16;
    initial_state_indices [B] int32 (default: arange(B)); -1 marks a padded slot. Returns output
    [B, T, HV, 128].
    """
    if output is None:
        output = _empty(q, (q.shape[0], q.shape[1], v.shape[2], _HEAD_DIM))
    if initial_state_indices is None:
        initial_state_indices = _arange_int32(q, q.shape[0])
    _C.gdn_decode(q, k, v, A_log, a, dt_bias, b, state, initial_state_indices, output_state_indices, output,
                  intermediate_states, 0.0 if scale is None else float(scale), bool(use_qk_l2norm),
                  bool(disable_state_update), stream)
    return output


def gated_delta_rule_mtp(q, k, v, state, A_log, a, dt_bias, b, scale=None, output=None, use_qk_l2norm=True,
                         initial_state_indices=None, output_state_indices=None, intermediate_states=None,
                         disable_state_update=False, stream=None):
    """Multi-token verification: gated_delta_rule_decode with T > 1 draft tokens per sequence."""
    return gated_delta_rule_decode(q, k, v, state, A_log, a, dt_bias, b, scale, output, use_qk_l2norm,
                                   initial_state_indices, output_state_indices, intermediate_states,
                                   disable_state_update, stream)


def _arange_int32(like, n):
    if _is_torch(like):
        import torch
        return torch.arange(n, dtype=torch.int32, device=like.device)
    import numpy as np
    return np.arange(n, dtype=np.int32)


def nvfp4_quantize(w, global_scale, swizzled=True, packed=None, scales=None, stream=None):
    """NVFP4 quantization (FlashInfer's nvfp4 format): returns (packed [N, K/2] uint8, e4m3 scales)."""
    n, kdim = w.shape
    if packed is None:
        packed = _empty(w, (n, kdim // 2), _dtype(w, "uint8"))
    if scales is None:
        scales = _empty(w, (_C.nvfp4_scale_bytes(n, kdim, bool(swizzled)),), _dtype(w, "uint8"))
    _C.nvfp4_quantize(w, float(global_scale), packed, scales, bool(swizzled), stream)
    return packed, scales


def nvfp4_dequantize(packed, scales, global_scale, swizzled=True, out=None, dtype=None, stream=None):
    """out [N, K] = e2m1(q) * float(sf) / global_scale."""
    n, half_k = packed.shape
    if out is None:
        out = _empty(packed, (n, 2 * half_k), dtype or _dtype(packed, "float32"))
    _C.nvfp4_dequantize(packed, scales, bool(swizzled), float(global_scale), out, stream)
    return out


def prepare_bf16_fp4_weights(b, b_descale, alpha, swizzled=True, stream=None):
    """One-time repack of NVFP4 weights b [N, K/2] uint8 with e4m3 scales for mm_bf16_fp4."""
    return _C.prepare_bf16_fp4_weights(b, b_descale, bool(swizzled), float(alpha), stream)


def mm_bf16_fp4(a, weights, out=None, out_dtype=None, enable_pdl=False, stream=None):
    """out [M, N] = alpha * (a [M, K] bf16 @ dequant(W)^T), W prepared by prepare_bf16_fp4_weights."""
    if out is None:
        out = _empty(a, (a.shape[0], weights.n), out_dtype or a.dtype)
    _C.mm_bf16_fp4(a, weights, out, bool(enable_pdl), stream)
    return out
